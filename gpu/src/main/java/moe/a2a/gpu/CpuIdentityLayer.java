package moe.a2a.gpu;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import moe.a2a.comm.local.LocalGroup;
import moe.a2a.dispatch.DispatchResult;
import moe.a2a.dispatch.Dispatcher;
import moe.a2a.dispatch.Placement;
import moe.a2a.kernels.DType;

/**
 * The CPU {@link Dispatcher} at world size 1 with identity experts, what {@link GpuCheck}'s
 * comparisons hold the device's dispatch and combine to: the rows it received, as they travelled,
 * and each token's combined output.
 *
 * @param received the received rows in receive order, {@code rows} of them
 * @param out the combined output, fp32 {@code [T, H]}
 */
record CpuIdentityLayer(ByteBuffer received, int rows, float[] out) {
    static CpuIdentityLayer run(
            ByteBuffer tokens,
            int numTokens,
            int hidden,
            DType dtype,
            int[] ids,
            float[] weights,
            int topK,
            Placement placement) {
        Dispatcher cpu = new Dispatcher(new LocalGroup(1).communicator(0), placement, hidden, topK);
        DispatchResult result = cpu.dispatch(tokens, numTokens, dtype, ids, weights);
        int rows = result.numRecvTokens();
        int rowBytes = hidden * dtype.sizeBytes();
        ByteBuffer received =
                ByteBuffer.allocateDirect(Math.max(1, rows * rowBytes))
                        .order(ByteOrder.LITTLE_ENDIAN);
        for (int j = 0; j < rows; j++) {
            result.copyRecvToken(j, received, j * rowBytes);
        }
        FloatBuffer identity =
                ByteBuffer.allocateDirect(
                                Math.max(1, result.numExpertRows() * hidden * Float.BYTES))
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
        int at = 0;
        for (int slot = 0; slot < result.handle().localExperts(); slot++) {
            result.gather(slot, identity, at * hidden);
            at += result.handle().recvTokensPerLocalExpert(slot);
        }
        FloatBuffer combined =
                ByteBuffer.allocateDirect(numTokens * hidden * Float.BYTES)
                        .order(ByteOrder.nativeOrder())
                        .asFloatBuffer();
        cpu.combine(identity, result.handle(), combined);
        float[] out = new float[numTokens * hidden];
        combined.get(0, out);
        return new CpuIdentityLayer(received.slice(0, rows * rowBytes), rows, out);
    }

    /** How many of {@code actual}'s values differ in their bits from {@link #out}'s. */
    long differing(float[] actual) {
        long n = 0;
        for (int i = 0; i < actual.length; i++) {
            n += Float.floatToRawIntBits(actual[i]) == Float.floatToRawIntBits(out[i]) ? 0 : 1;
        }
        return n;
    }
}
