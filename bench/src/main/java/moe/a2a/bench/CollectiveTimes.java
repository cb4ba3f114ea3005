package moe.a2a.bench;

/**
 * One rank's run of a collective: the wall time of each measured iteration (each after a barrier),
 * and how many elements of its checked results were wrong (the first and the last iteration are
 * checked against the closed form of the inputs).
 */
public record CollectiveTimes(long[] ns, long wrong) {}
