package moe.a2a.experts.task;

/**
 * A task for every rank of the serving group: the {@link RankTaskHandler} of {@code kind} runs it
 * on each rank with the same {@code payload}, whose encoding only that handler and its caller know.
 * The payload is shared, not copied: neither side changes it.
 */
public record RankTask(String kind, byte[] payload) {}
