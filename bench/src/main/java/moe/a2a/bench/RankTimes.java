package moe.a2a.bench;

/**
 * One rank's measured iterations, each after a barrier: dispatch and combine wall times; then the
 * wall times of empty barrier rounds on the same communicator (the floor of any step's overhead);
 * whether the validated iteration was right; and the expert stage's times, empty without one
 * ({@link ExpertStage}).
 */
public record RankTimes(
        long[] dispatchNs, long[] combineNs, long[] barrierNs, boolean ok, long[] expertNs) {

    /** Times of a run without an expert stage. */
    public RankTimes(long[] dispatchNs, long[] combineNs, long[] barrierNs, boolean ok) {
        this(dispatchNs, combineNs, barrierNs, ok, new long[0]);
    }

    /** Times {@code rounds} consecutive empty barriers on {@code comm}. */
    static long[] barriers(moe.a2a.comm.Communicator comm, int rounds) {
        return barriers(comm::barrier, rounds);
    }

    /** Times {@code rounds} consecutive empty rounds of {@code barrier}. */
    static long[] barriers(Runnable barrier, int rounds) {
        long[] ns = new long[rounds];
        barrier.run();
        for (int i = 0; i < rounds; i++) {
            long t0 = System.nanoTime();
            barrier.run();
            ns[i] = System.nanoTime() - t0;
        }
        return ns;
    }
}
