package moe.a2a.control.security;

import io.grpc.CallCredentials;
import io.grpc.Metadata;
import io.grpc.Status;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Executor;

/**
 * Sends {@code authorization: Bearer TOKEN} on every call, the token read from a file that holds it
 * alone (surrounding whitespace ignored), read again for every call so that a rotated token is used
 * at once. Thread-safe.
 */
public final class BearerToken extends CallCredentials {
    private final Path file;

    private BearerToken(Path file) {
        this.file = file;
    }

    /**
     * Credentials from {@code file}, which must hold one token now.
     *
     * @throws IllegalArgumentException naming the file when it does not
     */
    public static BearerToken fromFile(Path file) {
        read(file);
        return new BearerToken(file);
    }

    @Override
    public void applyRequestMetadata(
            RequestInfo requestInfo, Executor appExecutor, MetadataApplier applier) {
        try {
            Metadata headers = new Metadata();
            headers.put(BearerAuth.AUTHORIZATION, BearerAuth.BEARER + read(file));
            applier.apply(headers);
        } catch (IllegalArgumentException e) {
            applier.fail(Status.UNAUTHENTICATED.withDescription(e.getMessage()));
        }
    }

    private static String read(Path file) {
        String token;
        try {
            token = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "--auth-token-file " + file + ": cannot read (" + e + ")", e);
        }
        if (token.isEmpty() || token.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException(
                    "--auth-token-file "
                            + file
                            + ": not one token (expected: the token alone, without its role)");
        }
        return token;
    }
}
