package moe.a2a.protocol;

import com.google.protobuf.CodedInputStream;
import com.google.protobuf.InvalidProtocolBufferException;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import moe.a2a.v1.RoutingTraceHeader;
import moe.a2a.v1.RoutingTraceStep;
import org.jspecify.annotations.Nullable;

/**
 * A routing trace: the expert ids served tokens chose, step by step ({@code routing_trace.proto}
 * documents the file). Immutable; the arrays of its steps are not copied.
 *
 * @param experts E: every id is in {@code [0, E)}
 * @param topK K, ids per token
 * @param ranks ranks that served the steps
 * @param stepsServed steps served when the trace was written, recorded or not
 * @param sampleEvery every how many served steps one was recorded
 */
public record RoutingTrace(
        int experts, int topK, int ranks, long stepsServed, int sampleEvery, List<Step> steps) {

    /** The 8 bytes every routing trace starts with. */
    public static final byte[] MAGIC = "MOEA2ART".getBytes(StandardCharsets.US_ASCII);

    public static final int VERSION = 1;

    /**
     * One recorded step.
     *
     * @param tokensPerRank the step's tokens per rank, in rank order
     * @param ids {@code [T, K]} expert ids, rank 0's tokens first
     */
    public record Step(long stepId, int layer, int[] tokensPerRank, int[] ids) {
        public int tokens() {
            return Arrays.stream(tokensPerRank).sum();
        }
    }

    public RoutingTrace {
        steps = List.copyOf(steps);
    }

    /** The steps of {@code layer}, in order. */
    public List<Step> layer(int layer) {
        return steps.stream().filter(s -> s.layer() == layer).toList();
    }

    /** The layers with recorded steps, ascending. */
    public int[] layers() {
        return steps.stream().mapToInt(Step::layer).distinct().sorted().toArray();
    }

    /**
     * Writes the trace to {@code file} whole or not at all: to {@code FILE.writing} beside it, then
     * moved over it. One writer per file at a time.
     */
    public void write(Path file) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".writing");
        try {
            try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(tmp))) {
                out.write(MAGIC);
                RoutingTraceHeader.newBuilder()
                        .setVersion(VERSION)
                        .setExperts(experts)
                        .setTopK(topK)
                        .setRanks(ranks)
                        .setSteps(steps.size())
                        .setStepsServed(stepsServed)
                        .setSampleEvery(sampleEvery)
                        .setWrittenUnixMs(System.currentTimeMillis())
                        .build()
                        .writeDelimitedTo(out);
                for (Step s : steps) {
                    RoutingTraceStep.Builder b =
                            RoutingTraceStep.newBuilder().setStepId(s.stepId()).setLayer(s.layer());
                    for (int t : s.tokensPerRank()) {
                        b.addTokensPerRank(t);
                    }
                    for (int id : s.ids()) {
                        b.addExpertIds(id);
                    }
                    b.build().writeDelimitedTo(out);
                }
            }
            Files.move(
                    tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    /**
     * Reads a trace, checking every id against the header.
     *
     * @throws IOException naming the file and what is wrong with it: not a routing trace, another
     *     version, truncated, or a step that does not match its header
     */
    public static RoutingTrace read(Path file) throws IOException {
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file))) {
            byte[] magic = in.readNBytes(MAGIC.length);
            if (!Arrays.equals(magic, MAGIC)) {
                throw bad(
                        file, "not a moe-a2a routing trace (it does not start with \"MOEA2ART\")");
            }
            RoutingTraceHeader h = parse(file, in, "the header", RoutingTraceHeader::parseFrom);
            if (h == null) {
                throw bad(file, "truncated: no header after the magic bytes");
            }
            if (h.getVersion() != VERSION) {
                throw bad(file, "version " + h.getVersion() + " (expected: " + VERSION + ")");
            }
            if (h.getExperts() <= 0 || h.getTopK() <= 0 || h.getTopK() > h.getExperts()) {
                throw bad(
                        file,
                        "header: experts "
                                + h.getExperts()
                                + ", top_k "
                                + h.getTopK()
                                + " (expected: 0 < top_k <= experts)");
            }
            if (h.getRanks() <= 0 || h.getSteps() < 0) {
                throw bad(
                        file,
                        "header: ranks "
                                + Integer.toUnsignedString(h.getRanks())
                                + ", steps "
                                + Integer.toUnsignedString(h.getSteps())
                                + " (expected: ranks > 0)");
            }
            List<Step> steps = new ArrayList<>();
            for (int i = 0; i < h.getSteps(); i++) {
                RoutingTraceStep s =
                        parse(
                                file,
                                in,
                                "step " + i + " of " + h.getSteps(),
                                RoutingTraceStep::parseFrom);
                if (s == null) {
                    throw bad(
                            file,
                            "truncated: " + i + " steps of the " + h.getSteps() + " announced");
                }
                steps.add(step(file, h, i, s));
            }
            if (in.read() != -1) {
                throw bad(file, "bytes after the " + h.getSteps() + " steps announced");
            }
            return new RoutingTrace(
                    h.getExperts(),
                    h.getTopK(),
                    h.getRanks(),
                    h.getStepsServed(),
                    h.getSampleEvery(),
                    steps);
        }
    }

    /** A message's parser: protobuf's parseFrom. */
    private interface Parser<T> {
        T parse(byte[] bytes) throws InvalidProtocolBufferException;
    }

    /**
     * The next length-delimited message, or null at the end of the file. Read whole before parsing:
     * protobuf's own parseDelimitedFrom takes a message cut at a field boundary for a shorter one.
     */
    private static <T> @Nullable T parse(Path file, InputStream in, String what, Parser<T> parser)
            throws IOException {
        int first = in.read();
        if (first == -1) {
            return null;
        }
        try {
            int length = CodedInputStream.readRawVarint32(first, in);
            byte[] bytes = in.readNBytes(length);
            if (bytes.length < length) {
                throw bad(
                        file,
                        "truncated in "
                                + what
                                + ": "
                                + bytes.length
                                + " of its "
                                + length
                                + " bytes");
            }
            return parser.parse(bytes);
        } catch (InvalidProtocolBufferException e) {
            throw bad(file, "truncated or corrupt in " + what + " (" + e.getMessage() + ")");
        }
    }

    private static Step step(Path file, RoutingTraceHeader h, int i, RoutingTraceStep s)
            throws IOException {
        if (s.getTokensPerRankCount() != h.getRanks()) {
            throw bad(
                    file,
                    "step "
                            + i
                            + ": tokens_per_rank has "
                            + s.getTokensPerRankCount()
                            + " ranks (expected: "
                            + h.getRanks()
                            + ")");
        }
        int[] perRank = s.getTokensPerRankList().stream().mapToInt(Integer::intValue).toArray();
        long tokens = 0;
        for (int t : perRank) {
            tokens += Integer.toUnsignedLong(t);
        }
        if (s.getExpertIdsCount() != tokens * h.getTopK()) {
            throw bad(
                    file,
                    "step "
                            + i
                            + ": "
                            + s.getExpertIdsCount()
                            + " expert_ids (expected: "
                            + tokens
                            + " tokens × top_k "
                            + h.getTopK()
                            + ")");
        }
        int[] ids = new int[s.getExpertIdsCount()];
        for (int j = 0; j < ids.length; j++) {
            int id = s.getExpertIds(j);
            if (id < 0 || id >= h.getExperts()) {
                throw bad(
                        file,
                        "step "
                                + i
                                + ": expert id "
                                + Integer.toUnsignedString(id)
                                + " (expected: 0.."
                                + (h.getExperts() - 1)
                                + ")");
            }
            ids[j] = id;
        }
        if (s.getLayer() < 0) {
            throw bad(file, "step " + i + ": layer " + s.getLayer() + " (expected: >= 0)");
        }
        return new Step(s.getStepId(), s.getLayer(), perRank, ids);
    }

    private static IOException bad(Path file, String what) {
        return new IOException("routing trace " + file + ": " + what);
    }
}
