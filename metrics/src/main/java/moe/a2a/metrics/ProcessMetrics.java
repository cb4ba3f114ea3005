package moe.a2a.metrics;

import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;
import io.netty.buffer.ByteBufAllocator;
import io.netty.buffer.ByteBufAllocatorMetric;
import io.netty.buffer.ByteBufAllocatorMetricProvider;
import java.time.Duration;
import java.util.List;
import java.util.function.ToDoubleFunction;

/**
 * The meters every moe-a2a process has besides its own: JVM memory (direct buffers included), GC,
 * threads, open file descriptors and CPU, the memory of Netty's default allocator (the TCP data
 * plane's buffers), and histograms for the gRPC server's latency so Prometheus can compute its
 * quantiles. Names and tags are adjusted so that {@code promtool check metrics} finds nothing to
 * report.
 */
public final class ProcessMetrics {
    /** The timer of Micrometer's gRPC server binder. */
    static final String GRPC_SERVER_LATENCY = "grpc.server.processing.duration";

    static final String NETTY_MEMORY = "netty.allocator.memory.used";

    static final String A2A_PREFIX = "moe.a2a";

    /** Most distinct values of one moe-a2a tag (experts, ranks, peers, layers). */
    static final int MAX_TAG_VALUES = 4096;

    private static final List<String> BOUNDED_TAGS = List.of("expert", "rank", "peer", "layer");

    private ProcessMetrics() {}

    /** Binds all of them; call before any gRPC server records into {@code registry}. */
    public static void bindTo(MeterRegistry registry) {
        registry.config()
                .meterFilter(MeterFilter.renameTag("grpc.server", "methodType", "method_type"))
                .meterFilter(MeterFilter.renameTag("grpc.server", "statusCode", "status_code"))
                .meterFilter(MeterFilter.denyNameStartsWith("process.cpu.time"))
                .meterFilter(MeterFilter.denyNameStartsWith("system.cpu.count"))
                .meterFilter(
                        new MeterFilter() {
                            @Override
                            public DistributionStatisticConfig configure(
                                    Meter.Id id, DistributionStatisticConfig config) {
                                if (!id.getName().equals(GRPC_SERVER_LATENCY)) {
                                    return config;
                                }
                                return DistributionStatisticConfig.builder()
                                        .percentilesHistogram(true)
                                        .minimumExpectedValue(
                                                (double) Duration.ofNanos(10_000).toNanos())
                                        .maximumExpectedValue(
                                                (double) Duration.ofSeconds(30).toNanos())
                                        .build()
                                        .merge(config);
                            }
                        });
        // Label values are bounded by the model and the world size; these caps keep a bug (or a
        // gigantic model) from flooding Prometheus with series.
        for (String tag : BOUNDED_TAGS) {
            registry.config()
                    .meterFilter(
                            MeterFilter.maximumAllowableTags(
                                    A2A_PREFIX, tag, MAX_TAG_VALUES, MeterFilter.deny()));
        }
        new JvmMemoryMetrics().bindTo(registry);
        new JvmGcMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        if (ByteBufAllocator.DEFAULT instanceof ByteBufAllocatorMetricProvider allocator) {
            ByteBufAllocatorMetric metric = allocator.metric();
            nettyMemory(registry, "direct", metric, ByteBufAllocatorMetric::usedDirectMemory);
            nettyMemory(registry, "heap", metric, ByteBufAllocatorMetric::usedHeapMemory);
        }
    }

    private static void nettyMemory(
            MeterRegistry registry,
            String type,
            ByteBufAllocatorMetric metric,
            ToDoubleFunction<ByteBufAllocatorMetric> used) {
        Gauge.builder(NETTY_MEMORY, metric, used)
                .baseUnit("bytes")
                .description("Memory held by Netty's default buffer allocator")
                .tag("memory.type", type)
                .register(registry);
    }
}
