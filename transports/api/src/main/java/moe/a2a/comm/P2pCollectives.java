package moe.a2a.comm;

import static moe.a2a.comm.CollectiveArgs.checkCapacity;
import static moe.a2a.comm.CollectiveArgs.checkCount;
import static moe.a2a.comm.CollectiveArgs.checkNonNegative;
import static moe.a2a.comm.CollectiveArgs.checkRank;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import moe.a2a.kernels.DType;
import moe.a2a.kernels.ReduceOp;

/**
 * The collectives of the CPU transports, over {@link Communicator#sendRecv}: ring and tree
 * all-reduce ({@link CollectiveAlgo}), ring all-gather and reduce-scatter, chain and binomial-tree
 * broadcast. Received blocks are reduced where they lie ({@link InboundSink}): in-process, straight
 * out of the peer's buffer. Every rank reduces a given pair of blocks in the same order, so every
 * rank ends with the same bits. Stateless, but a rank's scratch buffer is kept on its thread.
 */
final class P2pCollectives {
    /** Each rank thread's scratch for received blocks of a tree all-reduce and reduce-scatter. */
    private static final ThreadLocal<ByteBuffer> SCRATCH =
            ThreadLocal.withInitial(() -> ByteBuffer.allocateDirect(0));

    /** Blocks a chain broadcast is cut into, so every link of the chain moves at once. */
    private static final int CHAIN_BLOCK_BYTES = 1 << 20;

    private P2pCollectives() {}

    private static InboundSink reduceInto(ByteBuffer dst, int offset, DType dtype, ReduceOp op) {
        return (src, o, b) ->
                dtype.reduce(op, segment(src), o, segment(dst), offset, b / dtype.sizeBytes());
    }

    static void allReduce(
            Communicator comm,
            ByteBuffer send,
            ByteBuffer recv,
            int count,
            DType dtype,
            ReduceOp op,
            CollectiveAlgo algo) {
        final int bytes = checkCount("count", count, dtype);
        checkCapacity("send", send, bytes);
        checkCapacity("recv", recv, bytes);
        if (send != recv) {
            recv.put(0, send, 0, bytes);
        }
        final int n = comm.size();
        if (n == 1) {
            return;
        }
        if (algo.resolve(bytes, n) == CollectiveAlgo.TREE) {
            recursiveDoubling(comm, recv, count, dtype, op);
        } else {
            Blocks blocks = Blocks.split(count, n, dtype.sizeBytes());
            ringReduceScatter(comm, recv, blocks, dtype, op, 1);
            ringAllGather(comm, recv, blocks, 1);
        }
    }

    static void allGather(Communicator comm, ByteBuffer send, ByteBuffer recv, int bytesPerRank) {
        checkNonNegative("bytesPerRank", bytesPerRank);
        final int n = comm.size();
        checkCapacity("send", send, bytesPerRank);
        checkCapacity("recv", recv, (long) n * bytesPerRank);
        recv.put(comm.rank() * bytesPerRank, send, 0, bytesPerRank);
        ringAllGather(comm, recv, Blocks.equal(n, bytesPerRank), 0);
    }

    static void reduceScatter(
            Communicator comm,
            ByteBuffer send,
            ByteBuffer recv,
            int countPerRank,
            DType dtype,
            ReduceOp op) {
        final int blockBytes = checkCount("countPerRank", countPerRank, dtype);
        final int n = comm.size();
        final long total = (long) n * blockBytes;
        checkCapacity("send", send, total);
        checkCapacity("recv", recv, blockBytes);
        ByteBuffer work = scratch(total);
        work.put(0, send, 0, (int) total);
        ringReduceScatter(comm, work, Blocks.equal(n, blockBytes), dtype, op, 0);
        recv.put(0, work, comm.rank() * blockBytes, blockBytes);
    }

    static void broadcast(
            Communicator comm, ByteBuffer buf, int bytes, int root, CollectiveAlgo algo) {
        checkNonNegative("bytes", bytes);
        final int n = comm.size();
        checkRank("root", root, n);
        checkCapacity("buf", buf, bytes);
        if (n == 1) {
            return;
        }
        if (algo.resolveBroadcast() == CollectiveAlgo.TREE) {
            binomialBroadcast(comm, buf, bytes, root);
        } else {
            chainBroadcast(comm, buf, bytes, root);
        }
    }

