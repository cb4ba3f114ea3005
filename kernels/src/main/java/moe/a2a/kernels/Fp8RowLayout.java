package moe.a2a.kernels;

/**
 * The layout of one FP8 row as DeepEP sends it: E4M3 codes, then one fp32 scale per block of {@link
 * #BLOCK} channels.
 *
 * <pre>
 *   0                          hidden               + 4                  + 4 * blocks = rowBytes
 *   +--------------------------+--------------------+-----+--------------------+
 *   | hidden × e4m3 code       | scale of block 0   | ... | scale of block B-1 |
 *   +--------------------------+--------------------+-----+--------------------+
 *   block b: channels [128 b, min(128 (b + 1), hidden)); scales are little-endian fp32, unaligned
 * </pre>
 *
 * A channel's value is its code's value times its block's scale. Stateless.
 */
public final class Fp8RowLayout {
    /** Channels that share one scale. */
    public static final int BLOCK = 128;

    private Fp8RowLayout() {}

    /** Scale blocks of a row of {@code hidden} channels: {@code ceil(hidden / 128)}. */
    public static int blocks(int hidden) {
        return (hidden + BLOCK - 1) / BLOCK;
    }

    /** Bytes of a row of {@code hidden} channels: the codes, then the scales. */
    public static int rowBytes(int hidden) {
        return hidden + Float.BYTES * blocks(hidden);
    }

    /** Offset of the scale of block {@code block} within a row of {@code hidden} channels. */
    public static int scaleOffset(int hidden, int block) {
        return hidden + Float.BYTES * block;
    }
}
