package moe.a2a.comm.nccl;

import static org.assertj.core.api.Assertions.assertThat;

import moe.a2a.comm.A2aException;
import moe.a2a.comm.PeerFailedException;
import org.junit.jupiter.api.Test;

/** Error-code mapping, checked against the numbers of NCCL's ncclResult_t. */
class NcclResultsTest {
    @Test
    void shouldNameEveryResultCodeAsTheHeaderDoes() {
        String[] names = {
            "ncclSuccess",
            "ncclUnhandledCudaError",
            "ncclSystemError",
            "ncclInternalError",
            "ncclInvalidArgument",
            "ncclInvalidUsage",
            "ncclRemoteError",
            "ncclInProgress"
        };
        for (int code = 0; code < names.length; code++) {
            assertThat(NcclResults.name(code)).isEqualTo(names[code]);
        }
        assertThat(NcclResults.name(42)).isEqualTo("ncclResult(42)");
    }

    @Test
    void shouldTreatOnlySuccessAndInProgressAsNoError() {
        assertThat(NcclResults.isError(0)).isFalse();
        assertThat(NcclResults.isError(7)).isFalse();
        for (int code : new int[] {1, 2, 3, 4, 5, 6, 8}) {
            assertThat(NcclResults.isError(code)).as("code %d", code).isTrue();
        }
    }

    @Test
    void shouldMapRemoteErrorToPeerFailureAndOthersToGroupFailure() {
        A2aException remote = NcclResults.failure(6, "ncclGroupEnd", 1, "peer 3 exited");
        assertThat(remote)
                .isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("rank=1")
                .hasMessageContaining("ncclRemoteError (6): peer 3 exited");
        A2aException cuda = NcclResults.failure(1, "ncclSend", 0, "");
        assertThat(cuda)
                .isNotInstanceOf(PeerFailedException.class)
                .hasMessage(
                        "nccl call failed on rank 0: ncclSend returned ncclUnhandledCudaError (1)");
    }
}
