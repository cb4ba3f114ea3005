package moe.a2a.gpu;

import static org.bytedeco.cuda.global.cudart.cudaStreamSynchronize;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.nccl.NcclCommunicator;
import moe.a2a.dispatch.DispatchLayout;
import moe.a2a.dispatch.Placement;

/**
 * One rank's dispatch and combine with token rows in device memory (bf16), over NCCL. The layout
 * is computed on the host (as the CPU {@code Dispatcher} does); the rows move only on the device:
 * packed by a gather kernel, exchanged by {@link NcclCommunicator#allToAllVDevice}, grouped by
 * local expert by the same kernel; combine weights and sums each received token's expert rows
 * (one bf16 row per token goes back) and sums the returned rows at the source. Each token's routing
 * (local slot and weight per choice) travels in a small host-staged exchange beside the rows.
 *
 * <p>The sums run in the CPU path's order without fused multiply-adds, so with the same inputs
 * the results are bit-identical to {@code Dispatcher}'s. Owned by the rank's thread.
 */
public final class GpuDispatcher implements AutoCloseable {
    private static final int ROUTE_BYTES = Integer.BYTES + Float.BYTES;

    private final NcclCommunicator comm;
    private final Placement placement;
    private final CudaKernels kernels;
    private final int hidden;
    private final int topK;
    private final int worldSize;
    private final int rowBytes;
    private final DispatchLayout layout;
    private final long[] sendRows;
    private final long[] recvRows;
    private final long[] sendBytes;
    private final long[] recvBytes;
    private final CudaMemory send = CudaMemory.device();
    private final CudaMemory recv = CudaMemory.device();
    private final CudaMemory grouped = CudaMemory.device();
    private final CudaMemory combineSend = CudaMemory.device();
    private final CudaMemory combineRecv = CudaMemory.device();
    private final IndexUpload indexes = new IndexUpload();
    private ByteBuffer routes = ByteBuffer.allocateDirect(0).order(ByteOrder.LITTLE_ENDIAN);
    private int[] scratch = new int[0];
    private int[] csrStart = new int[0];
    private int[] csrRow = new int[0];
    private float[] csrWeight = new float[0];
    private int[] rowsPerSlot;
    private int numTokens;
    private int numRecv;
    private long weightedStart;
    private long weightedRow;
    private long weightedWeight;
    private long accumulateStart;
    private long accumulateIndex;
    private long step;

    public GpuDispatcher(NcclCommunicator comm, Placement placement, int hidden, int topK, CudaKernels kernels) {
        this.comm = comm;
        this.placement = placement;
        this.kernels = kernels;
        this.hidden = hidden;
        this.topK = topK;
        this.worldSize = comm.size();
        this.rowBytes = hidden * Short.BYTES;
        this.layout = new DispatchLayout(placement);
        this.sendRows = new long[worldSize];
        this.recvRows = new long[worldSize];
        this.sendBytes = new long[worldSize];
        this.recvBytes = new long[worldSize];
        this.rowsPerSlot = new int[placement.localExperts(comm.rank())];
    }

