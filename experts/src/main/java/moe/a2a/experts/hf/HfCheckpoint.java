package moe.a2a.experts.hf;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import moe.a2a.dispatch.GateSpec;
import moe.a2a.experts.Bf16Expert;
import moe.a2a.experts.ExpertWeights;
import moe.a2a.experts.Fp8Expert;
import moe.a2a.experts.Fp8Matrix;
import moe.a2a.experts.HeldExpert;
import moe.a2a.experts.SafetensorsFile;
import moe.a2a.experts.SharedExpert;
import moe.a2a.experts.WeightNaming;
import moe.a2a.experts.WeightSource;
import moe.a2a.kernels.DType;
import org.jspecify.annotations.Nullable;

/**
 * A Hugging Face checkpoint directory: {@code config.json} plus {@code model.safetensors}, or
 * {@code model.safetensors.index.json} and its shards. Only the MoE layers' expert and router
 * tensors are read, and only when asked for (a rank reads the experts it hosts); attention, norms,
 * embeddings and dense layers are never touched. Every tensor the model needs is checked when
 * opened (present, shape, dtype, FP8 scales), so a bad checkpoint fails at start naming the tensor
 * and the file. FP8 weights are dequantized to fp32 when loaded. Shared experts (DeepSeek's {@code
 * shared_experts}, Qwen2-MoE's {@code shared_expert} and its gate) are read by every rank.
 * Thread-safe.
 */
public final class HfCheckpoint implements WeightSource, AutoCloseable {
    private static final String INDEX = "model.safetensors.index.json";
    private static final String SINGLE = "model.safetensors";

    private final Path dir;
    private final HfConfig config;
    private final Map<String, SafetensorsFile> fileOf;
    private final List<SafetensorsFile> files;
    private final String format;

    /** Checks every tensor the model needs as it is built. */
    private HfCheckpoint(
            Path dir,
            HfConfig config,
            Map<String, SafetensorsFile> fileOf,
            List<SafetensorsFile> files) {
        this.dir = dir;
        this.config = config;
        this.fileOf = fileOf;
        this.files = files;
        this.format = check();
    }

    /**
     * Opens and checks the checkpoint in {@code dir}.
     *
     * @throws IllegalArgumentException naming the field, tensor or file that is wrong
     */
    public static HfCheckpoint open(Path dir) {
        HfConfig config = HfConfig.read(dir);
        if (config.moeLayers().length == 0) {
            throw new IllegalArgumentException(
                    dir.resolve("config.json") + ": no MoE layer (every layer is dense)");
        }
        List<SafetensorsFile> files = new ArrayList<>();
        try {
            Map<String, SafetensorsFile> fileOf = tensorFiles(dir, files);
            return new HfCheckpoint(dir, config, fileOf, files);
        } catch (RuntimeException e) {
            files.forEach(SafetensorsFile::close);
            throw e;
        }
    }

