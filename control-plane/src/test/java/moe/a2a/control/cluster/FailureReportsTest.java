package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class FailureReportsTest {
    @Test
    void shouldNameEveryReportByRankWhateverOrderTheyArrivedIn() {
        FailureReports failures = new FailureReports("step");
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
    void shouldNameTheWorkTheReportsAreAbout() {
        FailureReports failures = new FailureReports("group epoch");
        failures.report(4, 2, "cannot connect to rank 1");
        assertThat(failures.take(4))
                .isEqualTo("group epoch 4 failed on rank 2: cannot connect to rank 1");
    }

    @Test
    void shouldKeepEachRanksFirstReportAndForgetAllOnClear() {
        FailureReports failures = new FailureReports("step");
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
