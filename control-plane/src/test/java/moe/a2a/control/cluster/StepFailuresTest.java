package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StepFailuresTest {
    @Test
    void shouldNameEveryReportByRankWhateverOrderTheyArrivedIn() {
        StepFailures failures = new StepFailures();
        assertThat(failures.report(7, 1, "peer=0, reason=connection closed")).isTrue();
        assertThat(failures.allReported(7, 2)).isFalse();
        assertThat(failures.report(7, 0, "peer=1, counts disagree")).isFalse();
        assertThat(failures.allReported(7, 2)).isTrue();

        assertThat(failures.take(7))
                .isEqualTo(
                        "step 7 failed on rank 0: peer=1, counts disagree;"
                                + " on rank 1: peer=0, reason=connection closed");
        assertThat(failures.take(7)).as("taken once").isNull();
    }

    @Test
    void shouldKeepEachRanksFirstReportAndForgetAllOnClear() {
        StepFailures failures = new StepFailures();
        failures.report(3, 2, "first");
        failures.report(3, 2, "second");
        failures.report(4, 0, "other step");
        assertThat(failures.allReported(3, 2)).isFalse();
        assertThat(failures.take(3)).isEqualTo("step 3 failed on rank 2: first");

        failures.clear();
        assertThat(failures.take(4)).isNull();
        assertThat(failures.allReported(4, 1)).isFalse();
    }
}
