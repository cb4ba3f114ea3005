package moe.a2a.bench;

/**
 * One rank's measured iterations, each after a barrier: dispatch and combine wall times, and
 * whether the validated iteration was right.
 */
public record RankTimes(long[] dispatchNs, long[] combineNs, boolean ok) {}
