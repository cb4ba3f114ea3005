package moe.a2a.experts;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import moe.a2a.kernels.DType;

/**
 * Reads a safetensors file: an 8-byte little-endian header length, a JSON header naming each
 * tensor's dtype, shape and byte range, then the raw data. Tensors are widened to fp32 when read.
 * Only F32, BF16 and F16 tensors can be read. Thread-safe: reads use positional I/O.
 */
public final class SafetensorsFile implements AutoCloseable {
    /** Refuse headers larger than this; real checkpoints stay far below it. */
    private static final long MAX_HEADER_BYTES = 100L << 20;

    /**
     * One tensor's entry in the header. {@code begin} and {@code end} are absolute file offsets.
     */
    public record TensorInfo(String name, String dtypeName, long[] shape, long begin, long end) {
        public long elements() {
            long n = 1;
            for (long d : shape) {
                n *= d;
            }
            return n;
        }
    }

    private final Path path;
    private final FileChannel channel;
    private final Map<String, TensorInfo> tensors;

    private SafetensorsFile(Path path, FileChannel channel, Map<String, TensorInfo> tensors) {
        this.path = path;
        this.channel = channel;
        this.tensors = tensors;
    }

    /** Opens {@code path} and parses its header; data is read on demand. */
    public static SafetensorsFile open(Path path) {
        FileChannel channel = null;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
            ByteBuffer lengthBytes = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            readFully(channel, lengthBytes, 0, path);
            long headerBytes = lengthBytes.getLong(0);
            long fileBytes = channel.size();
            if (headerBytes <= 0 || headerBytes > MAX_HEADER_BYTES || 8 + headerBytes > fileBytes) {
                throw new IllegalArgumentException(
                        "safetensors header length: "
                                + headerBytes
                                + " (expected: in [1, "
                                + Math.min(MAX_HEADER_BYTES, fileBytes - 8)
                                + "]) in "
                                + path);
            }
            ByteBuffer header = ByteBuffer.allocate((int) headerBytes);
            readFully(channel, header, 8, path);
            String json = new String(header.array(), StandardCharsets.UTF_8);
            Map<String, TensorInfo> tensors = parseHeader(json, 8 + headerBytes, fileBytes, path);
            return new SafetensorsFile(path, channel, Collections.unmodifiableMap(tensors));
        } catch (IOException e) {
            closeQuietly(channel);
            throw new UncheckedIOException("cannot read safetensors file " + path, e);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        }
    }

    public Path path() {
        return path;
    }

    /** Every tensor in the file, in header order. */
    public Map<String, TensorInfo> tensors() {
        return tensors;
    }

    /** The tensor's data as fp32 in a new off-heap buffer. */
    public FloatBuffer readFloats(String name) {
        TensorInfo info = require(name);
        FloatBuffer out = Buffers.floats(info.elements());
        DType dtype = dtypeOf(info);
        // the row kernels widen whole rows at once (both sides little-endian off-heap memory)
        dtype.decode(
                MemorySegment.ofBuffer(readRaw(info)),
                0,
                MemorySegment.ofBuffer(out),
                0,
                Math.toIntExact(info.elements()));
        return out;
    }

    /** The tensor's data as a new fp32 array. */
    public float[] readFloatArray(String name) {
        TensorInfo info = require(name);
        float[] out = new float[Math.toIntExact(info.elements())];
        dtypeOf(info).decode(readRaw(info), 0, out, 0, out.length);
        return out;
    }

    /** The dtype of {@code name}, or an error naming the tensor if it is not F32/BF16/F16. */
    public DType dtypeOf(TensorInfo info) {
        switch (info.dtypeName()) {
            case "F32":
                return DType.FP32;
            case "BF16":
                return DType.BF16;
            case "F16":
                return DType.FP16;
            default:
                throw new IllegalArgumentException(
                        "tensor "
                                + info.name()
                                + ".dtype: "
                                + info.dtypeName()
                                + " (expected: F32, BF16 or F16) in "
                                + path);
        }
    }

    public TensorInfo require(String name) {
        TensorInfo info = tensors.get(name);
        if (info == null) {
            throw new IllegalArgumentException("tensor missing: " + name + " in " + path);
        }
        return info;
    }

    @Override
    public void close() {
        closeQuietly(channel);
    }

    /** The tensor's bytes as stored, mapped read-only (little-endian). */
    public ByteBuffer readRaw(TensorInfo info) {
        try {
            return channel.map(
                            FileChannel.MapMode.READ_ONLY, info.begin(), info.end() - info.begin())
                    .order(ByteOrder.LITTLE_ENDIAN);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot read tensor " + info.name() + " from " + path, e);
        }
    }

    /**
     * The tensor's bytes as stored, read into off-heap memory of their own: a copy that keeps no
     * page of the file resident, where a mapping would until it is collected.
     */
    public MemorySegment readStored(TensorInfo info) {
        MemorySegment to = Arena.ofAuto().allocate(info.end() - info.begin(), 64);
        try {
            readFully(channel, to.asByteBuffer(), info.begin(), path);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot read tensor " + info.name() + " from " + path, e);
        }
        return to;
    }

    private static Map<String, TensorInfo> parseHeader(
            String json, long dataStart, long fileBytes, Path path) {
        JsonObject root;
        try {
            root = JsonParser.parseString(json).getAsJsonObject();
        } catch (JsonParseException | IllegalStateException e) {
            throw new IllegalArgumentException(
                    "safetensors header is not a JSON object in " + path, e);
        }
        Map<String, TensorInfo> tensors = new LinkedHashMap<>();
        for (Map.Entry<String, JsonElement> entry : root.entrySet()) {
            if (entry.getKey().equals("__metadata__")) {
                continue;
            }
            String name = entry.getKey();
            try {
                JsonObject t = entry.getValue().getAsJsonObject();
                String dtype = t.get("dtype").getAsString();
                var shapeJson = t.getAsJsonArray("shape");
                long[] shape = new long[shapeJson.size()];
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = shapeJson.get(i).getAsLong();
                }
                var offsets = t.getAsJsonArray("data_offsets");
                long begin = dataStart + offsets.get(0).getAsLong();
                long end = dataStart + offsets.get(1).getAsLong();
                if (begin > end || end > fileBytes) {
                    throw new IllegalArgumentException(
                            "tensor "
                                    + name
                                    + ".data_offsets: ["
                                    + (begin - dataStart)
                                    + ", "
                                    + (end - dataStart)
                                    + "] (expected: within "
                                    + (fileBytes - dataStart)
                                    + " data bytes) in "
                                    + path);
                }
                TensorInfo info = new TensorInfo(name, dtype, shape, begin, end);
                int elementBytes = dtype.equals("F32") ? 4 : 2;
                if ((dtype.equals("F32") || dtype.equals("BF16") || dtype.equals("F16"))
                        && info.elements() * elementBytes != end - begin) {
                    throw new IllegalArgumentException(
                            "tensor "
                                    + name
                                    + ": "
                                    + (end - begin)
                                    + " bytes (expected: "
                                    + info.elements() * elementBytes
                                    + " for its shape and dtype) in "
                                    + path);
                }
                tensors.put(name, info);
            } catch (NullPointerException
                    | IllegalStateException
                    | UnsupportedOperationException
                    | IndexOutOfBoundsException
                    | NumberFormatException e) {
                throw new IllegalArgumentException(
                        "tensor "
                                + name
                                + ": malformed header entry (expected: dtype, shape, data_offsets) in "
                                + path,
                        e);
            }
        }
        return tensors;
    }

    private static void readFully(FileChannel channel, ByteBuffer dst, long position, Path path)
            throws IOException {
        long at = position;
        while (dst.hasRemaining()) {
            int n = channel.read(dst, at);
            if (n < 0) {
                throw new IllegalArgumentException("safetensors file truncated: " + path);
            }
            at += n;
        }
    }

    private static void closeQuietly(FileChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing left to release
            }
        }
    }
}
