package moe.a2a.bench;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/** This machine's limits, measured in the same run as the benchmark they bound. */
public final class MachineLimits {
    private MachineLimits() {}

    /**
     * memcpy bandwidth in GB/s (1e9 B/s): {@code threads} threads each copying its own 256 MiB
     * off-heap buffer into another, best of {@code rounds}.
     */
    public static double memcpyGbps(int threads, int rounds) throws Exception {
        final int bytes = 256 << 20;
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

    /** Loopback TCP throughput in GB/s of one plain socket pair moving {@code bytes}. */
    public static double loopbackTcpGbps(long bytes) throws Exception {
        try (ServerSocket server = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            ExecutorService pool = Executors.newSingleThreadExecutor();
            try {
                Future<Long> reader = pool.submit(() -> {
                    try (Socket s = server.accept(); InputStream in = s.getInputStream()) {
                        byte[] buf = new byte[1 << 20];
                        long total = 0;
                        for (int n; (n = in.read(buf)) > 0; ) {
                            total += n;
                        }
                        return total;
                    }
                });
                long t0 = System.nanoTime();
                try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.getLocalPort());
                        OutputStream out = s.getOutputStream()) {
                    byte[] buf = new byte[1 << 20];
                    for (long sent = 0; sent < bytes; sent += buf.length) {
                        out.write(buf);
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
