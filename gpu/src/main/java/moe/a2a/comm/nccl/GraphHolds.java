package moe.a2a.comm.nccl;

import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;
import moe.a2a.comm.A2aException;
import org.jspecify.annotations.Nullable;

/**
 * The CUDA graphs that captured one communicator's calls, as its abort and destroy must see them:
 * NCCL 2.26+ waits in both ({@code commDestroySync}) until no such graph is left, a capture still
 * open included. So a graph's owner registers how to drop its graphs; NCCL goes ahead only once
 * they are dropped, on the owner's thread (a graph must not be destroyed while its owner may launch
 * it) and with no capture open; and no capture starts once NCCL's abort or destroy has begun.
 */
final class GraphHolds {
    private final List<Runnable> drops = new ArrayList<>();
    private @Nullable Thread owner;
    private int capturing;
    private boolean freeing;

    /** Registers {@code drop}, which destroys the graphs the calling thread captures. */
    synchronized void hold(Runnable drop) {
        if (freeing) {
            throw new A2aException("the nccl communicator is being aborted or freed: no capture");
        }
        owner = Thread.currentThread();
        drops.add(drop);
    }

    /** Forgets {@code drop}: its graphs are gone for good. */
    synchronized void release(Runnable drop) {
        drops.remove(drop);
    }

    /**
     * A capture of the communicator's calls opens ({@code open}) or ends, on the owner's thread.
     */
    synchronized void capturing(boolean open) {
        capturing += open ? 1 : -1;
    }

    /**
     * {@code query}'s answer about the communicator's stream, asked with no capture open and none
     * starting meanwhile (querying a stream under capture invalidates the capture); false, without
     * asking, while one is open.
     */
    synchronized boolean unlessCapturing(BooleanSupplier query) {
        return capturing == 0 && query.getAsBoolean();
    }

    /**
     * Makes way for NCCL's abort or destroy: drops the graphs when this is their owner's thread and
     * no capture is open. Returns whether NCCL may go ahead; from then on no capture starts.
     */
    boolean clear() {
        List<Runnable> run;
        synchronized (this) {
            if (capturing > 0 || (!drops.isEmpty() && Thread.currentThread() != owner)) {
                return false;
            }
            freeing = true;
            run = List.copyOf(drops);
        }
        // outside the lock: dropping graphs is CUDA calls, and release() may come meanwhile
        run.forEach(Runnable::run);
        return true;
    }
}
