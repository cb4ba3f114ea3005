package moe.a2a.client;

import io.grpc.CallCredentials;
import io.grpc.ChannelCredentials;
import io.grpc.CompositeChannelCredentials;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.TlsChannelCredentials;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * Where the clients come from: {@code
 * MoeClients.builder("host:50051").tls(ca).token(t).blocking()}.
 */
public final class MoeClients {
    private MoeClients() {}

    public static Builder builder(String target) {
        return new Builder(target);
    }

    /** A client's channel and call options. Not thread-safe; each build opens a channel. */
    public static final class Builder {
        private final String target;
        private ChannelCredentials channel = InsecureChannelCredentials.create();
        private @Nullable CallCredentials token;
        private @Nullable Duration deadline;
        private int maxInboundMessageSize = Integer.MAX_VALUE;

        private Builder(String target) {
            this.target = target;
        }

        /** TLS, trusting the JDK's certificate authorities. */
        public Builder tls() {
            channel = TlsChannelCredentials.create();
            return this;
        }

        /** TLS, trusting the PEM certificate authority in {@code caPem}. */
        public Builder tls(Path caPem) {
            try {
                channel = TlsChannelCredentials.newBuilder().trustManager(caPem.toFile()).build();
            } catch (IOException e) {
                throw new UncheckedIOException("tls: cannot read " + caPem, e);
            }
            return this;
        }

        /** Any channel credentials (client certificates, say), in place of {@link #tls}. */
        public Builder credentials(ChannelCredentials credentials) {
            channel = credentials;
            return this;
        }

        /** Sends {@code Authorization: Bearer token} with every call. */
        public Builder token(String bearer) {
            token = new Bearer(bearer);
            return this;
        }

        /** As {@link #token(String)}, the token being the first line of {@code file}. */
        public Builder tokenFile(Path file) {
            try {
                return token(Files.readAllLines(file).get(0).strip());
            } catch (IOException | IndexOutOfBoundsException e) {
                throw new IllegalArgumentException("tokenFile: " + file + " has no token", e);
            }
        }

        /** Every call's deadline, from when it starts (none by default). */
        public Builder deadline(Duration perCall) {
            deadline = perCall;
            return this;
        }

        /** The largest answer accepted, in bytes (default: no limit). */
        public Builder maxInboundMessageSize(int bytes) {
            maxInboundMessageSize = bytes;
            return this;
        }

        public MoeClient blocking() {
            return new MoeClient(channel(), deadline);
        }

        public MoeAsyncClient async() {
            return new MoeAsyncClient(channel(), deadline);
        }

        private ManagedChannel channel() {
            ChannelCredentials creds =
                    token == null ? channel : CompositeChannelCredentials.create(channel, token);
            return Grpc.newChannelBuilder(target, creds)
                    .maxInboundMessageSize(maxInboundMessageSize)
                    .build();
        }
    }

    /** The bearer token header, on every call, plaintext or TLS. */
    private static final class Bearer extends CallCredentials {
        private static final Metadata.Key<String> AUTHORIZATION =
                Metadata.Key.of("authorization", Metadata.ASCII_STRING_MARSHALLER);
        private final String header;

        Bearer(String token) {
            if (token.isBlank()) {
                throw new IllegalArgumentException("token: empty");
            }
            this.header = "Bearer " + token;
        }

        @Override
        public void applyRequestMetadata(RequestInfo info, Executor executor, MetadataApplier to) {
            Metadata headers = new Metadata();
            headers.put(AUTHORIZATION, header);
            to.apply(headers);
        }
    }
}
