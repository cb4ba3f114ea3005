/**
 * The worker process: its session with the control plane ({@link moe.a2a.worker.WorkerAgent}), the
 * rank it was given and what it loaded for it, its steps, and the data-plane SPI ({@link
 * moe.a2a.comm.DataPlane}) with the TCP, shared-memory and NCCL planes. Imports the protocol codecs
 * and the metrics, never the coordinator.
 */
@NullMarked
package moe.a2a.worker;

import org.jspecify.annotations.NullMarked;
