package moe.a2a.comm;

/**
 * Whether a transport can run in this process, as its provider found out.
 *
 * @param usable whether a worker may offer it
 * @param description what was found, for the log and the control plane's messages (why not, when
 *     not usable); may be empty when there is nothing to say
 */
public record TransportProbe(boolean usable, String description) {
    /** Usable, nothing to report. */
    public static final TransportProbe USABLE = new TransportProbe(true, "");

    /** Not usable, because of {@code why}. */
    public static TransportProbe unusable(String why) {
        return new TransportProbe(false, why);
    }
}
