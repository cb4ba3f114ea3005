package moe.a2a.kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.Random;

/** Seeded inputs for the kernel tests: random values mixed with the values rounding gets wrong. */
final class KernelInputs {
    /** The element counts every kernel is tried on. */
    static final int[] SIZES = {0, 1, 7, 127, 128, 129, 1000, 7168};

    /** Source and destination byte offsets: aligned, and off by a short or more. */
    static final long[][] OFFSETS = {{0, 0}, {2, 6}, {6, 2}, {1, 3}};

    /** fp32 bit patterns at the edges of fp32, bf16, fp16 and E4M3. */
    static final int[] SPECIAL_FLOATS = {
        // NaNs: quiet, signaling, payloads high and low, both signs
        0x7fc00000,
        0xffc00000,
        0x7f800001,
        0xff800001,
        0x7fbfffff,
        0x7f802000,
        0x7f801fff,
        0x7fc00001,
        0xffffffff,
        0x7fa5a5a5,
        0xff80e000,
        // infinities, zeros, fp32 subnormals and extremes
        0x7f800000,
        0xff800000,
        0x00000000,
        0x80000000,
        0x00000001,
        0x807fffff,
        0x00400000,
        0x00800000,
        0x7f7fffff,
        0xff7fffff,
        // bf16 ties (even below, odd below), near ties, tie to infinity, subnormal tie
        0x3f808000,
        0x3f818000,
        0x3f808001,
        0x3f807fff,
        0x7f7f8000,
        0x7f7f7fff,
        0x00008000,
        0x80018000,
        // fp16: 65504, just below and at the overflow tie, ties at 1, subnormal and underflow edges
        0x477fe000,
        0x477fefff,
        0x477ff000,
        0x3f801000,
        0x3f803000,
        0x33800000,
        0x33000000,
        0x33000001,
        0x33400000,
        0x38800000,
        0x387fffff,
        0x387fe000,
        0x387ff000,
        0xb3000000,
        // E4M3: 448, the 464 tie, 480, far above, 2^-6, 2^-9, 2^-10 tie, 3 × 2^-10, 1.0625, 1.1875
        0x43e00000,
        0xc3e00000,
        0x43e80000,
        0x43f00000,
        0x49742400,
        0x3c800000,
        0x3b000000,
        0x3a800000,
        0x3b400000,
        0x3f880000,
        0x3f980000,
        0x43e7ffff,
        0x43dfffff
    };

    /** bf16 and fp16 bit patterns: NaN payloads, infinities, zeros, subnormals, extremes. */
    static final short[] SPECIAL_SHORTS = {
        0x7fc0,
        (short) 0xffc0,
        0x7f81,
        (short) 0xff81,
        0x7fbf,
        0x7c01,
        (short) 0xfc01,
        0x7e00,
        0x7dff,
        0x7f80,
        (short) 0xff80,
        0x7c00,
        (short) 0xfc00,
        0x0000,
        (short) 0x8000,
        0x0001,
        (short) 0x8001,
        0x03ff,
        0x0400,
        0x007f,
        0x0080,
        0x7bff,
        0x7f7f,
        (short) 0xffff
    };

    private KernelInputs() {}

    /** Where a test's segments live. */
    enum Memory {
        HEAP,
        ARENA,
        DIRECT_BUFFER;

        /** A segment of exactly {@code bytes}, so that any read or write past it throws. */
        MemorySegment allocate(Arena arena, long bytes) {
            return switch (this) {
                case HEAP ->
                        MemorySegment.ofArray(new float[(int) (bytes + 3) / 4]).asSlice(0, bytes);
                case ARENA -> arena.allocate(Math.max(bytes, 1)).asSlice(0, bytes);
                case DIRECT_BUFFER ->
                        MemorySegment.ofBuffer(ByteBuffer.allocateDirect((int) bytes));
            };
        }
    }

    /** A float that is a tie, a special, a wide-ranged normal value or random bits. */
    static float anyFloat(Random random) {
        final int pick = random.nextInt(16);
        if (pick < 3) {
            return Float.intBitsToFloat(SPECIAL_FLOATS[random.nextInt(SPECIAL_FLOATS.length)]);
        }
        if (pick < 5) {
            return Float.intBitsToFloat(random.nextInt());
        }
        if (pick < 7) {
            return tie(random);
        }
        return (float) (random.nextGaussian() * Math.scalb(1.0, random.nextInt(48) - 24));
    }

