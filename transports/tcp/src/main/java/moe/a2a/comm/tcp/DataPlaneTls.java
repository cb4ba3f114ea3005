package moe.a2a.comm.tcp;

import io.netty.channel.socket.SocketChannel;
import io.netty.handler.ssl.ClientAuth;
import io.netty.handler.ssl.SslContext;
import io.netty.handler.ssl.SslContextBuilder;
import io.netty.handler.ssl.SslHandler;
import java.io.UncheckedIOException;
import javax.net.ssl.SSLException;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import moe.a2a.comm.PlaneSettings;

/**
 * Mutual TLS for the data plane: every connection between ranks presents this rank's certificate
 * and accepts only a peer whose certificate the trust manager trusts, in both directions. The
 * managers are consulted at every handshake, so managers that reload their files rotate
 * certificates without restarting the group. Peers are dialled by address, so the certificate chain
 * (the cluster's CA) identifies a member, not a host name; the group id in the handshake then says
 * which group. Immutable.
 */
public final class DataPlaneTls {
    private final SslContext accepting;
    private final SslContext dialling;

    private DataPlaneTls(SslContext accepting, SslContext dialling) {
        this.accepting = accepting;
        this.dialling = dialling;
    }

    /**
     * Contexts over {@code keys} (this rank's certificate) and {@code trust} (the cluster's CA).
     */
    public static DataPlaneTls of(X509ExtendedKeyManager keys, X509ExtendedTrustManager trust)
            throws SSLException {
        return new DataPlaneTls(
                SslContextBuilder.forServer(keys)
                        .trustManager(trust)
                        .clientAuth(ClientAuth.REQUIRE)
                        .build(),
                SslContextBuilder.forClient()
                        .keyManager(keys)
                        .trustManager(trust)
                        .endpointIdentificationAlgorithm(null)
                        .build());
    }

    /**
     * Contexts over a worker's TLS keys.
     *
     * @throws UncheckedIOException when a context cannot be built over them
     */
    public static DataPlaneTls of(PlaneSettings.TlsKeys tls) {
        try {
            return of(tls.keys(), tls.trust());
        } catch (SSLException e) {
            throw new UncheckedIOException("data-plane TLS: " + e.getMessage(), e);
        }
    }

    /** The TLS handler of a data connection this rank accepted ({@code accepted}) or dialled. */
    SslHandler handler(SocketChannel ch, boolean accepted) {
        return (accepted ? accepting : dialling).newHandler(ch.alloc());
    }
}
