package moe.a2a.comm;

/**
 * Which part of a step an exchange belongs to; carried with the exchange so both sides can check
 * it.
 */
public enum ExchangePhase {
    /** Counts and rows from the tokens' home ranks to the experts' ranks. */
    DISPATCH,
    /** Rows from the experts' ranks back to the tokens' home ranks. */
    COMBINE,
    /** A barrier between steps. */
    BARRIER,
    /** A collective or point-to-point exchange outside the MoE step's dispatch and combine. */
    COLLECTIVE
}
