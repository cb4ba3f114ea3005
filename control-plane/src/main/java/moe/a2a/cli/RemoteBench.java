package moe.a2a.cli;

import io.grpc.ManagedChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;
import moe.a2a.bench.BenchScope;
import moe.a2a.v1.BenchEvent;
import moe.a2a.v1.BenchRequest;
import moe.a2a.v1.BenchResult;
import moe.a2a.v1.BenchServiceGrpc;

/** {@code bench --target}: drives BenchService on a live server and prints what it streams. */
final class RemoteBench {
    private RemoteBench() {}

    static int run(
            ChannelOptions connection,
            String target,
            String workload,
            BenchScope scope,
            int iters,
            int warmup,
            Path json)
            throws Exception {
        ManagedChannel channel = connection.open(target);
        try {
            BenchRequest.Builder request =
                    BenchRequest.newBuilder()
                            .setIters(iters)
                            .setWarmup(warmup)
                            .setScope(scope.name().toLowerCase(Locale.ROOT));
            if (!workload.equals("all")) {
                request.addWorkloads(workload);
            }
            List<String> reports = new ArrayList<>();
            boolean ok = true;
            Iterator<BenchEvent> events =
                    BenchServiceGrpc.newBlockingStub(channel).run(request.build());
            while (events.hasNext()) {
                BenchEvent event = events.next();
                if (event.hasProgress()) {
                    System.out.printf(
                            Locale.ROOT,
                            "[%d/%d] running %s on %s%n",
                            event.getProgress().getIndex(),
                            event.getProgress().getTotal(),
                            event.getProgress().getWorkload(),
                            target);
                    continue;
                }
                BenchResult r = event.getResult();
                if (!r.getRan()) {
                    System.out.printf(
                            Locale.ROOT, "  %-18s skipped: %s%n", r.getWorkload(), r.getReason());
                    continue;
                }
                ok &= r.getOk();
                reports.add(r.getJson());
                System.out.printf(
                        Locale.ROOT,
                        "  %-18s %-5s %s total p50 %.0f us, p90 %.0f us %s%n",
                        r.getWorkload(),
                        r.getTransport(),
                        r.getFingerprint(),
                        r.getTotalUsP50(),
                        r.getTotalUsP90(),
                        r.getOk() ? "ok" : "FAIL");
            }
            if (json != null) {
                Files.writeString(json, "[\n" + String.join(",\n", reports) + "\n]\n");
            }
            return ok ? 0 : 1;
        } finally {
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }
}
