package moe.a2a.control.security;

import io.grpc.ChannelCredentials;
import io.grpc.ServerCredentials;
import io.grpc.TlsChannelCredentials;
import io.grpc.TlsServerCredentials;
import io.grpc.util.AdvancedTlsX509KeyManager;
import io.grpc.util.AdvancedTlsX509TrustManager;
import io.grpc.util.AdvancedTlsX509TrustManager.Verification;
import java.io.IOException;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.PlaneSettings;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A process's TLS material: its certificate and key, and the certificate authority it trusts, read
 * from PEM files and read again when their modification time changes (checked every {@code
 * reloadEvery}), so that certificates rotate without a restart (connections already open keep the
 * certificate they started with). grpc-java's advanced TLS managers do the reading and the checks;
 * this class hands them to the gRPC server, the gRPC channel and the data plane. Closing stops the
 * reloading.
 */
public final class TlsFiles implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TlsFiles.class);

    /** How often the files' modification times are checked. */
    public static final Duration RELOAD_EVERY = Duration.ofSeconds(30);

    private final @Nullable Path certificate;
    private final @Nullable Path key;
    private final @Nullable Path authority;
    private final Duration reloadEvery;
    private final ScheduledExecutorService reloader;
    private final @Nullable AdvancedTlsX509KeyManager keys;

    private TlsFiles(
            @Nullable Path certificate,
            @Nullable Path key,
            @Nullable Path authority,
            Duration reloadEvery) {
        this.certificate = certificate;
        this.key = key;
        this.authority = authority;
        this.reloadEvery = reloadEvery;
        this.reloader =
                Executors.newSingleThreadScheduledExecutor(
                        r -> {
                            Thread t = new Thread(r, "moe-a2a-tls-reload");
                            t.setDaemon(true);
                            return t;
                        });
        this.keys = certificate == null ? null : new AdvancedTlsX509KeyManager();
    }

    /**
     * Reads the files now (a bad file fails here, naming it) and every {@code reloadEvery} after.
     *
     * @param certificate this process's certificate chain, or null to present none
     * @param key the certificate's PKCS#8 private key; given exactly when {@code certificate} is
     * @param authority the certificates to trust, or null to trust the JDK's default authorities
     */
    public static TlsFiles load(
            @Nullable Path certificate,
            @Nullable Path key,
            @Nullable Path authority,
            Duration reloadEvery) {
        if ((certificate == null) != (key == null)) {
            throw new IllegalArgumentException(
                    (certificate == null ? "--tls-key" : "--tls-cert")
                            + ": given alone (expected: --tls-cert and --tls-key together)");
        }
        TlsFiles tls = new TlsFiles(certificate, key, authority, reloadEvery);
        if (tls.keys != null) {
            AdvancedTlsX509KeyManager keys = tls.keys;
            try {
                keys.updateIdentityCredentials(certificate.toFile(), key.toFile());
            } catch (IOException | GeneralSecurityException e) {
                tls.close();
                throw new IllegalArgumentException(
                        "--tls-cert " + certificate + ", --tls-key " + key + ": " + e.getMessage(),
                        e);
            }
            tls.watch(
                    List.of(certificate, key),
                    () -> keys.updateIdentityCredentials(certificate.toFile(), key.toFile()));
        }
        return tls;
    }

    /** True when this process presents a certificate. */
    public boolean hasCertificate() {
        return keys != null;
    }

    /** True when a certificate authority is given. */
    public boolean hasAuthority() {
        return authority != null;
    }

    /**
     * Server credentials presenting this process's certificate; with {@code requireClients}, only
     * clients presenting a certificate the authority signed get through the handshake.
     */
    public ServerCredentials server(boolean requireClients) {
        if (keys == null) {
            throw new IllegalStateException("a TLS server needs --tls-cert and --tls-key");
        }
        TlsServerCredentials.Builder b = TlsServerCredentials.newBuilder().keyManager(keys);
        if (requireClients) {
            b.trustManager(trust(Verification.CERTIFICATE_ONLY_VERIFICATION))
                    .clientAuth(TlsServerCredentials.ClientAuth.REQUIRE);
        }
        return b.build();
    }

    /**
     * Channel credentials that check the server's certificate and host name against the authority
     * (or the JDK's defaults), presenting this process's certificate when it has one.
     */
    public ChannelCredentials channel() {
        TlsChannelCredentials.Builder b = TlsChannelCredentials.newBuilder();
        if (keys != null) {
            b.keyManager(keys);
        }
        if (authority != null) {
            b.trustManager(trust(Verification.CERTIFICATE_AND_HOST_NAME_VERIFICATION));
        }
        return b.build();
    }

    /**
     * Mutual TLS for the data plane: this certificate, peers signed by the authority (both reloaded
     * when their files change).
     */
    public PlaneSettings.TlsKeys dataPlane() {
        if (keys == null || authority == null) {
            throw new IllegalStateException(
                    "data-plane TLS needs --tls-cert, --tls-key and --tls-ca");
        }
        return new PlaneSettings.TlsKeys(keys, trust(Verification.CERTIFICATE_ONLY_VERIFICATION));
    }

    private AdvancedTlsX509TrustManager trust(Verification verification) {
        try {
            AdvancedTlsX509TrustManager trust =
                    AdvancedTlsX509TrustManager.newBuilder().setVerification(verification).build();
            trust.updateTrustCredentials(authority.toFile());
            watch(List.of(authority), () -> trust.updateTrustCredentials(authority.toFile()));
            return trust;
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalArgumentException("--tls-ca " + authority + ": " + e.getMessage(), e);
        }
    }

    /** Reading files into a manager again. */
    private interface Reload {
        void run() throws IOException, GeneralSecurityException;
    }

    /**
     * Runs {@code reload} whenever one of {@code files} has a new modification time. A failed read
     * (a certificate renewed before its key, say) keeps what was read before and is tried again
     * when a file changes again. grpc-java's own periodic reading is not used: it reads no more
     * often than once a minute.
     */
    private void watch(List<Path> files, Reload reload) {
        long[] seen = modified(files);
        reloader.scheduleWithFixedDelay(
                () -> {
                    long[] now = modified(files);
                    if (java.util.Arrays.equals(now, seen)) {
                        return;
                    }
                    System.arraycopy(now, 0, seen, 0, now.length);
                    try {
                        reload.run();
                        LOG.info("TLS files reloaded: {}", files);
                    } catch (IOException | GeneralSecurityException | RuntimeException e) {
                        LOG.warn("TLS files {} kept as they were: {}", files, e.toString());
                    }
                },
                reloadEvery.toNanos(),
                reloadEvery.toNanos(),
                TimeUnit.NANOSECONDS);
    }

    private static long[] modified(List<Path> files) {
        long[] times = new long[files.size()];
        for (int i = 0; i < times.length; i++) {
            try {
                times[i] = java.nio.file.Files.getLastModifiedTime(files.get(i)).toMillis();
            } catch (IOException e) {
                times[i] = -1;
            }
        }
        return times;
    }

    @Override
    public void close() {
        reloader.shutdownNow();
    }
}
