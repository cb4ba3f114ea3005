package moe.a2a.workload;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The fingerprints published with the benchmark definition, which the peer harnesses also print.
 */
class BenchRoutingTest {

    @ParameterizedTest
    @CsvSource({
        "decode, 2db17c1a8926b832",
        "prefill, da24c122f2dd9b10",
        "prefill-skew, 5ab026f2f7226fed",
        "prefill-skew-perm, eb71bebf78a117a6",
        "prefill-n2, 2ca54de00fb4645e",
        "prefill-n8, 556ad903063d5ae2"
    })
    void shouldReproducePublishedFingerprint(String workload, String fingerprint) {
        assertThat(BenchRouting.fingerprint(BenchRouting.rows(BenchWorkload.named(workload))))
                .isEqualTo(fingerprint);
    }
}
