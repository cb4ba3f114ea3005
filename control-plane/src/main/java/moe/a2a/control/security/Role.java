package moe.a2a.control.security;

import java.util.Locale;

/** What a bearer token allows: the client APIs, or joining the cluster as a worker. */
public enum Role {
    CLIENT,
    WORKER;

    /** The name used in token files and messages. */
    public String label() {
        return name().toLowerCase(Locale.ROOT);
    }

    /** {@code text} as a role, or null when it names none. */
    static Role parse(String text) {
        for (Role r : values()) {
            if (r.label().equals(text)) {
                return r;
            }
        }
        return null;
    }
}
