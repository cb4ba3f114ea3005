package moe.a2a.dispatch;

/**
 * A step's predicted time on a {@link HardwareProfile}, from the exact counts of its routing
 * ({@link RoutingCost}): dispatch and combine are each the slowest rank's, whose rows in and out,
 * inside its node and between nodes, move over separate links at once; experts are the slowest
 * rank's pairs times a SwiGLU expert's FLOPs ({@code 6 × hidden × ffn} a pair). Peak bandwidth and
 * FLOP/s, no latency, no overlap between stages: a model, not a measurement. Immutable.
 */
public record StepPrediction(double dispatchUs, double expertUs, double combineUs) {

    /**
     * @param dispatchRowBytes bytes of a row sent in dispatch
     * @param combineRowBytes bytes of a row returned in combine
     * @throws IllegalArgumentException when the routing spans more than one node and the profile
     *     has no links between nodes
     */
    public static StepPrediction of(
            RoutingCost cost,
            HardwareProfile hardware,
            int hidden,
            int ffn,
            int dispatchRowBytes,
            int combineRowBytes) {
        final int n = cost.worldSize();
        if (hardware.interNodeGBps() == 0 && n > hardware.ranksPerNode()) {
            throw new IllegalArgumentException(
                    "hardware: "
                            + hardware.name()
                            + " has one node of "
                            + hardware.ranksPerNode()
                            + " ranks (expected: a profile with links between nodes for "
                            + n
                            + " ranks)");
        }
        double dispatch = 0;
        double combine = 0;
        long busiest = 0;
        for (int r = 0; r < n; r++) {
            final long[] rowsIn = new long[2];
            final long[] rowsOut = new long[2];
            for (int peer = 0; peer < n; peer++) {
                if (peer != r) {
                    final int link = hardware.node(peer) == hardware.node(r) ? 0 : 1;
                    rowsIn[link] += cost.rows(peer, r);
                    rowsOut[link] += cost.rows(r, peer);
                }
            }
            dispatch = Math.max(dispatch, linkUs(hardware, rowsIn, rowsOut, dispatchRowBytes));
            // combine returns each row the way it came
            combine = Math.max(combine, linkUs(hardware, rowsOut, rowsIn, combineRowBytes));
            busiest = Math.max(busiest, cost.pairs(r));
        }
        final double expert = busiest * 6.0 * hidden * ffn / (hardware.expertTflops() * 1e12) * 1e6;
        return new StepPrediction(dispatch, expert, combine);
    }

    /** The slowest of a rank's four transfers (in and out, inside and between nodes), in µs. */
    private static double linkUs(HardwareProfile hw, long[] in, long[] out, int rowBytes) {
        double us = 0;
        final double[] gbps = {hw.intraNodeGBps(), hw.interNodeGBps()};
        for (int link = 0; link < 2; link++) {
            final long rows = Math.max(in[link], out[link]);
            if (rows > 0) {
                us = Math.max(us, rows * (double) rowBytes / (gbps[link] * 1e9) * 1e6);
            }
        }
        return us;
    }

    public double totalUs() {
        return dispatchUs + expertUs + combineUs;
    }
}
