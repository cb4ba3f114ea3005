package moe.a2a.control.security;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.util.concurrent.Executor;

/**
 * Sends {@code authorization: Bearer TOKEN} on every call, the token read from a file that holds it
 * alone (surrounding whitespace ignored), read again whenever the file's modification time changes
 * so that a rotated token is used at once. Thread-safe.
 */
public final class BearerToken extends CallCredentials {
    /** The token as last read, and the modification time of the file it was read at. */
    private record Read(FileTime modified, String token) {}

    private final Path file;
    private volatile Read last;

    private BearerToken(Path file, Read last) {
        this.file = file;
        this.last = last;
    }

    /**
     * Credentials from {@code file}, which must hold one token now.
     *
     * @throws IllegalArgumentException naming the file when it does not
     */
    public static BearerToken fromFile(Path file) {
        return new BearerToken(file, read(file));
    }

    @Override
    public void applyRequestMetadata(
            RequestInfo requestInfo, Executor appExecutor, MetadataApplier applier) {
        try {
            Metadata headers = new Metadata();
            headers.put(BearerAuth.AUTHORIZATION, BearerAuth.BEARER + current());
            applier.apply(headers);
        } catch (IllegalArgumentException e) {
            applier.fail(Status.UNAUTHENTICATED.withDescription(e.getMessage()));
        }
    }

    /** The token, read again only when the file has changed since it was last read. */
    private String current() {
        Read known = last;
        try {
            if (Files.getLastModifiedTime(file).equals(known.modified())) {
                return known.token();
            }
        } catch (IOException e) {
            throw cannotRead(file, e);
        }
        Read now = read(file);
        last = now;
        return now.token();
    }

    private static Read read(Path file) {
        String token;
        FileTime modified;
        try {
            modified = Files.getLastModifiedTime(file);
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw cannotRead(file, e);
        }
        if (token.isEmpty() || token.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException(
                    "--auth-token-file "
                            + file
                            + ": not one token (expected: the token alone, without its role)");
        }
        return new Read(modified, token);
    }

    private static IllegalArgumentException cannotRead(Path file, IOException e) {
        return new IllegalArgumentException(
                "--auth-token-file " + file + ": cannot read (" + e + ")", e);
    }
}