    /**
     * Dispatches {@code numTokens} bf16 rows of {@code tokens} ({@code [T, H]} on the device) routed
     * by {@code topkIds}/{@code topkWeights} ({@code [T, K]}). Returns the received rows grouped by
     * local expert ({@link #rowsPerSlot()} of each), valid until the next dispatch. Every rank calls
     * it in the same step.
     */
    public CudaMemory dispatch(CudaMemory tokens, int numTokens, int[] topkIds, float[] topkWeights) {
        this.numTokens = numTokens;
        long s = step++;
        layout.compute(topkIds, numTokens, topK);
        for (int r = 0; r < worldSize; r++) {
            sendRows[r] = layout.tokensPerRank(r);
        }
        comm.allToAllCounts(s, ExchangePhase.DISPATCH, sendRows, recvRows);
        int totalSend = layout.rankOffsets(worldSize);
        numRecv = 0;
        for (int r = 0; r < worldSize; r++) {
            numRecv += (int) recvRows[r];
        }

        // Routing beside the rows: per sent row and choice, the destination's local slot (-1 elsewhere) and weight.
        int routeRow = topK * ROUTE_BYTES;
        for (int r = 0; r < worldSize; r++) {
            sendBytes[r] = sendRows[r] * routeRow;
            recvBytes[r] = recvRows[r] * routeRow;
        }
        routes = grow(routes, (long) numRecv * routeRow);
        comm.allToAllV(s, ExchangePhase.DISPATCH, (peer, dst, at) -> writeRoutes(peer, dst, at, topkIds, topkWeights),
                sendBytes, routes, recvBytes);

        int grouping = groupedOrder(routeRow);
        // pack order, grouping, combine's lists (start, rows, weights), returned rows and their starts
        indexes.reset(16L * 7 + (long) Integer.BYTES * (2L * totalSend + 2L * grouping + numRecv + numTokens + 2)
                + (long) Float.BYTES * grouping);
        long packIndex = indexes.ints(packOrder(totalSend), totalSend);
        long groupIndex = indexes.ints(scratch, grouping);
        weightedStart = indexes.ints(csrStart, numRecv + 1);
        weightedRow = indexes.ints(csrRow, csrStart[numRecv]);
        weightedWeight = indexes.floats(csrWeight, csrStart[numRecv]);
        int[] accStart = new int[numTokens + 1];
        accumulateIndex = indexes.ints(returnedRows(accStart), accStart[numTokens]);
        accumulateStart = indexes.ints(accStart, numTokens + 1);
        indexes.upload(comm.stream());

        send.ensure(Math.max(1, (long) totalSend * rowBytes));
        recv.ensure(Math.max(1, (long) numRecv * rowBytes));
        grouped.ensure(Math.max(1, (long) grouping * rowBytes));
        kernels.gatherRows(tokens.at(0), indexes.at(packIndex), send.at(0), rowBytes, totalSend, comm.stream());
        for (int r = 0; r < worldSize; r++) {
            sendBytes[r] = sendRows[r] * rowBytes;
            recvBytes[r] = recvRows[r] * rowBytes;
        }
        comm.allToAllVDevice(s, ExchangePhase.DISPATCH, send, sendBytes, recv, recvBytes);
        kernels.gatherRows(recv.at(0), indexes.at(groupIndex), grouped.at(0), rowBytes, grouping, comm.stream());
        return grouped;
    }

    /** Rows per local expert slot of the last dispatch, in the grouped order. */
    public int[] rowsPerSlot() {
        return rowsPerSlot.clone();
    }

    /** The received rows of the last dispatch, in receive order (before grouping). */
    public CudaMemory received() {
        return recv;
    }

    /** Tokens received by the last dispatch. */
    public int numReceived() {
        return numRecv;
    }

    /**
     * Combines: {@code expertOut} holds fp32 rows in the grouped order of the last dispatch; on
     * return (the stream synchronized) {@code out} holds each of this rank's tokens' weighted sums
     * over all its experts, fp32 {@code [T, H]} on the device.
     */
    public void combine(CudaMemory expertOut, CudaMemory out) {
        combineSend.ensure(Math.max(1, (long) numRecv * rowBytes));
        combineRecv.ensure(Math.max(1, (long) layout.rankOffsets(worldSize) * rowBytes));
        out.ensure(Math.max(1, (long) numTokens * hidden * Float.BYTES));
        kernels.weightedSumBf16(expertOut.at(0), indexes.at(weightedStart), indexes.at(weightedRow),
                indexes.at(weightedWeight), combineSend.at(0), hidden, numRecv, comm.stream());
        for (int r = 0; r < worldSize; r++) {
            sendBytes[r] = recvRows[r] * rowBytes;
            recvBytes[r] = sendRows[r] * rowBytes;
        }
        comm.allToAllVDevice(step - 1, ExchangePhase.COMBINE, combineSend, sendBytes, combineRecv, recvBytes);
        kernels.accumulateBf16(combineRecv.at(0), indexes.at(accumulateStart), indexes.at(accumulateIndex), out.at(0),
                hidden, numTokens, comm.stream());
        CudaCheck.check(cudaStreamSynchronize(comm.stream()), "cudaStreamSynchronize");
    }

    private void writeRoutes(int peer, ByteBuffer dst, int at, int[] topkIds, float[] topkWeights) {
        int pos = at;
        for (int i = layout.rankOffsets(peer); i < layout.rankOffsets(peer + 1); i++) {
            int t = layout.packOrder(i);
            for (int k = 0; k < topK; k++) {
                int expert = topkIds[t * topK + k];
                dst.putInt(pos, placement.rankOf(expert) == peer ? placement.slotOf(expert) : -1);
                dst.putFloat(pos + Integer.BYTES, topkWeights[t * topK + k]);
                pos += ROUTE_BYTES;
            }
        }
    }

