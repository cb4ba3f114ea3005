/** Expert FFNs, their weights (seeded or from safetensors), and the runtime of one rank. */
package moe.a2a.experts;
