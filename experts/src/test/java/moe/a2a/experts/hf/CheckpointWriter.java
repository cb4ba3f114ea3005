package moe.a2a.experts.hf;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Writes a Hugging Face checkpoint directory from the formats alone, for tests: {@code
 * config.json}, and safetensors files (an 8-byte little-endian header length, the JSON header with
 * each tensor's dtype, shape and data offsets, then the data) in one file or in shards with {@code
 * model.safetensors.index.json}. Tensors are given as the bytes they are stored as.
 */
public final class CheckpointWriter {
    private record Tensor(String dtype, long[] shape, byte[] data) {}

    private final Map<String, Tensor> tensors = new LinkedHashMap<>();

    public CheckpointWriter add(String name, String dtype, long[] shape, byte[] data) {
        tensors.put(name, new Tensor(dtype, shape, data));
        return this;
    }

    /** F32 values, little-endian. */
    public static byte[] f32(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            b.putFloat(v);
        }
        return b.array();
    }

    /** BF16: the upper 16 bits of each F32 (the values given must be exact in BF16). */
    public static byte[] bf16(float[] values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) {
            b.putShort((short) (Float.floatToIntBits(v) >>> 16));
        }
        return b.array();
    }

    /** Writes {@code config} and the tensors, over {@code shards} files (1: model.safetensors). */
    public void write(Path dir, JsonObject config, int shards) throws IOException {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        List<String> names = new ArrayList<>(tensors.keySet());
        if (shards == 1) {
            writeFile(dir.resolve("model.safetensors"), names);
            return;
        }
        JsonObject weightMap = new JsonObject();
        for (int s = 0; s < shards; s++) {
            String file =
                    String.format(Locale.ROOT, "model-%05d-of-%05d.safetensors", s + 1, shards);
            List<String> part = new ArrayList<>();
            for (int i = s; i < names.size(); i += shards) {
                part.add(names.get(i));
                weightMap.addProperty(names.get(i), file);
            }
            writeFile(dir.resolve(file), part);
        }
        JsonObject index = new JsonObject();
        index.add("metadata", new JsonObject());
        index.add("weight_map", weightMap);
        Files.writeString(
                dir.resolve("model.safetensors.index.json"),
                index.toString(),
                StandardCharsets.UTF_8);
    }

    private void writeFile(Path file, List<String> names) throws IOException {
        JsonObject header = new JsonObject();
        long offset = 0;
        for (String name : names) {
            Tensor t = tensors.get(name);
            JsonObject o = new JsonObject();
            o.addProperty("dtype", t.dtype());
            JsonArray shape = new JsonArray();
            for (long d : t.shape()) {
                shape.add(d);
            }
            o.add("shape", shape);
            JsonArray offsets = new JsonArray();
            offsets.add(offset);
            offsets.add(offset + t.data().length);
            o.add("data_offsets", offsets);
            header.add(name, o);
            offset += t.data().length;
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer out =
                ByteBuffer.allocate((int) (8 + json.length + offset))
                        .order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(json.length).put(json);
        for (String name : names) {
            out.put(tensors.get(name).data());
        }
        Files.write(file, out.array());
    }
}
