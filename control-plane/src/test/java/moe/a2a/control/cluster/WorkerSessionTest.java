package moe.a2a.control.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.stub.StreamObserver;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.shm.ShmTransportProvider;
import moe.a2a.comm.tcp.TcpTransportProvider;
import moe.a2a.v1.ControlMessage;
import org.junit.jupiter.api.Test;

class WorkerSessionTest {
    static final long SECOND = TimeUnit.SECONDS.toNanos(1);

    private static WorkerSession session(String shmDomain) {
        return new WorkerSession(
                "worker-1",
                1,
                Set.of(TcpTransportProvider.TCP, ShmTransportProvider.SHM),
                "host-a",
                shmDomain,
                new StreamObserver<ControlMessage>() {
                    @Override
                    public void onNext(ControlMessage value) {}

                    @Override
                    public void onError(Throwable t) {}

                    @Override
                    public void onCompleted() {}
                });
    }

    @Test
    void shmShouldBePlannedAgainAfterARetryDelayThatDoublesEachTimeUpToTenMinutes() {
        WorkerSession s = session("host-a:/dev/shm");
        long t = 5 * SECOND;
        assertThat(s.offersShm(t)).isTrue();

        assertThat(s.withdrawShm(t)).isEqualTo(10 * SECOND);
        assertThat(s.offersShm(t + 10 * SECOND - 1)).isFalse();
        assertThat(s.offersShm(t + 10 * SECOND)).isTrue();

        t += 10 * SECOND;
        assertThat(s.withdrawShm(t)).isEqualTo(20 * SECOND);
        assertThat(s.offersShm(t + 19 * SECOND)).isFalse();
        assertThat(s.offersShm(t + 20 * SECOND)).isTrue();

        long delay = 0;
        for (int i = 0; i < 12; i++) {
            delay = s.withdrawShm(t);
        }
        assertThat(delay).as("the delay's cap").isEqualTo(WorkerSession.SHM_RETRY_MAX_NANOS);
        assertThat(s.offersShm(t + WorkerSession.SHM_RETRY_MAX_NANOS - 1)).isFalse();
    }

    @Test
    void shmShouldNotBeOfferedWithoutADomainWhateverTheTime() {
        assertThat(session("").offersShm(0)).isFalse();
        assertThat(session("").offersShm(Long.MAX_VALUE)).isFalse();
    }

    @Test
    void aNanoTimeThatWrapsShouldNotEndTheDelayEarly() {
        WorkerSession s = session("host-a:/dev/shm");
        long t = Long.MAX_VALUE - 2 * SECOND;
        s.withdrawShm(t);
        assertThat(s.offersShm(t + 5 * SECOND)).as("5 s after, across the wrap").isFalse();
        assertThat(s.offersShm(t + 10 * SECOND)).isTrue();
    }
}
