package moe.a2a.comm;

import java.nio.ByteBuffer;

/**
 * A communicator that hands every call to another; tests override the calls they tamper with (a
 * peer that lies about its counts, one that corrupts what it receives).
 */
public class ForwardingCommunicator implements Communicator {
    protected final Communicator inner;

    public ForwardingCommunicator(Communicator inner) {
        this.inner = inner;
    }

    @Override
    public int rank() {
        return inner.rank();
    }

    @Override
    public int size() {
        return inner.size();
    }

    @Override
    public Transport transport() {
        return inner.transport();
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        inner.allToAllCounts(step, phase, sendCounts, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        inner.allToAllV(step, phase, send, sendCounts, recv, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        inner.allToAllV(step, phase, writer, sendCounts, recv, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        inner.allToAllV(step, phase, send, sendCounts, reader, recvCounts);
    }

    @Override
    public void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        inner.sendRecv(to, send, sendOffset, sendBytes, from, recvBytes, sink);
    }

    @Override
    public void barrier() {
        inner.barrier();
    }

    @Override
    public void abort(Throwable cause) {
        inner.abort(cause);
    }

    @Override
    public void close() {
        inner.close();
    }
}
