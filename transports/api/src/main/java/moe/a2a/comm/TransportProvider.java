package moe.a2a.comm;

/**
 * A transport, as a plug-in: each transport's module registers one in {@code
 * META-INF/services/moe.a2a.comm.TransportProvider}, and the CLI, the control plane's transport
 * policy, the worker and the bench find it through {@link Transports} instead of naming it.
 */
public interface TransportProvider {
    Transport transport();

    /** Where its ranks may be. */
    TransportReach reach();

    /**
     * Its place when transports are listed (help texts, messages, what a worker offers first);
     * lower first.
     */
    int order();

    /**
     * Whether a worker with {@code settings} can run it. Called once, when the worker starts; may
     * load native libraries.
     */
    TransportProbe probe(PlaneSettings settings);

    /**
     * A worker's data plane over this transport, once {@link #probe} found it usable.
     *
     * @throws UnsupportedOperationException for a transport of {@link TransportReach#THREADS}
     */
    DataPlane dataPlane(PlaneSettings settings);
}
