package moe.a2a.bench;

import com.google.gson.Gson;
import com.google.gson.JsonObject;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import moe.a2a.comm.Transport;
import moe.a2a.comm.TransportReach;
import moe.a2a.comm.Transports;

/**
 * One collective case's figures as nccl-tests reports them: time is the median over the measured
 * iterations of the slowest rank's time; algbw = bytes / time; busbw = algbw × the collective's bus
 * factor; wrong = wrong elements over every rank's checked results. Next to them the link's
 * measured limit (memcpy in process, a loopback socket pair over TCP) and busbw's share of it.
 */
public record CollectiveReport(
        CollectiveCase c, Transport transport, double timeUsP50, long wrong, double linkGbps) {
    private static final Gson GSON = new Gson();

    /** The report of every rank's {@link CollectiveTimes} of one case. */
    public static CollectiveReport of(
            CollectiveCase c, Transport transport, List<CollectiveTimes> ranks, double linkGbps) {
        long wrong = 0;
        long[][] ns = new long[ranks.size()][];
        for (int r = 0; r < ranks.size(); r++) {
            ns[r] = ranks.get(r).ns();
            wrong += ranks.get(r).wrong();
        }
        return new CollectiveReport(c, transport, medianOfMaxUs(ns), wrong, linkGbps);
    }

    /**
     * Per iteration the slowest rank's time, then the median over iterations (of an even count, the
     * mean of the middle two), in microseconds.
     */
    public static double medianOfMaxUs(long[][] rankNs) {
        int iters = rankNs[0].length;
        long[] max = new long[iters];
        for (long[] ns : rankNs) {
            if (ns.length != iters) {
                throw new IllegalArgumentException(
                        "ranks timed " + iters + " and " + ns.length + " iterations");
            }
            for (int i = 0; i < iters; i++) {
                max[i] = Math.max(max[i], ns[i]);
            }
        }
        Arrays.sort(max);
        double mid = iters % 2 == 1 ? max[iters / 2] : (max[iters / 2 - 1] + max[iters / 2]) / 2.0;
        return mid / 1e3;
    }

    /**
     * The algorithm that ran: {@link CollectiveCase#algoLabel()} on the CPU transports, the
     * transport's name on a device transport, which picks its own (NCCL: {@code NCCL_ALGO} steers
     * it).
     */
    public String algoLabel() {
        return Transports.reach(transport) == TransportReach.DEVICES
                ? transport.label()
                : c.algoLabel();
    }

    /** Algorithm bandwidth, GB/s (1e9 B/s): the size over the time. */
    public double algbwGbps() {
        return algbw(c.bytes(), timeUsP50);
    }

    /** Bus bandwidth, GB/s: algbw × the bus factor. */
    public double busbwGbps() {
        return algbwGbps() * c.collective().busFactor(c.ranks());
    }

    /** busbw over the link's measured limit. */
    public double busUtilisation() {
        return linkGbps > 0 ? busbwGbps() / linkGbps : Double.NaN;
    }

    /** {@code bytes} in {@code timeUs} microseconds, in GB/s. */
    public static double algbw(long bytes, double timeUs) {
        return timeUs > 0 ? bytes / timeUs / 1e3 : 0;
    }

    /**
     * The JSON row: collective, transport, ranks, bytes, dtype, algo, time_us_p50, algbw_gbs,
     * busbw_gbs, wrong; then count, redop, root, link_gbs and bus_utilisation when the link was
     * measured and, when not NaN, the scaling efficiency (busbw over the 2-rank run's at the same
     * per-rank work).
     */
    public String json(double scalingEfficiency) {
        JsonObject o = new JsonObject();
        o.addProperty("collective", c.collective().label());
        o.addProperty("transport", transport.label());
        o.addProperty("ranks", c.ranks());
        o.addProperty("bytes", c.bytes());
        o.addProperty("dtype", c.dtype().name().toLowerCase(Locale.ROOT));
        o.addProperty("algo", algoLabel());
        o.addProperty("time_us_p50", round3(timeUsP50));
        o.addProperty("algbw_gbs", round3(algbwGbps()));
        o.addProperty("busbw_gbs", round3(busbwGbps()));
        o.addProperty("wrong", wrong);
        o.addProperty("count", c.count());
        o.addProperty("redop", c.redop());
        o.addProperty("root", c.rootColumn());
        if (linkGbps > 0) {
            o.addProperty("link_gbs", round3(linkGbps));
        }
        if (!Double.isNaN(busUtilisation())) {
            o.addProperty("bus_utilisation", round3(busUtilisation()));
        }
        if (!Double.isNaN(scalingEfficiency)) {
            o.addProperty("scaling_efficiency", round3(scalingEfficiency));
        }
        return GSON.toJson(o);
    }

    private static double round3(double v) {
        return Math.round(v * 1000) / 1000.0;
    }
}
