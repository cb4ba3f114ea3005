package moe.a2a.dispatch;

import java.util.Locale;

/**
 * How token rows travel in dispatch. Combine always returns rows in the tokens' own dtype.
 *
 * <ul>
 *   <li>{@link #BF16}: as the tokens came (bf16 for bf16 requests; fp16 and fp32 rows travel as
 *       given), nothing lost on the way.
 *   <li>{@link #FP8}: E4M3 ({@code fn}) with one fp32 scale per 128 channels of each token, as
 *       DeepEP sends it: each token is quantized once at its source and dequantized by the experts
 *       that receive it; about half the bytes of bf16.
 * </ul>
 */
public enum DispatchDType {
    BF16,
    FP8;

    /** The lower-case name used by flags, protos and reports. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** Parses {@link #label()} (any case); the error names {@code field} and the choices. */
    public static DispatchDType parse(String field, String value) {
        for (DispatchDType d : values()) {
            if (d.label().equalsIgnoreCase(value)) {
                return d;
            }
        }
        throw new IllegalArgumentException(field + ": " + value + " (expected: one of bf16, fp8)");
    }
}