    static void allToAll(Communicator comm, ByteBuffer send, ByteBuffer recv, int bytesPerPeer) {
        checkNonNegative("bytesPerPeer", bytesPerPeer);
        final int n = comm.size();
        checkCapacity("send", send, (long) n * bytesPerPeer);
        checkCapacity("recv", recv, (long) n * bytesPerPeer);
        long[] counts = new long[n];
        Arrays.fill(counts, bytesPerPeer);
        comm.allToAllV(-1, ExchangePhase.COLLECTIVE, send, counts, recv, counts.clone());
    }

    /**
     * Ring reduce-scatter in place: in round {@code s} rank {@code r} sends block {@code r - s - 1
     * + shift} to {@code r + 1} and reduces block {@code r - s - 2 + shift} from {@code r - 1} into
     * its own, so after {@code N - 1} rounds it holds block {@code r + shift} reduced over every
     * rank.
     */
    private static void ringReduceScatter(
            Communicator comm, ByteBuffer buf, Blocks blocks, DType dtype, ReduceOp op, int shift) {
        final int n = comm.size();
        final int r = comm.rank();
        final int next = (r + 1) % n;
        final int prev = (r + n - 1) % n;
        for (int s = 0; s < n - 1; s++) {
            int out = Math.floorMod(r - s - 1 + shift, n);
            int in = Math.floorMod(r - s - 2 + shift, n);
            comm.sendRecv(
                    next,
                    buf,
                    blocks.offset(out),
                    blocks.bytes(out),
                    prev,
                    blocks.bytes(in),
                    reduceInto(buf, blocks.offset(in), dtype, op));
        }
    }

    /**
     * Ring all-gather in place, from every rank holding its block {@code r + shift}: in round
     * {@code s} rank {@code r} passes block {@code r - s + shift} on to {@code r + 1}.
     */
    private static void ringAllGather(Communicator comm, ByteBuffer buf, Blocks blocks, int shift) {
        final int n = comm.size();
        final int r = comm.rank();
        final int next = (r + 1) % n;
        final int prev = (r + n - 1) % n;
        for (int s = 0; s < n - 1; s++) {
            int out = Math.floorMod(r - s + shift, n);
            int in = Math.floorMod(r - s - 1 + shift, n);
            comm.sendRecv(
                    next,
                    buf,
                    blocks.offset(out),
                    blocks.bytes(out),
                    prev,
                    blocks.bytes(in),
                    InboundSink.copyTo(buf, blocks.offset(in)));
        }
    }

    /**
     * Recursive doubling over the largest power of two {@code p <= N}: each round a rank swaps its
     * whole buffer with the partner whose rank differs in one bit and reduces. The {@code N - p}
     * ranks beyond {@code p} first hand their buffer to rank {@code r - p} and get the result back
     * at the end. A received buffer lands in scratch and is reduced after the swap, because the
     * partner may still be reading this rank's buffer until then.
     */
    private static void recursiveDoubling(
            Communicator comm, ByteBuffer buf, int count, DType dtype, ReduceOp op) {
        final int n = comm.size();
        final int r = comm.rank();
        final int bytes = count * dtype.sizeBytes();
        final int p = Integer.highestOneBit(n);
        if (r >= p) {
            comm.send(r - p, buf, 0, bytes);
            comm.recv(r - p, buf, 0, bytes);
            return;
        }
        ByteBuffer received = scratch(bytes);
        if (r + p < n) {
            comm.recv(r + p, received, 0, bytes);
            dtype.reduce(op, segment(received), 0, segment(buf), 0, count);
        }
        for (int mask = 1; mask < p; mask <<= 1) {
            int partner = r ^ mask;
            comm.sendRecv(partner, buf, 0, bytes, partner, bytes, InboundSink.copyTo(received, 0));
            dtype.reduce(op, segment(received), 0, segment(buf), 0, count);
        }
        if (r + p < n) {
            comm.send(r + p, buf, 0, bytes);
        }
    }

