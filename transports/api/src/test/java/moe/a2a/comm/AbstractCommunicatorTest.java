package moe.a2a.comm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The contract every {@link Communicator} transport must meet. Subclasses supply groups. */
@Timeout(60)
public abstract class AbstractCommunicatorTest {

    /** A fresh group of {@code size} ranks whose collectives time out after {@code timeoutNs}. */
    protected abstract Communicator[] newGroup(int size, long timeoutNs) throws Exception;

    /** Whether a timeout names the missing peer (a transport that cannot tell overrides this). */
    protected boolean namesMissingPeer() {
        return true;
    }

    /** Whether one rank's abort reaches the others with its cause before their deadline. */
    protected boolean propagatesAbort() {
        return true;
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 4, 8})
    void shouldDeliverEverySegmentWhenCountsAreRandom(int n) throws Exception {
        Communicator[] group = newGroup(n, TimeUnit.SECONDS.toNanos(20));
        long seed = 1000 + n;
        // bytes[src][dst], zero included, the same matrix on every rank
        SplittableRandom random = new SplittableRandom(seed);
        long[][] bytes = new long[n][n];
        for (int s = 0; s < n; s++) {
            for (int d = 0; d < n; d++) {
                bytes[s][d] = random.nextInt(4) == 0 ? 0 : random.nextInt(1, 5000);
            }
        }
        List<Boolean> ok =
                RankThreads.run(
                        n,
                        rank -> {
                            Communicator comm = group[rank];
                            for (int round = 0; round < 3; round++) {
                                long[] send = new long[n];
                                long[] recv = new long[n];
                                long total = 0;
                                for (int d = 0; d < n; d++) {
                                    send[d] = bytes[rank][d] + round;
                                    total += send[d];
                                }
                                comm.allToAllCounts(round, ExchangePhase.DISPATCH, send, recv);
                                long recvTotal = 0;
                                for (int s = 0; s < n; s++) {
                                    assertThat(recv[s])
                                            .as("seed=%d rank=%d src=%d", seed, rank, s)
                                            .isEqualTo(bytes[s][rank] + round);
                                    recvTotal += recv[s];
                                }
                                ByteBuffer sendBuf = direct(total);
                                long at = 0;
                                for (int d = 0; d < n; d++) {
                                    for (long i = 0; i < send[d]; i++) {
                                        sendBuf.put((int) (at + i), pattern(rank, d, i, round));
                                    }
                                    at += send[d];
                                }
                                ByteBuffer recvBuf = direct(recvTotal);
                                comm.allToAllV(
                                        round,
                                        ExchangePhase.DISPATCH,
                                        sendBuf,
                                        send,
                                        recvBuf,
                                        recv);
                                at = 0;
                                for (int s = 0; s < n; s++) {
                                    for (long i = 0; i < recv[s]; i++) {
                                        if (recvBuf.get((int) (at + i))
                                                != pattern(s, rank, i, round)) {
                                            throw new AssertionError(
                                                    "seed=" + seed + " rank=" + rank + " src=" + s
                                                            + " byte=" + i + " round=" + round);
                                        }
                                    }
                                    at += recv[s];
                                }
                            }
                            return true;
                        });
        assertThat(ok).hasSize(n).containsOnly(true);
        close(group);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 4})
    void shouldDeliverSegmentsWhenSenderWritesThemOnDemand(int n) throws Exception {
        Communicator[] group = newGroup(n, TimeUnit.SECONDS.toNanos(20));
        List<Boolean> ok =
                RankThreads.run(
                        n,
                        rank -> {
                            long[] send = new long[n];
                            long[] recv = new long[n];
                            for (int p = 0; p < n; p++) {
                                send[p] = 100L * (rank + 1) + 7L * p; // bytes for peer p
                                recv[p] = 100L * (p + 1) + 7L * rank;
                            }
                            long total = 0;
                            for (long c : recv) {
                                total += c;
                            }
                            ByteBuffer recvBuf = direct(total);
                            SegmentWriter writer =
                                    (peer, dst, at) -> {
                                        for (int i = 0; i < send[peer]; i++) {
                                            dst.put(at + i, pattern(rank, peer, i, 9));
                                        }
                                    };
                            for (int round = 0; round < 2; round++) {
                                group[rank].allToAllV(
                                        round, ExchangePhase.COMBINE, writer, send, recvBuf, recv);
                                long at = 0;
                                for (int src = 0; src < n; src++) {
                                    for (int i = 0; i < recv[src]; i++) {
                                        if (recvBuf.get((int) (at + i))
                                                != pattern(src, rank, i, 9)) {
                                            throw new AssertionError(
                                                    "rank=" + rank + " src=" + src + " byte=" + i
                                                            + " round=" + round);
                                        }
                                    }
                                    at += recv[src];
                                }
                            }
                            return true;
                        });
        assertThat(ok).containsOnly(true);
        close(group);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 4})
    void shouldLeaveSegmentsWhereTheyLandedWhenTransportReceivesInPlace(int n) throws Exception {
        Communicator[] group = newGroup(n, TimeUnit.SECONDS.toNanos(20));
        if (!group[0].receivesInPlace()) {
            long[] none = new long[n];
            assertThatThrownBy(
                            () ->
                                    group[0].allToAllVInPlace(
                                            0,
                                            ExchangePhase.DISPATCH,
                                            (peer, dst, at) -> {},
                                            none,
                                            none))
                    .isInstanceOf(UnsupportedOperationException.class);
            close(group);
            return;
        }
        List<Boolean> ok =
                RankThreads.run(
                        n,
                        rank -> {
                            Communicator comm = group[rank];
                            // the last round is large enough to make a receive region grow
                            for (int round = 0; round < 3; round++) {
                                final int scale = round == 2 ? 3000 : round + 1;
                                final int r = round;
                                long[] send = new long[n];
                                long[] recv = new long[n];
                                for (int p = 0; p < n; p++) {
                                    send[p] = (37L * (rank + 1) + 11L * p) * scale;
                                    recv[p] = (37L * (p + 1) + 11L * rank) * scale;
                                }
                                SegmentWriter writer =
                                        (peer, dst, at) -> {
                                            for (int i = 0; i < send[peer]; i++) {
                                                dst.put(at + i, pattern(rank, peer, i, r));
                                            }
                                        };
                                ByteBuffer rows =
                                        comm.allToAllVInPlace(
                                                round, ExchangePhase.DISPATCH, writer, send, recv);
                                assertThat(rows.order()).isEqualTo(ByteOrder.LITTLE_ENDIAN);
                                long at = 0;
                                for (int src = 0; src < n; src++) {
                                    for (int i = 0; i < recv[src]; i++) {
                                        if (rows.get((int) (at + i)) != pattern(src, rank, i, r)) {
                                            throw new AssertionError(
                                                    "rank=" + rank + " src=" + src + " byte=" + i
                                                            + " round=" + round);
                                        }
                                    }
                                    at += recv[src];
                                }
                                // a plain exchange after it reuses the receive memory
                                ByteBuffer back = direct(at);
                                comm.allToAllV(
                                        round, ExchangePhase.COMBINE, writer, send, back, recv);
                                at = 0;
                                for (int src = 0; src < n; src++) {
                                    for (int i = 0; i < recv[src]; i++) {
                                        if (back.get((int) (at + i)) != pattern(src, rank, i, r)) {
                                            throw new AssertionError(
                                                    "after: rank="
                                                            + rank
                                                            + " src="
                                                            + src
                                                            + " byte="
                                                            + i
                                                            + " round="
                                                            + round);
                                        }
                                    }
                                    at += recv[src];
                                }
                            }
                            return true;
                        });
        assertThat(ok).containsOnly(true);
        close(group);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 3, 4})
    void shouldHandReaderEverySegmentWhereItLies(int n) throws Exception {
        Communicator[] group = newGroup(n, TimeUnit.SECONDS.toNanos(20));
        List<Boolean> ok =
                RankThreads.run(
                        n,
                        rank -> {
                            long[] send = new long[n];
                            long[] recv = new long[n];
                            long total = 0;
                            for (int p = 0; p < n; p++) {
                                send[p] = 50L * (rank + 1) + 3L * p;
                                recv[p] = 50L * (p + 1) + 3L * rank;
                                total += send[p];
                            }
                            ByteBuffer sendBuf = direct(total);
                            for (int round = 0; round < 2; round++) {
                                long at = 0;
                                for (int p = 0; p < n; p++) {
                                    for (int i = 0; i < send[p]; i++) {
                                        sendBuf.put((int) (at + i), pattern(rank, p, i, round));
                                    }
                                    at += send[p];
                                }
                                final int r = round;
                                boolean[] seen = new boolean[1];
                                group[rank].allToAllV(
                                        round,
                                        ExchangePhase.COMBINE,
                                        sendBuf,
                                        send,
                                        (segments, offsets) -> {
                                            for (int src = 0; src < n; src++) {
                                                for (int i = 0; i < recv[src]; i++) {
                                                    if (segments[src].get((int) (offsets[src] + i))
                                                            != pattern(src, rank, i, r)) {
                                                        throw new AssertionError(
                                                                "rank=" + rank + " src=" + src
                                                                        + " byte=" + i + " round="
                                                                        + r);
                                                    }
                                                }
                                            }
                                            seen[0] = true;
                                        },
                                        recv);
                                assertThat(seen[0]).isTrue();
                            }
                            return true;
                        });
        assertThat(ok).containsOnly(true);
        close(group);
    }

    @Test
    void shouldNameMissingRankWhenPeerNeverJoins() throws Exception {
        Communicator[] group = newGroup(3, TimeUnit.MILLISECONDS.toNanos(300));
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            CountDownLatch started = new CountDownLatch(2);
            Future<?> r0 =
                    pool.submit(
                            () -> {
                                started.countDown();
                                group[0].barrier();
                            });
            Future<?> r1 =
                    pool.submit(
                            () -> {
                                started.countDown();
                                group[1].barrier();
                            });
            started.await();
            // rank 2 never calls barrier: ranks 0 and 1 must fail, one of them naming rank 2
            Throwable f0 = failureOf(r0);
            Throwable f1 = failureOf(r1);
            assertThat(List.of(f0, f1)).allMatch(f -> f instanceof A2aException);
            if (namesMissingPeer()) {
                assertThat(List.of(f0, f1))
                        .anyMatch(f -> f instanceof ExchangeTimeoutException t && t.peer() == 2);
                assertThat(f0.getMessage() + f1.getMessage()).contains("peer=2");
            } else {
                assertThat(List.of(f0, f1))
                        .allMatch(
                                f ->
                                        f instanceof ExchangeTimeoutException t
                                                && t.peer()
                                                        == ExchangeTimeoutException.UNKNOWN_PEER);
            }
        } finally {
            pool.shutdownNow();
            close(group);
        }
    }

    @Test
    void shouldFailEveryRankWhenOneAborts() throws Exception {
        assumeTrue(propagatesAbort(), "this transport's abort is local to the rank");
        Communicator[] group = newGroup(2, TimeUnit.SECONDS.toNanos(30));
        ExecutorService pool = Executors.newSingleThreadExecutor();
        try {
            Future<?> waiting = pool.submit(() -> group[0].barrier());
            group[1].abort(new A2aException("test abort: rank=1"));
            assertThat(failureOf(waiting))
                    .isInstanceOf(A2aException.class)
                    .hasMessageContaining("test abort");
            assertThatThrownBy(group[1]::barrier).isInstanceOf(A2aException.class);
        } finally {
            pool.shutdownNow();
            close(group);
        }
    }

    @Test
    void shouldRejectCountsOfWrongLength() throws Exception {
        Communicator[] group = newGroup(2, TimeUnit.SECONDS.toNanos(5));
        assertThatThrownBy(
                        () ->
                                group[0].allToAllCounts(
                                        0, ExchangePhase.DISPATCH, new long[3], new long[2]))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("sendCounts.length: 3 (expected: 2)");
        close(group);
    }

    private static Throwable failureOf(Future<?> future) throws Exception {
        try {
            future.get(20, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            return e.getCause();
        }
        throw new AssertionError("expected a failure");
    }

    private static byte pattern(int src, int dst, long index, int round) {
        return (byte) (src * 31 + dst * 17 + index * 7 + round);
    }

    private static ByteBuffer direct(long bytes) {
        return ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
    }

    private static void close(Communicator[] group) {
        for (Communicator c : group) {
            c.close();
        }
    }
}
