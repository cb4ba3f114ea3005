package moe.a2a.control.security;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.List;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tokens a server accepts, one {@code ROLE TOKEN} per line ({@code #} starts a comment), read
 * again when the file's modification time changes so that tokens rotate without a restart; an edit
 * that does not parse is logged and the tokens before it stay. Tokens are compared in constant
 * time. Thread-safe.
 */
public final class TokenFile {
    private static final Logger LOG = LoggerFactory.getLogger(TokenFile.class);

    /** Shorter tokens are refused: they could be guessed. */
    public static final int MIN_TOKEN_CHARS = 16;

    private record Entry(Role role, byte[] token) {}

    private record Loaded(FileTime modified, List<Entry> entries) {}

    private final Path path;
    private volatile Loaded loaded;

    private TokenFile(Path path, Loaded loaded) {
        this.path = path;
        this.loaded = loaded;
    }

    /**
     * Reads {@code path}.
     *
     * @throws IllegalArgumentException naming the file and line when it does not parse
     */
    public static TokenFile open(Path path) {
        return new TokenFile(path, read(path));
    }

    /** The role of {@code token}, or null when no line has it. */
    public @Nullable Role roleOf(String token) {
        byte[] given = token.getBytes(StandardCharsets.UTF_8);
        Role found = null;
        for (Entry e : current().entries()) {
            if (MessageDigest.isEqual(e.token(), given) && found == null) {
                found = e.role();
            }
        }
        return found;
    }

    private Loaded current() {
        Loaded now = loaded;
        FileTime modified;
        try {
            modified = Files.getLastModifiedTime(path);
        } catch (IOException e) {
            return now;
        }
        if (modified.equals(now.modified())) {
            return now;
        }
        synchronized (this) {
            if (!modified.equals(loaded.modified())) {
                try {
                    loaded = read(path);
                    LOG.info("auth tokens reloaded: {} tokens", loaded.entries().size());
                } catch (IllegalArgumentException e) {
                    loaded = new Loaded(modified, loaded.entries());
                    LOG.warn("auth tokens kept as they were: {}", e.getMessage());
                }
            }
            return loaded;
        }
    }

    private static Loaded read(Path path) {
        try {
            FileTime modified = Files.getLastModifiedTime(path);
            List<Entry> entries = new ArrayList<>();
            List<String> lines = Files.readAllLines(path, StandardCharsets.UTF_8);
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i).strip();
                if (line.isEmpty() || line.startsWith("#")) {
                    continue;
                }
                entries.add(parse(path, i + 1, line));
            }
            if (entries.isEmpty()) {
                throw new IllegalArgumentException(
                        "--auth-token-file "
                                + path
                                + ": no tokens (expected: lines \"ROLE TOKEN\")");
            }
            return new Loaded(modified, List.copyOf(entries));
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "--auth-token-file " + path + ": cannot read (" + e + ")", e);
        }
    }

    private static Entry parse(Path path, int lineNumber, String line) {
        String[] parts = line.split("\\s+");
        String where = "--auth-token-file " + path + ", line " + lineNumber;
        Role role = parts.length == 2 ? Role.parse(parts[0]) : null;
        if (role == null) {
            throw new IllegalArgumentException(
                    where
                            + ": not \"ROLE TOKEN\" (expected: ROLE client or worker, then the token)");
        }
        if (parts[1].length() < MIN_TOKEN_CHARS) {
            throw new IllegalArgumentException(
                    where
                            + ": a token of "
                            + parts[1].length()
                            + " characters (expected: at least "
                            + MIN_TOKEN_CHARS
                            + ")");
        }
        return new Entry(role, parts[1].getBytes(StandardCharsets.UTF_8));
    }
}
