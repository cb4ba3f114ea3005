package moe.a2a.bench;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import moe.a2a.comm.Communicator;

/**
 * One rank's part of a collective benchmark case, as nccl-tests runs one: inputs filled once,
 * warm-up and measured iterations each after a barrier, and the results of the first and the last
 * iteration checked element by element against the closed form of every rank's inputs.
 *
 * <p>Inputs: the reducing collectives hold {@code ((3r + j) mod 4) + 1} at element {@code j} of
 * rank {@code r} (small integers, so a sum over up to 64 ranks is exact in every dtype and every
 * order); the others move a hash of {@code (r, j)} as raw element bits, so a block in the wrong
 * place or from the wrong rank is caught. Before a checked iteration the outputs are poisoned (NaN,
 * or the complement of the expected bits), so an element left unwritten counts as wrong.
 */
public final class CollectiveBench {
    /** Measured iterations per case when none are asked for. */
    public static final int DEFAULT_ITERS = 20;

    /** Iterations before measuring when none are asked for. */
    public static final int DEFAULT_WARMUP = 5;

    /**
     * Small cases warm up longer than asked, until this many bytes have passed (at most {@link
     * #MAX_JIT_WARMUP} iterations): until C2 has compiled the kernels and the transport's loops, a
     * JVM runs them far slower (a 1 KiB all-reduce of 4 in-process ranks took 2.2 ms over its first
     * 100 iterations, 82 µs over 3,000), which no C peer pays.
     */
    public static final long JIT_WARMUP_BYTES = 64L << 20;

    /** The most warm-up iterations {@link #JIT_WARMUP_BYTES} adds. */
    public static final int MAX_JIT_WARMUP = 1000;

    private final CollectiveCase c;
    private final Communicator comm;
    private final int rank;
    private final int elem;
    private final int count;
    private final int block;
    private final ByteBuffer send;
    private final ByteBuffer recv;
    private final float[] expectedByPhase = new float[4];

    private CollectiveBench(CollectiveCase c, Communicator comm) {
        if (comm.size() != c.ranks()) {
            throw new IllegalArgumentException(
                    "ranks: " + c.ranks() + " (this group has " + comm.size() + ")");
        }
        this.c = c;
        this.comm = comm;
        this.rank = comm.rank();
        this.elem = c.dtype().sizeBytes();
        this.count = c.count();
        this.block = c.blockCount();
        int sendCount =
                switch (c.collective()) {
                    case ALLGATHER -> block;
                    case BROADCAST -> 0;
                    default -> count;
                };
        int recvCount = c.collective() == Collective.REDUCESCATTER ? block : count;
        this.send = allocate(sendCount);
        this.recv = allocate(recvCount);
        for (int phase = 0; phase < 4; phase++) {
            float acc = value(0, phase);
            for (int q = 1; q < c.ranks(); q++) {
                acc = c.op().apply(acc, value(q, phase));
            }
            expectedByPhase[phase] = acc;
        }
        fillInputs();
    }

    /**
     * Runs {@code warmup} then {@code iters} iterations of {@code c} on this rank's {@code comm}.
     */
    public static CollectiveTimes rank(CollectiveCase c, Communicator comm, int warmup, int iters) {
        if (iters < 1 || warmup < 0) {
            throw new IllegalArgumentException(
                    "iters: "
                            + iters
                            + ", warmup: "
                            + warmup
                            + " (expected: iters >= 1, warmup >= 0)");
        }
        return new CollectiveBench(c, comm).run(warmupFor(c, warmup), iters);
    }

    /**
     * {@code asked}, or more for a small case ({@link #JIT_WARMUP_BYTES}); the same on every rank.
     */
    public static int warmupFor(CollectiveCase c, int asked) {
        long byVolume = Math.min(MAX_JIT_WARMUP, JIT_WARMUP_BYTES / Math.max(1, c.bytes()));
        return Math.max(asked, (int) byVolume);
    }

    private CollectiveTimes run(int warmup, int iters) {
        long[] ns = new long[iters];
        long wrong = 0;
        for (int it = -warmup; it < iters; it++) {
            boolean checked = it == -warmup || it == iters - 1;
            if (checked) {
                poison();
            }
            comm.barrier();
            long t0 = System.nanoTime();
            once();
            long dt = System.nanoTime() - t0;
            if (it >= 0) {
                ns[it] = dt;
            }
            if (checked) {
                wrong += check();
            }
        }
        return new CollectiveTimes(ns, wrong);
    }

