package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaGetDevice;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Per device, turns between a CUDA graph capture and work on other threads that may synchronize the
 * whole device: {@code cudaFree} does so implicitly, and a device synchronized while one of its
 * streams is being captured invalidates that capture, whatever the capture's mode. The frees of a
 * placement staging dropped on the loader's thread, and those of one that failed there, take their
 * turn like a capture does; the staging's uploads do not wait (steps, captures included, go on
 * meanwhile).
 */
final class CaptureTurns {
    private static final ConcurrentHashMap<Integer, ReentrantLock> BY_DEVICE =
            new ConcurrentHashMap<>();

    private CaptureTurns() {}

    /** {@code device}'s turn. */
    static ReentrantLock of(int device) {
        return BY_DEVICE.computeIfAbsent(device, d -> new ReentrantLock());
    }

    /**
     * Runs {@code frees} in the turn of the calling thread's current device when {@code
     * offTheRanksThread} (a staging's frees on the loader's thread), else at once.
     */
    static void free(boolean offTheRanksThread, Runnable frees) {
        if (!offTheRanksThread) {
            frees.run();
            return;
        }
        ReentrantLock turn = current();
        turn.lock();
        try {
            frees.run();
        } finally {
            turn.unlock();
        }
    }

    /** The calling thread's current device's turn. */
    static ReentrantLock current() {
        int[] device = new int[1];
        CudaCheck.check(cudaGetDevice(device), "cudaGetDevice");
        return of(device[0]);
    }
}
