package moe.a2a.protocol;

/** A request field is wrong; the message names the field and what was expected. */
public final class InvalidRequestException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public InvalidRequestException(String message) {
        super(message);
    }
}
