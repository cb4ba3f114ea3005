package moe.a2a.comm;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.SplittableRandom;
import moe.a2a.comm.local.LocalGroup;
import org.junit.jupiter.api.Test;

/** Three of five world ranks exchange through a group of their own, with world rank numbers. */
class SparseCommunicatorTest {
    private static final int WORLD = 5;
    private static final int[] MEMBERS = {0, 2, 3};

    @Test
    void shouldDeliverEverySegmentByWorldRankOnEveryVariant() throws Exception {
        for (long seed = 0; seed < 20; seed++) {
            SplittableRandom random = new SplittableRandom(seed);
            long[][] len = new long[WORLD][WORLD];
            for (int s : MEMBERS) {
                for (int d : MEMBERS) {
                    len[s][d] = random.nextInt(3) == 0 ? 0 : random.nextInt(1, 40);
                }
            }
            LocalGroup group = new LocalGroup(MEMBERS.length);
            List<String> failures =
                    RankThreads.run(
                            MEMBERS.length,
                            i -> {
                                Communicator comm =
                                        new SparseCommunicator(
                                                group.communicator(i), MEMBERS, WORLD);
                                return exchange(comm, len);
                            });
            for (String f : failures) {
                assertThat(f).as("seed=" + seed).isEmpty();
            }
        }
    }

    @Test
    void shouldNameTheRankLeftOutWhenACountGoesToIt() {
        Communicator comm =
                new SparseCommunicator(new LocalGroup(1).communicator(0), new int[] {3}, 4);
        assertThatThrownBy(
                        () ->
                                comm.allToAllCounts(
                                        0,
                                        ExchangePhase.DISPATCH,
                                        new long[] {0, 7, 0, 1},
                                        new long[4]))
                .isInstanceOf(A2aException.class)
                .hasMessage(
                        "sendCounts[1]: 7 (expected: 0; rank 1 is not in the group of ranks [3])");
    }

    /** Runs counts and the three all-to-all-v variants; returns what went wrong, or "". */
    private static String exchange(Communicator comm, long[][] len) {
        int me = comm.rank();
        long[] send = new long[WORLD];
        long[] recv = new long[WORLD];
        for (int d = 0; d < WORLD; d++) {
            send[d] = len[me][d];
        }
        comm.allToAllCounts(1, ExchangePhase.DISPATCH, send, recv);
        for (int s = 0; s < WORLD; s++) {
            if (recv[s] != len[s][me]) {
                return "rank " + me + " counted " + recv[s] + " from " + s;
            }
        }
        ByteBuffer out = ByteBuffer.allocate((int) sum(send));
        long at = 0;
        for (int d = 0; d < WORLD; d++) {
            for (int b = 0; b < send[d]; b++) {
                out.put((int) at++, pattern(me, d));
            }
        }
        ByteBuffer in = ByteBuffer.allocate((int) sum(recv));
        comm.allToAllV(2, ExchangePhase.DISPATCH, out, send, in, recv);
        String plain = check("plain", me, in, recv);
        ByteBuffer written = ByteBuffer.allocate((int) sum(recv));
        comm.allToAllV(
                3,
                ExchangePhase.DISPATCH,
                (peer, dst, offset) -> {
                    for (int b = 0; b < send[peer]; b++) {
                        dst.put(offset + b, pattern(me, peer));
                    }
                },
                send,
                written,
                recv);
        String viaWriter = check("writer", me, written, recv);
        ByteBuffer gathered = ByteBuffer.allocate((int) sum(recv));
        comm.allToAllV(
                4,
                ExchangePhase.COMBINE,
                out,
                send,
                (segments, offsets) -> {
                    long to = 0;
                    for (int s = 0; s < WORLD; s++) {
                        for (int b = 0; b < recv[s]; b++) {
                            gathered.put((int) to++, segments[s].get((int) offsets[s] + b));
                        }
                    }
                },
                recv);
        String viaReader = check("reader", me, gathered, recv);
        comm.barrier();
        return plain + viaWriter + viaReader;
    }

    private static String check(String variant, int me, ByteBuffer in, long[] recv) {
        long at = 0;
        for (int s = 0; s < WORLD; s++) {
            for (int b = 0; b < recv[s]; b++) {
                if (in.get((int) at++) != pattern(s, me)) {
                    return variant + ": rank " + me + " got a wrong byte from " + s + "; ";
                }
            }
        }
        return "";
    }

    private static byte pattern(int src, int dst) {
        return (byte) (src * 16 + dst);
    }

    private static long sum(long[] v) {
        long s = 0;
        for (long x : v) {
            s += x;
        }
        return s;
    }
}
