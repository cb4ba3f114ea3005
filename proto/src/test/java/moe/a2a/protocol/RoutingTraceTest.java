package moe.a2a.protocol;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.SplittableRandom;
import moe.a2a.v1.RoutingTraceHeader;
import moe.a2a.v1.RoutingTraceStep;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RoutingTraceTest {
    @TempDir Path dir;

    /** Random steps over {@code ranks} ranks: uneven tokens per rank, some ranks with none. */
    static RoutingTrace random(long seed, int experts, int topK, int ranks, int steps) {
        SplittableRandom rnd = new SplittableRandom(seed);
        List<RoutingTrace.Step> out = new ArrayList<>();
        for (int s = 0; s < steps; s++) {
            int[] perRank = new int[ranks];
            for (int r = 0; r < ranks; r++) {
                perRank[r] = rnd.nextInt(4) == 0 ? 0 : rnd.nextInt(1, 40);
            }
            int[] ids = new int[Arrays.stream(perRank).sum() * topK];
            for (int i = 0; i < ids.length; i++) {
                ids[i] = rnd.nextInt(experts);
            }
            out.add(new RoutingTrace.Step(100 + s, rnd.nextInt(3), perRank, ids));
        }
        return new RoutingTrace(experts, topK, ranks, 7L * steps, 7, out);
    }

    @Test
    void shouldReadBackEveryStepAsWritten() throws IOException {
        RoutingTrace trace = random(3, 64, 6, 4, 25);
        Path file = dir.resolve("trace.bin");
        trace.write(file);
        RoutingTrace back = RoutingTrace.read(file);
        assertThat(back.experts()).isEqualTo(64);
        assertThat(back.topK()).isEqualTo(6);
        assertThat(back.ranks()).isEqualTo(4);
        assertThat(back.stepsServed()).isEqualTo(175);
        assertThat(back.sampleEvery()).isEqualTo(7);
        assertThat(back.steps()).hasSize(25);
        for (int s = 0; s < 25; s++) {
            RoutingTrace.Step want = trace.steps().get(s);
            RoutingTrace.Step got = back.steps().get(s);
            assertThat(got.stepId()).isEqualTo(want.stepId());
            assertThat(got.layer()).isEqualTo(want.layer());
            assertThat(got.tokensPerRank()).containsExactly(want.tokensPerRank());
            assertThat(got.ids()).containsExactly(want.ids());
        }
        assertThat(back.layer(1))
                .hasSize((int) trace.steps().stream().filter(x -> x.layer() == 1).count());
        assertThat(Files.list(dir)).containsExactly(file);
    }

    @Test
    void shouldNameTheFileAndTheCutWhenTruncated() throws IOException {
        Path whole = dir.resolve("whole.bin");
        random(5, 32, 4, 2, 6).write(whole);
        byte[] bytes = Files.readAllBytes(whole);
        SplittableRandom rnd = new SplittableRandom(11);
        for (int i = 0; i < 40; i++) {
            int cut = rnd.nextInt(RoutingTrace.MAGIC.length, bytes.length);
            Path file = dir.resolve("cut.bin");
            Files.write(file, Arrays.copyOf(bytes, cut));
            assertThatThrownBy(() -> RoutingTrace.read(file))
                    .as("cut at %d of %d", cut, bytes.length)
                    .isInstanceOf(IOException.class)
                    .hasMessageStartingWith("routing trace " + file + ": ")
                    .hasMessageContaining("truncated");
        }
    }

    @Test
    void shouldRefuseAForeignFile() throws IOException {
        Path json = dir.resolve("loads.json");
        Files.writeString(json, "{\"loads\": [1, 2, 3, 4, 5, 6, 7, 8]}");
        assertThatThrownBy(() -> RoutingTrace.read(json))
                .isInstanceOf(IOException.class)
                .hasMessage(
                        "routing trace "
                                + json
                                + ": not a moe-a2a routing trace (it does not start with"
                                + " \"MOEA2ART\")");
        Path empty = dir.resolve("empty.bin");
        Files.write(empty, new byte[0]);
        assertThatThrownBy(() -> RoutingTrace.read(empty))
                .hasMessageContaining("not a moe-a2a routing trace");
    }

    @Test
    void shouldRefuseAnotherVersion() throws IOException {
        Path file =
                written(
                        RoutingTraceHeader.newBuilder()
                                .setVersion(2)
                                .setExperts(8)
                                .setTopK(2)
                                .setRanks(1)
                                .build());
        assertThatThrownBy(() -> RoutingTrace.read(file))
                .hasMessage("routing trace " + file + ": version 2 (expected: 1)");
    }

    @Test
    void shouldRefuseAnIdOutsideTheExpertsAndACountThatDoesNotMatch() throws IOException {
        RoutingTraceHeader header =
                RoutingTraceHeader.newBuilder()
                        .setVersion(1)
                        .setExperts(8)
                        .setTopK(2)
                        .setRanks(2)
                        .setSteps(1)
                        .build();
        Path outside =
                written(
                        header,
                        RoutingTraceStep.newBuilder()
                                .addTokensPerRank(1)
                                .addTokensPerRank(1)
                                .addAllExpertIds(List.of(0, 1, 7, 8))
                                .build());
        assertThatThrownBy(() -> RoutingTrace.read(outside))
                .hasMessage("routing trace " + outside + ": step 0: expert id 8 (expected: 0..7)");
        Path short1 =
                written(
                        header,
                        RoutingTraceStep.newBuilder()
                                .addTokensPerRank(1)
                                .addTokensPerRank(1)
                                .addAllExpertIds(List.of(0, 1, 7))
                                .build());
        assertThatThrownBy(() -> RoutingTrace.read(short1))
                .hasMessage(
                        "routing trace "
                                + short1
                                + ": step 0: 3 expert_ids (expected: 2 tokens × top_k 2)");
    }

    private Path written(RoutingTraceHeader header, RoutingTraceStep... steps) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write("MOEA2ART".getBytes(StandardCharsets.US_ASCII));
        header.writeDelimitedTo(out);
        for (RoutingTraceStep s : steps) {
            s.writeDelimitedTo(out);
        }
        Path file = Files.createTempFile(dir, "trace", ".bin");
        Files.write(file, out.toByteArray());
        return file;
    }
}
