package moe.a2a.cli;

import io.grpc.ChannelCredentials;
import io.grpc.CompositeChannelCredentials;
import io.grpc.InsecureChannelCredentials;
import io.grpc.ManagedChannel;
import io.grpc.netty.NettyChannelBuilder;
import java.nio.file.Path;
import moe.a2a.control.security.BearerToken;
import moe.a2a.control.security.TlsFiles;
import picocli.CommandLine.Option;

/**
 * How a command reaches a moe-a2a gRPC port: plaintext by default; TLS with {@code --tls} (the
 * JDK's authorities) or {@code --tls-ca}; a client certificate with {@code --tls-cert}/{@code
 * --tls-key} (workers, for the cluster port's mutual TLS and the data plane); a bearer token with
 * {@code --auth-token-file}.
 */
final class ChannelOptions {
    @Option(
            names = "--tls",
            description =
                    "Use TLS, trusting the JDK's certificate authorities (implied by --tls-ca).")
    boolean tls;

    @Option(
            names = "--tls-ca",
            paramLabel = "FILE",
            description = "Use TLS, trusting the PEM certificate authority in FILE.")
    Path tlsCa;

    @Option(
            names = "--tls-cert",
            paramLabel = "FILE",
            description = "PEM certificate chain to present (mutual TLS).")
    Path tlsCert;

    @Option(
            names = "--tls-key",
            paramLabel = "FILE",
            description = "PKCS#8 PEM private key of --tls-cert.")
    Path tlsKey;

    @Option(
            names = "--auth-token-file",
            paramLabel = "FILE",
            description =
                    "File holding the bearer token to send on every call (the token alone; read again whenever the file changes).")
    Path authTokenFile;

    private TlsFiles files;

    /** A channel to {@code target} with these options. */
    ManagedChannel open(String target) {
        return NettyChannelBuilder.forTarget(target, credentials())
                .maxInboundMessageSize(Integer.MAX_VALUE)
                .build();
    }

    /** True when TLS is asked for. */
    boolean usesTls() {
        return tls || tlsCa != null || tlsCert != null || tlsKey != null;
    }

    /** The TLS files (loaded once, reloaded in the background), or null without TLS. */
    synchronized TlsFiles tlsFiles() {
        if (files == null && usesTls()) {
            files = TlsFiles.load(tlsCert, tlsKey, tlsCa, TlsFiles.RELOAD_EVERY);
        }
        return files;
    }

    /** The credentials these options ask for: TLS or none, and the bearer token file. */
    ChannelCredentials credentials() {
        TlsFiles t = tlsFiles();
        ChannelCredentials channel = t == null ? InsecureChannelCredentials.create() : t.channel();
        return authTokenFile == null
                ? channel
                : CompositeChannelCredentials.create(channel, BearerToken.fromFile(authTokenFile));
    }
}