    private void once() {
        switch (c.collective()) {
            case ALLREDUCE -> comm.allReduce(send, recv, count, c.dtype(), c.op(), c.algo());
            case ALLGATHER -> comm.allGather(send, recv, block * elem);
            case REDUCESCATTER -> comm.reduceScatter(send, recv, block, c.dtype(), c.op());
            case BROADCAST -> comm.broadcast(recv, count * elem, c.root(), c.algo());
            case ALLTOALL -> comm.allToAll(send, recv, block * elem);
        }
    }

    private void fillInputs() {
        switch (c.collective()) {
            case ALLREDUCE, REDUCESCATTER -> {
                for (int j = 0; j < count; j++) {
                    c.dtype().put(send, j * elem, value(rank, j));
                }
            }
            case ALLGATHER -> {
                for (int k = 0; k < block; k++) {
                    putRaw(send, k, pattern(rank, k));
                }
            }
            case ALLTOALL -> {
                for (int j = 0; j < count; j++) {
                    putRaw(send, j, pattern(rank, j));
                }
            }
            case BROADCAST -> {
                if (rank == c.root()) {
                    for (int j = 0; j < count; j++) {
                        putRaw(recv, j, pattern(rank, j));
                    }
                }
            }
        }
    }

    private void poison() {
        if (c.collective().reducing()) {
            int b = 0;
            for (; b + 8 <= recv.capacity(); b += 8) {
                recv.putLong(b, -1L); // all ones: NaN in fp32, fp16 and bf16
            }
            for (; b < recv.capacity(); b++) {
                recv.put(b, (byte) -1);
            }
        } else if (!(c.collective() == Collective.BROADCAST && rank == c.root())) {
            for (int j = 0; j < count; j++) {
                putRaw(recv, j, ~expectedRaw(j));
            }
        }
    }

    /** Wrong elements of this rank's result. */
    private long check() {
        long wrong = 0;
        switch (c.collective()) {
            case ALLREDUCE -> {
                for (int j = 0; j < count; j++) {
                    wrong += c.dtype().get(recv, j * elem) == expectedByPhase[j & 3] ? 0 : 1;
                }
            }
            case REDUCESCATTER -> {
                for (int k = 0; k < block; k++) {
                    int j = rank * block + k;
                    wrong += c.dtype().get(recv, k * elem) == expectedByPhase[j & 3] ? 0 : 1;
                }
            }
            default -> {
                for (int j = 0; j < count; j++) {
                    wrong += getRaw(recv, j) == (expectedRaw(j) & mask()) ? 0 : 1;
                }
            }
        }
        return wrong;
    }

    /** Raw bits of element {@code j} of this rank's result for the collectives that move bytes. */
    private int expectedRaw(int j) {
        return switch (c.collective()) {
            case ALLGATHER -> pattern(j / block, j % block);
            case ALLTOALL -> pattern(j / block, rank * block + j % block);
            default -> pattern(c.root(), j);
        };
    }

    /** Element {@code j} of rank {@code r}'s input to a reducing collective. */
    static float value(int r, int j) {
        return ((3 * r + j) & 3) + 1;
    }

    /** Element {@code j} of rank {@code r}'s input to a collective that moves bytes. */
    static int pattern(int r, int j) {
        long z = (r + 1) * 0x9E3779B97F4A7C15L + j * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 31)) * 0x94D049BB133111EBL;
        return (int) (z ^ (z >>> 29));
    }

    private int mask() {
        return elem == 4 ? -1 : 0xFFFF;
    }

    private void putRaw(ByteBuffer buf, int j, int bits) {
        if (elem == 4) {
            buf.putInt(j * 4, bits);
        } else {
            buf.putShort(j * 2, (short) bits);
        }
    }

    private int getRaw(ByteBuffer buf, int j) {
        return elem == 4 ? buf.getInt(j * 4) : buf.getShort(j * 2) & 0xFFFF;
    }

    private ByteBuffer allocate(int elements) {
        return ByteBuffer.allocateDirect(Math.max(1, elements * elem))
                .order(ByteOrder.LITTLE_ENDIAN);
    }
}
