package moe.a2a.experts;

import java.nio.FloatBuffer;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.TreeMap;
import java.util.TreeSet;
import moe.a2a.kernels.DType;

/**
 * Expert and gate weights from a safetensors checkpoint in either {@link WeightNaming} scheme.
 * Shapes come from the file and every expected tensor is checked when opened, so a bad file fails
 * at start, naming the tensor. MoE layer {@code i} is the {@code i}-th layer number (ascending)
 * that has experts. Thread-safe.
 */
public final class SafetensorsWeights implements WeightSource, AutoCloseable {
    private final SafetensorsFile file;
    private final WeightNaming naming;
    private final int[] layerNumbers;
    private final int experts;
    private final int hidden;
    private final int ffn;
    private final DType dtype;

    private SafetensorsWeights(
            SafetensorsFile file,
            WeightNaming naming,
            int[] layerNumbers,
            int experts,
            int hidden,
            int ffn,
            DType dtype) {
        this.file = file;
        this.naming = naming;
        this.layerNumbers = layerNumbers;
        this.experts = experts;
        this.hidden = hidden;
        this.ffn = ffn;
        this.dtype = dtype;
    }

    public static SafetensorsWeights open(Path path) {
        SafetensorsFile file = SafetensorsFile.open(path);
        try {
            return inspect(file);
        } catch (RuntimeException e) {
            file.close();
            throw e;
        }
    }

    private static SafetensorsWeights inspect(SafetensorsFile file) {
        for (WeightNaming naming : WeightNaming.values()) {
            TreeMap<Integer, TreeSet<Integer>> expertsByLayer = new TreeMap<>();
            for (String name : file.tensors().keySet()) {
                int[] le = naming.parseW1(name);
                if (le != null) {
                    expertsByLayer.computeIfAbsent(le[0], k -> new TreeSet<>()).add(le[1]);
                }
            }
            if (!expertsByLayer.isEmpty()) {
                return validate(file, naming, expertsByLayer);
            }
        }
        throw new IllegalArgumentException(
                "no MoE expert tensors in "
                        + file.path()
                        + " (expected: "
                        + WeightNaming.MIXTRAL.w1(0, 0).replace("0", "{n}")
                        + " or "
                        + WeightNaming.DEEPSEEK.w1(0, 0).replace("0", "{n}")
                        + ")");
    }

    private static SafetensorsWeights validate(
            SafetensorsFile file,
            WeightNaming naming,
            TreeMap<Integer, TreeSet<Integer>> expertsByLayer) {
        int[] layers = expertsByLayer.keySet().stream().mapToInt(Integer::intValue).toArray();
        int experts = expertsByLayer.firstEntry().getValue().size();
        SafetensorsFile.TensorInfo first = file.require(naming.w1(layers[0], 0));
        if (first.shape().length != 2) {
            throw new IllegalArgumentException(
                    "tensor "
                            + first.name()
                            + ".shape: "
                            + Arrays.toString(first.shape())
                            + " (expected: [ffn, hidden])");
        }
        int ffn = Math.toIntExact(first.shape()[0]);
        int hidden = Math.toIntExact(first.shape()[1]);
        for (int layer : layers) {
            TreeSet<Integer> ids = expertsByLayer.get(layer);
            if (ids.size() != experts || ids.first() != 0 || ids.last() != experts - 1) {
                throw new IllegalArgumentException(
                        "layer "
                                + layer
                                + " experts: "
                                + ids
                                + " (expected: 0.."
                                + (experts - 1)
                                + ", as in layer "
                                + layers[0]
                                + ")");
            }
            for (int e = 0; e < experts; e++) {
                checkShape(file, naming.w1(layer, e), ffn, hidden);
                checkShape(file, naming.w3(layer, e), ffn, hidden);
                checkShape(file, naming.w2(layer, e), hidden, ffn);
            }
            checkShape(file, naming.gate(layer), experts, hidden);
        }
        DType dtype = file.dtypeOf(first);
        return new SafetensorsWeights(file, naming, layers, experts, hidden, ffn, dtype);
    }

    private static void checkShape(SafetensorsFile file, String name, long rows, long cols) {
        SafetensorsFile.TensorInfo info = file.require(name);
        if (!Arrays.equals(info.shape(), new long[] {rows, cols})) {
            throw new IllegalArgumentException(
                    "tensor "
                            + name
                            + ".shape: "
                            + Arrays.toString(info.shape())
                            + " (expected: ["
                            + rows
                            + ", "
                            + cols
                            + "])");
        }
        file.dtypeOf(info);
    }

    @Override
    public int[] layerNumbers() {
        return layerNumbers.clone();
    }

    public WeightNaming naming() {
        return naming;
    }

    @Override
    public int experts() {
        return experts;
    }

    @Override
    public int hidden() {
        return hidden;
    }

    @Override
    public int ffn() {
        return ffn;
    }

    @Override
    public int layers() {
        return layerNumbers.length;
    }

    @Override
    public DType dtype() {
        return dtype;
    }

    @Override
    public ExpertWeights expert(int layer, int expert) {
        int l = layerNumbers[layer];
        FloatBuffer w1 = file.readFloats(naming.w1(l, expert));
        FloatBuffer w3 = file.readFloats(naming.w3(l, expert));
        FloatBuffer w2 = file.readFloats(naming.w2(l, expert));
        return new ExpertWeights(hidden, ffn, w1, w3, w2);
    }

    @Override
    public HeldExpert heldExpert(int layer, int expert) {
        int l = layerNumbers[layer];
        Bf16Expert bf16 =
                Bf16Expert.stored(
                        hidden,
                        ffn,
                        name -> file,
                        naming.w1(l, expert),
                        naming.w3(l, expert),
                        naming.w2(l, expert));
        return bf16 != null ? bf16 : expert(layer, expert);
    }

    @Override
    public float[] gate(int layer) {
        return file.readFloatArray(naming.gate(layerNumbers[layer]));
    }

    @Override
    public String description() {
        return file.path().toAbsolutePath().toString();
    }

    @Override
    public void close() {
        file.close();
    }
}
