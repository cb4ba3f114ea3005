/** Expert FFNs, their weights (seeded or from safetensors), and the runtime of one rank. */
@NullMarked
package moe.a2a.experts;

import org.jspecify.annotations.NullMarked;