    /**
     * From the received routes: the grouped order (received rows by local slot, each slot's in
     * receive order; in {@code scratch}) and, per received token, its grouped positions and weights
     * in ascending order (combine's lists). Returns the number of grouped rows.
     */
    private int groupedOrder(int routeRow) {
        Arrays.fill(rowsPerSlot, 0);
        for (int j = 0; j < numRecv; j++) {
            for (int k = 0; k < topK; k++) {
                int slot = routes.getInt(j * routeRow + k * ROUTE_BYTES);
                if (slot >= rowsPerSlot.length) {
                    throw new A2aException("received route names a slot this rank lacks: rank=" + comm.rank()
                            + ", row=" + j + ", slot=" + slot + ", localExperts=" + rowsPerSlot.length);
                }
                if (slot >= 0) {
                    rowsPerSlot[slot]++;
                }
            }
        }
        int[] slotStart = new int[rowsPerSlot.length + 1];
        for (int slot = 0; slot < rowsPerSlot.length; slot++) {
            slotStart[slot + 1] = slotStart[slot] + rowsPerSlot[slot];
        }
        int total = slotStart[rowsPerSlot.length];
        scratch = grow(scratch, total);
        float[] groupedWeight = new float[total];
        int[] cursor = Arrays.copyOf(slotStart, rowsPerSlot.length);
        for (int j = 0; j < numRecv; j++) {
            for (int k = 0; k < topK; k++) {
                int slot = routes.getInt(j * routeRow + k * ROUTE_BYTES);
                if (slot >= 0) {
                    int i = cursor[slot]++;
                    scratch[i] = j;
                    groupedWeight[i] = routes.getFloat(j * routeRow + k * ROUTE_BYTES + Integer.BYTES);
                }
            }
        }
        csrStart = grow(csrStart, numRecv + 1);
        Arrays.fill(csrStart, 0, numRecv + 1, 0);
        for (int i = 0; i < total; i++) {
            csrStart[scratch[i] + 1]++;
        }
        for (int j = 0; j < numRecv; j++) {
            csrStart[j + 1] += csrStart[j];
        }
        csrRow = grow(csrRow, total);
        csrWeight = total > csrWeight.length ? new float[total] : csrWeight;
        int[] fill = Arrays.copyOf(csrStart, numRecv);
        for (int i = 0; i < total; i++) {
            int at = fill[scratch[i]]++;
            csrRow[at] = i;
            csrWeight[at] = groupedWeight[i];
        }
        return total;
    }

    private int[] packOrder(int total) {
        int[] order = new int[total];
        for (int i = 0; i < total; i++) {
            order[i] = layout.packOrder(i);
        }
        return order;
    }

    /**
     * For each token, the rows that come back to it in combine, in rank order (as the CPU path
     * sums them): rank {@code r}'s rows return in its pack order, starting at its offset.
     * Fills {@code start} ({@code T + 1} entries) and returns the row indexes.
     */
    private int[] returnedRows(int[] start) {
        int[] cursor = new int[worldSize];
        for (int r = 0; r < worldSize; r++) {
            cursor[r] = layout.rankOffsets(r);
        }
        int[] index = new int[layout.rankOffsets(worldSize)];
        int n = 0;
        for (int t = 0; t < numTokens; t++) {
            start[t] = n;
            for (int r = 0; r < worldSize; r++) {
                if (layout.tokenInRank(t, r)) {
                    index[n++] = cursor[r]++;
                }
            }
        }
        start[numTokens] = n;
        return index;
    }

    private static int[] grow(int[] a, int n) {
        return a.length >= n ? a : new int[n];
    }

    private static ByteBuffer grow(ByteBuffer b, long n) {
        return b.capacity() >= n ? b : ByteBuffer.allocateDirect((int) n).order(ByteOrder.LITTLE_ENDIAN);
    }

    @Override
    public void close() {
        send.close();
        recv.close();
        grouped.close();
        combineSend.close();
        combineRecv.close();
        indexes.close();
    }
}
