package moe.a2a.bench;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/** This machine's limits, measured in the same run as the benchmark they bound. */
public final class MachineLimits {
    private MachineLimits() {}

    /**
     * memcpy bandwidth in GB/s (1e9 B/s): {@code threads} threads each copying its own off-heap
     * buffer of {@code bytes} into another, best of {@code rounds}.
     */
    public static double memcpyGbps(int threads, int rounds, int bytes) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<ByteBuffer[]> buffers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                ByteBuffer src = ByteBuffer.allocateDirect(bytes);
                for (int b = 0; b < bytes; b += 4096) {
                    src.put(b, (byte) b);
                }
                buffers.add(new ByteBuffer[] {src, ByteBuffer.allocateDirect(bytes)});
            }
            double best = 0;
            for (int r = 0; r < rounds; r++) {
                List<Future<?>> copies = new ArrayList<>();
                long t0 = System.nanoTime();
                for (ByteBuffer[] pair : buffers) {
                    copies.add(pool.submit(() -> pair[1].put(0, pair[0], 0, bytes)));
                }
                for (Future<?> f : copies) {
                    f.get();
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                best = Math.max(best, (double) bytes * threads / seconds / 1e9);
            }
            return best;
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * One thread's memcpy bandwidth in GB/s at {@code bytes} per copy, off-heap to off-heap: the
     * copy repeated until at least 64 MiB (and 8 copies) moved, best of 3 such rounds. The
     * in-process link of a collective of that size.
     */
    public static double copyGbps(int bytes) {
        ByteBuffer src = ByteBuffer.allocateDirect(Math.max(1, bytes));
        ByteBuffer dst = ByteBuffer.allocateDirect(Math.max(1, bytes));
        for (int b = 0; b < bytes; b += 4096) {
            src.put(b, (byte) b);
        }
        dst.put(0, src, 0, bytes); // first touch outside the timing
        long reps = Math.max(8, (64L << 20) / Math.max(1, bytes));
        double best = 0;
        for (int round = 0; round < 3; round++) {
            long t0 = System.nanoTime();
            for (long i = 0; i < reps; i++) {
                dst.put(0, src, 0, bytes);
            }
            double seconds = Math.max(1, System.nanoTime() - t0) / 1e9;
            best = Math.max(best, (double) bytes * reps / seconds / 1e9);
        }
        return best;
    }

    /**
     * Loopback TCP throughput in GB/s of one plain socket pair moving {@code bytes} between
     * off-heap buffers (as iperf3 does, one stream).
     */
    public static double loopbackTcpGbps(long bytes) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<Long> reader =
                        pool.submit(
                                () -> {
                                    try (SocketChannel in = server.accept()) {
                                        ByteBuffer buf = ByteBuffer.allocateDirect(4 << 20);
                                        long total = 0;
                                        for (int n; (n = in.read(buf.clear())) > 0; ) {
                                            total += n;
                                        }
                                        return total;
                                    }
                                });
                long t0 = System.nanoTime();
                try (SocketChannel out = SocketChannel.open(server.getLocalAddress())) {
                    ByteBuffer buf = ByteBuffer.allocateDirect(4 << 20);
                    for (long sent = 0; sent < bytes; ) {
                        sent += out.write(buf.clear());
                    }
                }
                long received = reader.get();
                double seconds = (System.nanoTime() - t0) / 1e9;
                return received / seconds / 1e9;
            } finally {
                pool.shutdownNow();
            }
        } catch (IOException e) {
            throw new IOException("loopback throughput: " + e.getMessage(), e);
        }
    }
}
