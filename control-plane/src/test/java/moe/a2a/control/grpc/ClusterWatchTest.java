package moe.a2a.control.grpc;

import static org.assertj.core.api.Assertions.assertThat;

import io.grpc.ManagedChannel;
import io.grpc.Server;
import io.grpc.inprocess.InProcessChannelBuilder;
import io.grpc.inprocess.InProcessServerBuilder;
import io.grpc.stub.StreamObserver;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import moe.a2a.v1.ClusterState;
import moe.a2a.v1.DescribeClusterRequest;
import moe.a2a.v1.MoeServiceGrpc;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * ClusterWatch on its own: the state at once, each change once (a state looked at again unchanged
 * is not sent), and the call ended OK when the watch closes.
 */
@Timeout(30)
class ClusterWatchTest {

    @Test
    void shouldSendEachChangeOnceAndEndOkOnClose() throws Exception {
        AtomicReference<ClusterState> now = new AtomicReference<>(state(1, false, "forming"));
        ClusterWatch watch = new ClusterWatch(now::get);
        String name = InProcessServerBuilder.generateName();
        Server server =
                InProcessServerBuilder.forName(name)
                        .addService(
                                new MoeServiceGrpc.MoeServiceImplBase() {
                                    @Override
                                    public void watchCluster(
                                            DescribeClusterRequest request,
                                            StreamObserver<ClusterState> responses) {
                                        watch.watch(responses);
                                    }
                                })
                        .build()
                        .start();
        ManagedChannel channel = InProcessChannelBuilder.forName(name).build();
        LinkedBlockingQueue<Object> got = new LinkedBlockingQueue<>();
        try {
            MoeServiceGrpc.newStub(channel)
                    .watchCluster(
                            DescribeClusterRequest.getDefaultInstance(),
                            new StreamObserver<>() {
                                @Override
                                public void onNext(ClusterState state) {
                                    got.add(state);
                                }

                                @Override
                                public void onError(Throwable t) {
                                    got.add(t);
                                }

                                @Override
                                public void onCompleted() {
                                    got.add("completed");
                                }
                            });
            assertThat(got.poll(5, TimeUnit.SECONDS)).isEqualTo(state(1, false, "forming"));
            Thread.sleep(3 * ClusterWatch.PERIOD_MILLIS);
            assertThat(got).as("nothing new to send").isEmpty();
            now.set(state(2, true, ""));
            assertThat(got.poll(5, TimeUnit.SECONDS)).isEqualTo(state(2, true, ""));
            Thread.sleep(3 * ClusterWatch.PERIOD_MILLIS);
            assertThat(got).isEmpty();
            watch.close();
            assertThat(got.poll(5, TimeUnit.SECONDS)).isEqualTo("completed");
        } finally {
            watch.close();
            channel.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
            server.shutdownNow().awaitTermination(5, TimeUnit.SECONDS);
        }
    }

    private static ClusterState state(long epoch, boolean serving, String reason) {
        return ClusterState.newBuilder()
                .setEpoch(epoch)
                .setServing(serving)
                .setReason(reason)
                .setWorldSize(2)
                .build();
    }
}
