/** Micrometer meters of the data plane and the Prometheus scrape endpoint. */
@NullMarked
package moe.a2a.control.metrics;

import org.jspecify.annotations.NullMarked;
