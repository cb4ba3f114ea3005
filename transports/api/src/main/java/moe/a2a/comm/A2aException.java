package moe.a2a.comm;

/** The unchecked root of every moe-a2a failure. Messages read {@code what: key=value, ...}. */
public class A2aException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public A2aException(String message) {
        super(message);
    }

    public A2aException(String message, Throwable cause) {
        super(message, cause);
    }
}
