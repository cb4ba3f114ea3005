/** The embedded group of ranks and the step scheduler that batches client requests into steps. */
package moe.a2a.control.cluster;
