package moe.a2a.comm;

import java.nio.file.Path;
import javax.net.ssl.X509ExtendedKeyManager;
import javax.net.ssl.X509ExtendedTrustManager;
import org.jspecify.annotations.Nullable;

/**
 * What a worker process was told about its data planes (its command line), for every provider to
 * read what concerns its transport. A provider names a setting in its messages by the worker's flag
 * that sets it ({@code --data-host}, {@code --data-port}, {@code --tls-*}, {@code --shm-dir},
 * {@code --device}, {@code --cuda-lib-dir}, {@code --nccl-lib-dir}).
 *
 * @param dataHost the host name or address peers reach this worker's network data plane at
 * @param dataPort the port it listens on; 0 picks a free one per group epoch
 * @param ioThreads the event-loop threads a network data plane may run its connections on
 * @param tls mutual TLS between workers (this worker's certificate and the cluster's authority), or
 *     null for plaintext
 * @param shmDir the directory a host-memory data plane maps its group's files in
 * @param device the CUDA device of this rank, for a device data plane
 * @param cudaLibDir where the CUDA libraries are, or null to search the usual places
 * @param ncclLibDir where the NCCL library is, or null to search the usual places
 */
public record PlaneSettings(
        String dataHost,
        int dataPort,
        int ioThreads,
        @Nullable TlsKeys tls,
        Path shmDir,
        int device,
        @Nullable Path cudaLibDir,
        @Nullable Path ncclLibDir) {

    /** A worker's certificate and the authority it trusts its peers' certificates by. */
    public record TlsKeys(X509ExtendedKeyManager keys, X509ExtendedTrustManager trust) {}
}
