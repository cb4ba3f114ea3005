package moe.a2a.experts;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import moe.a2a.kernels.DType;

/**
 * Writes fp32 arrays as a safetensors file in F32, BF16 or F16. Used to export weights that other
 * tools (and tests) can load. Not thread-safe; one writer per file.
 */
public final class SafetensorsWriter {
    private record Entry(DType dtype, long[] shape, float[] data) {}

    private final Map<String, Entry> tensors = new LinkedHashMap<>();

    /** Adds a tensor; {@code data} is row-major and has {@code product(shape)} elements. */
    public SafetensorsWriter add(String name, DType dtype, long[] shape, float[] data) {
        long n = 1;
        for (long d : shape) {
            n *= d;
        }
        if (n != data.length) {
            throw new IllegalArgumentException(
                    name
                            + ".data.length: "
                            + data.length
                            + " (expected: "
                            + n
                            + ", the product of the shape)");
        }
        tensors.put(name, new Entry(dtype, shape.clone(), data));
        return this;
    }

    public void write(Path path) throws IOException {
        JsonObject header = new JsonObject();
        long offset = 0;
        for (Map.Entry<String, Entry> e : tensors.entrySet()) {
            Entry t = e.getValue();
            JsonObject o = new JsonObject();
            o.addProperty("dtype", safetensorsName(t.dtype()));
            JsonArray shape = new JsonArray();
            for (long d : t.shape()) {
                shape.add(d);
            }
            o.add("shape", shape);
            long bytes = (long) t.data().length * t.dtype().sizeBytes();
            JsonArray offsets = new JsonArray();
            offsets.add(offset);
            offsets.add(offset + bytes);
            o.add("data_offsets", offsets);
            header.add(e.getKey(), o);
            offset += bytes;
        }
        StringBuilder json = new StringBuilder(header.toString());
        while ((json.length() + 8) % 8 != 0) {
            json.append(' '); // the format allows trailing spaces; they align the data to 8 bytes
        }
        byte[] headerBytes = json.toString().getBytes(StandardCharsets.UTF_8);
        try (FileChannel out =
                FileChannel.open(
                        path,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.TRUNCATE_EXISTING,
                        StandardOpenOption.WRITE)) {
            ByteBuffer prefix =
                    ByteBuffer.allocate(8 + headerBytes.length).order(ByteOrder.LITTLE_ENDIAN);
            prefix.putLong(headerBytes.length).put(headerBytes).flip();
            writeFully(out, prefix);
            for (Entry t : tensors.values()) {
                ByteBuffer data =
                        ByteBuffer.allocate(t.data().length * t.dtype().sizeBytes())
                                .order(ByteOrder.LITTLE_ENDIAN);
                t.dtype().encode(t.data(), 0, t.data().length, data, 0);
                writeFully(out, data);
            }
        }
    }

    private static String safetensorsName(DType dtype) {
        switch (dtype) {
            case BF16:
                return "BF16";
            case FP16:
                return "F16";
            default:
                return "F32";
        }
    }

    private static void writeFully(FileChannel out, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            out.write(buffer);
        }
    }
}
