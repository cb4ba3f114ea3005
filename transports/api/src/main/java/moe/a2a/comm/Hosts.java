package moe.a2a.comm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This host as the data planes and the workers name it. */
public final class Hosts {
    private Hosts() {}

    /** This host's name: {@code HOSTNAME}, else {@code /etc/hostname}, else "localhost". */
    public static String localName() {
        String env = System.getenv("HOSTNAME");
        if (env != null && !env.isBlank()) {
            return env.strip();
        }
        try {
            String file = Files.readString(Path.of("/etc/hostname")).strip();
            return file.isEmpty() ? "localhost" : file;
        } catch (IOException | SecurityException e) {
            return "localhost";
        }
    }
}
