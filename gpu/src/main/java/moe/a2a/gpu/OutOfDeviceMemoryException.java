package moe.a2a.gpu;

import moe.a2a.comm.A2aException;

/** {@code cudaMalloc} refused: the device has no room left for what was asked. */
public final class OutOfDeviceMemoryException extends A2aException {
    private static final long serialVersionUID = 1L;

    public OutOfDeviceMemoryException(String message) {
        super(message);
    }
}
