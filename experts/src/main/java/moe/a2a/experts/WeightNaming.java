package moe.a2a.experts;

import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The tensor naming schemes of Hugging Face MoE checkpoints that {@link SafetensorsWeights} reads.
 */
public enum WeightNaming {
    /** Mixtral: {@code model.layers.{L}.block_sparse_moe.experts.{e}.w1/w2/w3.weight}. */
    MIXTRAL(
            "model.layers.%d.block_sparse_moe.experts.%d.",
            "w1", "w3", "w2", "model.layers.%d.block_sparse_moe.gate.weight"),
    /**
     * DeepSeek and Qwen MoE: {@code
     * model.layers.{L}.mlp.experts.{e}.gate_proj/up_proj/down_proj.weight}.
     */
    DEEPSEEK(
            "model.layers.%d.mlp.experts.%d.",
            "gate_proj", "up_proj", "down_proj", "model.layers.%d.mlp.gate.weight");

    private final String expertPrefix;
    private final String gateProj;
    private final String upProj;
    private final String downProj;
    private final String gate;
    private final Pattern firstProj;

    WeightNaming(
            String expertPrefix, String gateProj, String upProj, String downProj, String gate) {
        this.expertPrefix = expertPrefix;
        this.gateProj = gateProj;
        this.upProj = upProj;
        this.downProj = downProj;
        this.gate = gate;
        this.firstProj =
                Pattern.compile(
                        Pattern.quote(expertPrefix).replace("%d", "\\E(\\d+)\\Q")
                                + Pattern.quote(gateProj + ".weight"));
    }

    /** {@code W1} ({@code [I, H]}): the gated projection. */
    public String w1(int layer, int expert) {
        return String.format(Locale.ROOT, expertPrefix, layer, expert) + gateProj + ".weight";
    }

    /** {@code W3} ({@code [I, H]}): the up projection. */
    public String w3(int layer, int expert) {
        return String.format(Locale.ROOT, expertPrefix, layer, expert) + upProj + ".weight";
    }

    /** {@code W2} ({@code [H, I]}): the down projection. */
    public String w2(int layer, int expert) {
        return String.format(Locale.ROOT, expertPrefix, layer, expert) + downProj + ".weight";
    }

    /** The router weight ({@code [E, H]}). */
    public String gate(int layer) {
        return String.format(Locale.ROOT, gate, layer);
    }

    /** For a W1 tensor name of this scheme, {@code {layer, expert}}; otherwise null. */
    int[] parseW1(String name) {
        Matcher m = firstProj.matcher(name);
        return m.matches()
                ? new int[] {Integer.parseInt(m.group(1)), Integer.parseInt(m.group(2))}
                : null;
    }
}
