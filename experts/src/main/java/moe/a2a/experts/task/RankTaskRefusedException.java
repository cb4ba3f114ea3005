package moe.a2a.experts.task;

import moe.a2a.comm.A2aException;

/**
 * A {@link RankTaskHandler} cannot run its task on this group (or no handler runs the kind), and
 * said so before any exchange: the rank answers the error and its communicators stay usable.
 */
public final class RankTaskRefusedException extends A2aException {
    private static final long serialVersionUID = 1L;

    public RankTaskRefusedException(String message) {
        super(message);
    }
}