    /** Which file holds each tensor: the index's weight map, or the single file's header. */
    private static Map<String, SafetensorsFile> tensorFiles(
            Path dir, List<SafetensorsFile> opened) {
        Path index = dir.resolve(INDEX);
        Map<String, SafetensorsFile> fileOf = new HashMap<>();
        if (Files.exists(index)) {
            JsonObject map;
            try {
                JsonElement root =
                        JsonParser.parseString(Files.readString(index, StandardCharsets.UTF_8));
                map = root.getAsJsonObject().getAsJsonObject("weight_map");
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + index, e);
            } catch (RuntimeException e) {
                throw new IllegalArgumentException(
                        index + ": weight_map missing or malformed (" + e.getMessage() + ")", e);
            }
            if (map == null) {
                throw new IllegalArgumentException(index + ": weight_map missing");
            }
            Map<String, SafetensorsFile> shards = new HashMap<>();
            for (Map.Entry<String, JsonElement> e : map.entrySet()) {
                String shard = e.getValue().getAsString();
                if (shard.contains("/") || shard.contains("\\")) {
                    throw new IllegalArgumentException(
                            index
                                    + ": weight_map."
                                    + e.getKey()
                                    + ": "
                                    + shard
                                    + " (expected: a file name in "
                                    + dir
                                    + ")");
                }
                SafetensorsFile file =
                        shards.computeIfAbsent(
                                shard,
                                (Function<String, SafetensorsFile>)
                                        name -> {
                                            SafetensorsFile f =
                                                    SafetensorsFile.open(dir.resolve(name));
                                            opened.add(f);
                                            return f;
                                        });
                fileOf.put(e.getKey(), file);
            }
            return fileOf;
        }
        Path single = dir.resolve(SINGLE);
        if (!Files.exists(single)) {
            throw new IllegalArgumentException(
                    dir
                            + ": neither "
                            + INDEX
                            + " nor "
                            + SINGLE
                            + " (expected: one of them beside config.json)");
        }
        SafetensorsFile file = SafetensorsFile.open(single);
        opened.add(file);
        for (String name : file.tensors().keySet()) {
            fileOf.put(name, file);
        }
        return fileOf;
    }

    /** Checks every tensor the model needs; returns the experts' weight format, for logs. */
    private String check() {
        WeightNaming naming = config.architecture().naming();
        String format = null;
        for (int layer : config.moeLayers()) {
            for (int e = 0; e < config.experts(); e++) {
                String f = checkWeight(naming.w1(layer, e), config.ffn(), config.hidden());
                checkWeight(naming.w3(layer, e), config.ffn(), config.hidden());
                checkWeight(naming.w2(layer, e), config.hidden(), config.ffn());
                format = format == null ? f : format;
            }
            if (config.sharedExperts() > 0) {
                String prefix = sharedPrefix(layer);
                checkWeight(prefix + "gate_proj.weight", config.sharedExperts(), config.hidden());
                checkWeight(prefix + "up_proj.weight", config.sharedExperts(), config.hidden());
                checkWeight(prefix + "down_proj.weight", config.hidden(), config.sharedExperts());
                if (config.architecture() == HfArchitecture.QWEN2_MOE) {
                    checkShape(sharedGateName(layer), new long[] {1, config.hidden()});
                    floatDType(sharedGateName(layer));
                }
            }
            checkShape(naming.gate(layer), new long[] {config.experts(), config.hidden()});
            floatDType(naming.gate(layer));
            if (config.gate().scoring() == GateSpec.Scoring.SIGMOID) {
                checkShape(biasName(layer), new long[] {config.experts()});
                floatDType(biasName(layer));
            }
        }
        return format;
    }

    /** Checks one expert projection (and its FP8 scales); returns its format. */
    private String checkWeight(String name, int rows, int cols) {
        SafetensorsFile.TensorInfo info = checkShape(name, new long[] {rows, cols});
        if (!info.dtypeName().equals("F8_E4M3")) {
            return floatDType(name).name();
        }
        if (config.blockSize() == 0) {
            throw new IllegalArgumentException(
                    "tensor "
                            + name
                            + ".dtype: F8_E4M3 in "
                            + fileOf.get(name).path()
                            + " (expected: quantization_config.weight_block_size in config.json for FP8 weights)");
        }
        int b = config.blockSize();
        String scales = scaleName(name);
        checkShape(scales, new long[] {Math.ceilDiv(rows, b), Math.ceilDiv(cols, b)});
        floatDType(scales);
        return "F8_E4M3 (" + b + "x" + b + " block scales)";
    }

    private SafetensorsFile.TensorInfo checkShape(String name, long[] shape) {
        SafetensorsFile file = fileOf.get(name);
        if (file == null) {
            throw new IllegalArgumentException(
                    "tensor missing: "
                            + name
                            + " (expected in "
                            + (Files.exists(dir.resolve(INDEX))
                                    ? dir.resolve(INDEX)
                                    : dir.resolve(SINGLE))
                            + ")");
        }
        SafetensorsFile.TensorInfo info = file.require(name);
        if (!Arrays.equals(info.shape(), shape)) {
            throw new IllegalArgumentException(
                    "tensor "
                            + name
                            + ".shape: "
                            + Arrays.toString(info.shape())
                            + " in "
                            + file.path()
                            + " (expected: "
                            + Arrays.toString(shape)
                            + ")");
        }
        return info;
    }

    private DType floatDType(String name) {
        SafetensorsFile file = fileOf.get(name);
        return file.dtypeOf(file.require(name));
    }

    private static String scaleName(String weight) {
        return weight.substring(0, weight.length() - ".weight".length()) + ".weight_scale_inv";
    }

    /** DeepSeek's joint shared experts, or Qwen2-MoE's shared expert. */
    private String sharedPrefix(int layer) {
        return "model.layers."
                + layer
                + (config.architecture() == HfArchitecture.QWEN2_MOE
                        ? ".mlp.shared_expert."
                        : ".mlp.shared_experts.");
    }

    private static String sharedGateName(int layer) {
        return "model.layers." + layer + ".mlp.shared_expert_gate.weight";
    }

    private static String biasName(int layer) {
        return "model.layers." + layer + ".mlp.gate.e_score_correction_bias";
    }

    public HfConfig config() {
        return config;
    }

    @Override
    public int experts() {
        return config.experts();
    }

    @Override
    public int hidden() {
        return config.hidden();
    }

    @Override
    public int ffn() {
        return config.ffn();
    }

    @Override
    public int layers() {
        return config.moeLayers().length;
    }

    /** FP32 for FP8 checkpoints: their experts are dequantized to fp32 when loaded. */
    @Override
    public DType dtype() {
        return format.startsWith("F8") ? DType.FP32 : DType.valueOf(format);
    }

    @Override
    public ExpertWeights expert(int layer, int expert) {
        WeightNaming naming = config.architecture().naming();
        int l = config.moeLayers()[layer];
        return new ExpertWeights(
                config.hidden(),
                config.ffn(),
                read(naming.w1(l, expert), config.ffn(), config.hidden()),
                read(naming.w3(l, expert), config.ffn(), config.hidden()),
                read(naming.w2(l, expert), config.hidden(), config.ffn()));
    }

    @Override
    public HeldExpert heldExpert(int layer, int expert) {
        WeightNaming naming = config.architecture().naming();
        int l = config.moeLayers()[layer];
        Bf16Expert bf16 =
                Bf16Expert.stored(
                        config.hidden(),
                        config.ffn(),
                        fileOf::get,
                        naming.w1(l, expert),
                        naming.w3(l, expert),
                        naming.w2(l, expert));
        return bf16 != null ? bf16 : expert(layer, expert);
    }

    private FloatBuffer read(String name, int rows, int cols) {
        SafetensorsFile file = fileOf.get(name);
        if (!file.require(name).dtypeName().equals("F8_E4M3")) {
            return file.readFloats(name);
        }
        return fp8(name, rows, cols).dequantized();
    }

    /** An FP8 weight's codes and block scales, as stored. */
    private Fp8Matrix fp8(String name, int rows, int cols) {
        SafetensorsFile file = fileOf.get(name);
        float[] scales = fileOf.get(scaleName(name)).readFloatArray(scaleName(name));
        return new Fp8Matrix(
                file.readRaw(file.require(name)), scales, rows, cols, config.blockSize());
    }

    @Override
    public @Nullable Fp8Expert fp8Expert(int layer, int expert) {
        if (!format.startsWith("F8")) {
            return null;
        }
        WeightNaming naming = config.architecture().naming();
        int l = config.moeLayers()[layer];
        return new Fp8Expert(
                config.hidden(),
                config.ffn(),
                fp8(naming.w1(l, expert), config.ffn(), config.hidden()),
                fp8(naming.w3(l, expert), config.ffn(), config.hidden()),
                fp8(naming.w2(l, expert), config.hidden(), config.ffn()));
    }

    @Override
    public @Nullable SharedExpert sharedExpert(int layer) {
        if (config.sharedExperts() == 0) {
            return null;
        }
        int l = config.moeLayers()[layer];
        String prefix = sharedPrefix(l);
        int width = config.sharedExperts();
        ExpertWeights mlp =
                new ExpertWeights(
                        config.hidden(),
                        width,
                        read(prefix + "gate_proj.weight", width, config.hidden()),
                        read(prefix + "up_proj.weight", width, config.hidden()),
                        read(prefix + "down_proj.weight", config.hidden(), width));
        float[] gate =
                config.architecture() == HfArchitecture.QWEN2_MOE
                        ? fileOf.get(sharedGateName(l)).readFloatArray(sharedGateName(l))
                        : null;
        return new SharedExpert(mlp, gate);
    }

    @Override
    public float[] gate(int layer) {
        String name = config.architecture().naming().gate(config.moeLayers()[layer]);
        return fileOf.get(name).readFloatArray(name);
    }

    @Override
    public GateSpec gateSpec() {
        return config.gate();
    }

    @Override
    public float @Nullable [] gateBias(int layer) {
        if (config.gate().scoring() != GateSpec.Scoring.SIGMOID) {
            return null;
        }
        String name = biasName(config.moeLayers()[layer]);
        return fileOf.get(name).readFloatArray(name);
    }

    @Override
    public int[] layerNumbers() {
        return config.moeLayers().clone();
    }

    @Override
    public String architecture() {
        return config.architecture().className();
    }

    @Override
    public String weightFormat() {
        return format;
    }

    @Override
    public String description() {
        return dir.toAbsolutePath().toString();
    }

    @Override
    public void close() {
        files.forEach(SafetensorsFile::close);
    }
}
