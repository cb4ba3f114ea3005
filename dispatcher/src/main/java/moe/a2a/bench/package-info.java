/**
 * The canonical benchmark workloads: their routing, fingerprints and payload, as every peer harness
 * defines them.
 */
@NullMarked
package moe.a2a.bench;

import org.jspecify.annotations.NullMarked;