    /** An exact midpoint between neighbours of bf16, fp16 or E4M3. */
    static float tie(Random random) {
        return switch (random.nextInt(3)) {
            case 0 -> Float.intBitsToFloat((random.nextInt() & 0xffff0000) | 0x8000);
            case 1 -> {
                final short half = (short) random.nextInt(0x7bff);
                final float below = Float.float16ToFloat(half);
                final float above = Float.float16ToFloat((short) (half + 1));
                yield (random.nextBoolean() ? 1 : -1) * (below + (above - below) / 2);
            }
            default -> e4m3Tie(random);
        };
    }

    /** An exact midpoint between two neighbouring finite E4M3 values, either sign. */
    static float e4m3Tie(Random random) {
        final byte code = (byte) random.nextInt(0x7e);
        final float below = ScalarKernels.e4m3ToFloat(code);
        final float above = ScalarKernels.e4m3ToFloat((byte) (code + 1));
        return (random.nextBoolean() ? 1 : -1) * (below + (above - below) / 2);
    }

    /** A short that is random bits or a special pattern. */
    static short anyShort(Random random) {
        return random.nextInt(8) == 0
                ? SPECIAL_SHORTS[random.nextInt(SPECIAL_SHORTS.length)]
                : (short) random.nextInt();
    }

    static void fillFloats(MemorySegment segment, long offset, int n, Random random) {
        for (int i = 0; i < n; i++) {
            segment.set(ScalarKernels.FLOAT, offset + 4L * i, anyFloat(random));
        }
    }

    static void fillShorts(MemorySegment segment, long offset, int n, Random random) {
        for (int i = 0; i < n; i++) {
            segment.set(ScalarKernels.SHORT, offset + 2L * i, anyShort(random));
        }
    }

    /** An FP8 row: random codes, every one of them somewhere, and a scale per block. */
    static void fillFp8Row(MemorySegment segment, long offset, int hidden, Random random) {
        fillBytes(segment, offset, hidden, random);
        for (int block = 0; block < Fp8RowLayout.blocks(hidden); block++) {
            final float scale =
                    random.nextBoolean()
                            ? anyFloat(random)
                            : (float) Math.scalb(random.nextDouble(), random.nextInt(40) - 30);
            segment.set(
                    ScalarKernels.FLOAT, offset + Fp8RowLayout.scaleOffset(hidden, block), scale);
        }
    }

    static void fillBytes(MemorySegment segment, long offset, long bytes, Random random) {
        for (long i = 0; i < bytes; i++) {
            segment.set(ScalarKernels.BYTE, offset + i, (byte) random.nextInt());
        }
    }

    /**
     * A row to quantize, block by block one of: wide-ranged values with specials; an amax of
     * exactly 448 (a multiplier of 1) with E4M3 ties and values near 448; zeros and fp32 subnormals
     * (the amax floor); random bits.
     */
    static void fillRow(MemorySegment segment, long offset, int hidden, Random random) {
        for (int start = 0; start < hidden; start += Fp8RowLayout.BLOCK) {
            final int len = Math.min(Fp8RowLayout.BLOCK, hidden - start);
            final int mode = random.nextInt(4);
            for (int i = 0; i < len; i++) {
                final float x =
                        switch (mode) {
                            case 0 -> anyFloat(random);
                            case 1 -> i == 0 ? -448f : e4m3Edge(random);
                            case 2 -> Float.intBitsToFloat(random.nextInt(0x1000) - 0x800);
                            default -> Float.intBitsToFloat(random.nextInt());
                        };
                segment.set(ScalarKernels.FLOAT, offset + 4L * (start + i), x);
            }
        }
    }

    /** An E4M3 tie, a code's value or a value near 448, all at most 448 in magnitude. */
    private static float e4m3Edge(Random random) {
        return switch (random.nextInt(3)) {
            case 0 -> e4m3Tie(random);
            case 1 -> ScalarKernels.e4m3ToFloat((byte) random.nextInt(0x7f));
            default -> 448f - random.nextInt(64);
        };
    }
}