    /**
     * Binomial tree from {@code root}: a rank receives once from the rank that differs in its
     * lowest set bit (relative to the root), then sends to the ranks below that bit.
     */
    private static void binomialBroadcast(Communicator comm, ByteBuffer buf, int bytes, int root) {
        final int n = comm.size();
        final int vr = Math.floorMod(comm.rank() - root, n);
        int mask = 1;
        while (mask < n) {
            if ((vr & mask) != 0) {
                comm.recv((vr - mask + root) % n, buf, 0, bytes);
                break;
            }
            mask <<= 1;
        }
        for (mask >>= 1; mask > 0; mask >>= 1) {
            if (vr + mask < n) {
                comm.send((vr + mask + root) % n, buf, 0, bytes);
            }
        }
    }

    /**
     * Chain from {@code root} through {@code root + 1, ..., root - 1}, in blocks: a rank passes
     * block {@code b - 1} on while it receives block {@code b}, so every link carries data at once.
     */
    private static void chainBroadcast(Communicator comm, ByteBuffer buf, int bytes, int root) {
        final int n = comm.size();
        final int vr = Math.floorMod(comm.rank() - root, n);
        final int next = vr == n - 1 ? Communicator.NONE : (comm.rank() + 1) % n;
        final int prev = (comm.rank() + n - 1) % n;
        final int blocks = Math.max(1, (bytes + CHAIN_BLOCK_BYTES - 1) / CHAIN_BLOCK_BYTES);
        if (vr == 0) {
            for (int b = 0; b < blocks; b++) {
                comm.send(next, buf, b * CHAIN_BLOCK_BYTES, chainBlock(bytes, b));
            }
            return;
        }
        comm.recv(prev, buf, 0, chainBlock(bytes, 0));
        for (int b = 1; b < blocks; b++) {
            int in = b * CHAIN_BLOCK_BYTES;
            comm.sendRecv(
                    next,
                    buf,
                    in - CHAIN_BLOCK_BYTES,
                    next == Communicator.NONE ? 0 : CHAIN_BLOCK_BYTES,
                    prev,
                    chainBlock(bytes, b),
                    InboundSink.copyTo(buf, in));
        }
        if (next != Communicator.NONE) {
            int last = blocks - 1;
            comm.send(next, buf, last * CHAIN_BLOCK_BYTES, chainBlock(bytes, last));
        }
    }

    private static int chainBlock(int bytes, int block) {
        return Math.min(CHAIN_BLOCK_BYTES, bytes - block * CHAIN_BLOCK_BYTES);
    }

    /** Where each rank's block of a buffer lies, in bytes. */
    private record Blocks(int[] offsets, int[] lengths) {
        /** {@code count} elements in {@code n} blocks whose sizes differ by at most one element. */
        static Blocks split(int count, int n, int elementBytes) {
            int[] offsets = new int[n];
            int[] lengths = new int[n];
            int at = 0;
            for (int b = 0; b < n; b++) {
                int elements = count / n + (b < count % n ? 1 : 0);
                offsets[b] = at * elementBytes;
                lengths[b] = elements * elementBytes;
                at += elements;
            }
            return new Blocks(offsets, lengths);
        }

        static Blocks equal(int n, int blockBytes) {
            int[] offsets = new int[n];
            int[] lengths = new int[n];
            for (int b = 0; b < n; b++) {
                offsets[b] = b * blockBytes;
                lengths[b] = blockBytes;
            }
            return new Blocks(offsets, lengths);
        }

        int offset(int block) {
            return offsets[block];
        }

        int bytes(int block) {
            return lengths[block];
        }
    }

    private static ByteBuffer scratch(long bytes) {
        ByteBuffer s = SCRATCH.get();
        if (s.capacity() < bytes) {
            s = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.LITTLE_ENDIAN);
            SCRATCH.set(s);
        }
        return s;
    }

    private static MemorySegment segment(ByteBuffer b) {
        return MemorySegment.ofBuffer(b.duplicate().clear());
    }
}
