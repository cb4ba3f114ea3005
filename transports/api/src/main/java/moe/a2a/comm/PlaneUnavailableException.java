package moe.a2a.comm;

/**
 * This process cannot run a data plane now for want of a resource of its own (its shared-memory
 * folder is full, say), whatever its peers do. Under {@code --transport auto} the control plane
 * forms the group over another transport instead of failing it again.
 */
public class PlaneUnavailableException extends A2aException {
    private static final long serialVersionUID = 1L;

    public PlaneUnavailableException(String message, Throwable cause) {
        super(message, cause);
    }
}
