package moe.a2a.comm;

/**
 * Where a transport's ranks may be, which is what the control plane's transport policy, the worker
 * and the bench decide by: they ask the providers for a reach, never for a name.
 */
public enum TransportReach {
    /** Ranks are threads of one process ({@code serve}, the in-process bench). */
    THREADS,
    /**
     * Ranks are processes that map each other's memory: one host, one pid namespace, one directory.
     * A worker names its memory domain ({@link DataPlane#domain}); a group forms only of workers of
     * one domain.
     */
    HOST,
    /** Ranks are processes on any hosts. */
    NETWORK,
    /** Ranks are GPUs: a rank's rows and experts stay on its device ({@link DataPlane#device}). */
    DEVICES
}
