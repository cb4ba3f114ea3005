package moe.a2a.bench;

/** What a benchmark times. */
public enum BenchScope {
    /** The communicator alone: counts and rows out, rows back; packing and reduction untimed. */
    TRANSPORT,
    /** The real dispatcher: layout, pack, exchanges, grouping, and the fp32 sum at the source. */
    DISPATCHER
}
