package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaGraphDestroy;
import static org.bytedeco.cuda.global.cudart.cudaGraphExecDestroy;
import static org.bytedeco.cuda.global.cudart.cudaGraphInstantiate;
import static org.bytedeco.cuda.global.cudart.cudaGraphLaunch;
import static org.bytedeco.cuda.global.cudart.cudaStreamBeginCapture;
import static org.bytedeco.cuda.global.cudart.cudaStreamCaptureModeThreadLocal;
import static org.bytedeco.cuda.global.cudart.cudaStreamEndCapture;

import java.util.concurrent.locks.ReentrantLock;
import org.bytedeco.cuda.cudart.CUgraphExec_st;
import org.bytedeco.cuda.cudart.CUgraph_st;
import org.bytedeco.cuda.cudart.CUstream_st;

/**
 * A CUDA graph captured from what one call enqueues on a stream, launched again as one unit. The
 * capture is thread-local, as NCCL asks when each rank of a process has its own thread: other
 * ranks' threads may go on with their own work meanwhile, except what may synchronize the device,
 * which waits its turn ({@link CaptureTurns}). What the capture holds must not allocate (every
 * buffer sized beforehand) nor wait on the stream. Owned by one thread.
 */
final class CudaGraph implements AutoCloseable {
    private final CUgraphExec_st exec;

    private CudaGraph(CUgraphExec_st exec) {
        this.exec = exec;
    }

    /** Captures what {@code enqueue} puts on {@code stream} (nothing runs) and instantiates it. */
    static CudaGraph capture(CUstream_st stream, Runnable enqueue) {
        ReentrantLock turn = CaptureTurns.current();
        turn.lock();
        try {
            return captureInTurn(stream, enqueue);
        } finally {
            turn.unlock();
        }
    }

    private static CudaGraph captureInTurn(CUstream_st stream, Runnable enqueue) {
        CudaCheck.check(
                cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal),
                "cudaStreamBeginCapture");
        CUgraph_st graph = new CUgraph_st();
        try {
            enqueue.run();
        } catch (RuntimeException e) {
            // end the capture so the stream is usable again; the partial graph is dropped
            cudaStreamEndCapture(stream, graph);
            if (!graph.isNull()) {
                cudaGraphDestroy(graph);
            }
            throw e;
        }
        CudaCheck.check(cudaStreamEndCapture(stream, graph), "cudaStreamEndCapture");
        try {
            CUgraphExec_st exec = new CUgraphExec_st();
            CudaCheck.check(cudaGraphInstantiate(exec, graph, 0L), "cudaGraphInstantiate");
            return new CudaGraph(exec);
        } finally {
            cudaGraphDestroy(graph);
        }
    }

    /** Enqueues the whole graph on {@code stream}. */
    void launch(CUstream_st stream) {
        CudaCheck.check(cudaGraphLaunch(exec, stream), "cudaGraphLaunch");
    }

    @Override
    public void close() {
        cudaGraphExecDestroy(exec);
    }
}
