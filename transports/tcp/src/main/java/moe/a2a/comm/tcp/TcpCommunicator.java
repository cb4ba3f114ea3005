package moe.a2a.comm.tcp;

import io.netty.channel.Channel;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.List;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.PeerWaits;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Transport;

/**
 * A rank of a group whose ranks are processes, over one TCP connection per pair of ranks. Each
 * collective sends one frame to every peer and waits, to the group's deadline, for one frame from
 * every peer; a point-to-point {@link #sendRecv} sends one SEND frame to its peer and waits for one
 * from its other, the other ranks taking no part. Frames are numbered per ordered pair of ranks (a
 * send and a receive sequence per peer, which collectives advance for every peer), so a pair's
 * messages match in the order sent whatever the other ranks do. Outgoing rows are written straight
 * from the caller's buffer (no copy, through views made once per buffer). Incoming rows are read by
 * the socket straight into the receive buffer, whose regions the call posts before it sends: a
 * collective's receive buffer; for a message, the buffer of an {@link InboundSink#copyTo} sink, or
 * else a direct buffer of this rank's (reused), where the sink then reads it. Rows that arrived
 * before the post (the peer ran ahead) are copied there once. A frame of rows whose length is not
 * the one posted for it fails its peer before any of it is written; one that runs ahead of its post
 * is buffered up to 4 MiB (the socket buffer size), and its connection then held until the post
 * ({@link FrameDecoder}). A call returns only when its writes are done, so the caller's buffer is
 * free again and a rank never has more than one call's data queued per connection. Any failure
 * (timeout, closed connection, protocol error, a message of another length, abort) aborts the whole
 * group: every peer learns of it at once instead of waiting out its own timeout, a rank whose send
 * was already written at its next call.
 *
 * <p>The pieces: {@link TcpConnector} sets up the connections, {@link PeerLinks} holds them and the
 * group's failure, {@link TcpCollectives} and {@link TcpPointToPoint} move the data, and {@link
 * FrameWaits} waits for frames and writes to the call's deadline.
 *
 * <p>Lifecycle: {@link #bind} (listen), hand {@link #localAddress()} to the peers out of band, then
 * {@link #connect} with everyone's address. Collectives are owned by one rank thread.
 */
public final class TcpCommunicator implements Communicator {
    private final TcpConfig config;
    private final PeerLinks links;
    private final TcpConnector connector;
    private Channel server;
    private final DataFrames frames;
    private final ReceiveRegions regions;
    private final FrameWaits waits;
    private final PeerWaits waited;
    private final TcpCollectives collectives;
    private final TcpPointToPoint pointToPoint;
    private final long[] barrierSend;
    private final long[] barrierRecv;

    private TcpCommunicator(TcpConfig config, TcpTransport transport) {
        int n = config.size();
        this.config = config;
        this.links = new PeerLinks(config.rank(), n);
        this.connector = new TcpConnector(this, transport, config);
        this.barrierSend = new long[n];
        this.barrierRecv = new long[n];
        this.frames = new DataFrames(links.channels());
        this.regions = new ReceiveRegions(links.inboxes());
        this.waited = new PeerWaits(n);
        this.waits = new FrameWaits(config.rank(), config.timeoutNs(), links, frames, waited);
        long[] sendSeq = new long[n];
        long[] recvSeq = new long[n];
        this.collectives =
                new TcpCollectives(config, links, frames, regions, waits, sendSeq, recvSeq);
        this.pointToPoint =
                new TcpPointToPoint(config, links, frames, regions, waits, sendSeq, recvSeq);
    }

    /** Starts listening on {@code config.bindAddress()} (port 0 picks a free port). */
    public static TcpCommunicator bind(TcpTransport transport, TcpConfig config) {
        TcpCommunicator self = new TcpCommunicator(config, transport);
        self.server = self.connector.listen();
        return self;
    }

    /** Where peers connect to this rank. */
    public InetSocketAddress localAddress() {
        return (InetSocketAddress) server.localAddress();
    }

    /**
     * Connects to every lower rank and waits until every higher rank has connected here.
     *
     * @param addresses each rank's {@link #localAddress()}, indexed by rank
     * @throws ExchangeTimeoutException naming the first peer missing at the deadline
     */
    public void connect(List<InetSocketAddress> addresses) {
        if (addresses.size() != config.size()) {
            throw new IllegalArgumentException(
                    "addresses.size: " + addresses.size() + " (expected: " + config.size() + ")");
        }
        final long deadline = System.nanoTime() + config.timeoutNs();
        for (int p = 0; p < config.rank(); p++) {
            connector.connectTo(p, addresses.get(p), deadline);
        }
        try {
            if (!links.awaitConnected(Math.max(0, deadline - System.nanoTime()))) {
                ExchangeTimeoutException e =
                        new ExchangeTimeoutException(
                                -1,
                                ExchangePhase.DISPATCH,
                                config.rank(),
                                links.firstMissing(),
                                config.timeoutNs());
                abort(e);
                throw e;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while connecting: rank=" + config.rank(), e);
        }
        links.throwIfFailed();
    }

    /** Called by the {@link Handshake} once a peer has named itself. */
    boolean registerPeer(int peer, Channel channel) {
        return links.register(peer, channel);
    }

    TcpConfig config() {
        return config;
    }

    PeerInbox inbox(int peer) {
        return links.inbox(peer);
    }

    @Override
    public int rank() {
        return config.rank();
    }

    @Override
    public int size() {
        return config.size();
    }

    @Override
    public long[] waitedNanos(ExchangePhase phase) {
        return waited.total(phase);
    }

    @Override
    public Transport transport() {
        return TcpTransportProvider.TCP;
    }

    /**
     * Bytes of rows and messages from peers that arrived where they were posted: read there by the
     * socket, after what came before the post, if anything, was copied there by the event loop.
     */
    public long landedBytes() {
        return regions.landedBytes();
    }

    /**
     * Bytes of rows and messages whose whole frame arrived before this rank posted its receive (the
     * peer ran ahead): read into Netty's buffers, then copied.
     */
    public long copiedBytes() {
        return regions.copiedBytes();
    }

    @Override
    public void allToAllCounts(
            long step, ExchangePhase phase, long[] sendCounts, long[] recvCounts) {
        collectives.counts(step, phase, sendCounts, recvCounts);
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        collectives.allToAllV(step, phase, send, sendCounts, recv, recvCounts);
    }

    /**
     * Has each peer's segment written into a staging buffer of its own (reused) just before it is
     * sent, and this rank's own segment straight into {@code recv}.
     */
    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        collectives.allToAllV(step, phase, writer, sendCounts, recv, recvCounts);
    }

    /** Receives into a buffer of its own (reused), then hands it to {@code reader}. */
    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            SegmentReader reader,
            long[] recvCounts) {
        collectives.allToAllV(step, phase, send, sendCounts, reader, recvCounts);
    }

    /**
     * Posts the receive from {@code from} (where an {@link InboundSink#copyTo} sink's bytes belong,
     * else in a buffer of this rank's), sends to {@code to} straight from {@code send}, waits for
     * the message and hands it to {@code sink}, then waits until the send is written. Messages of
     * this rank to itself go through {@link Messages}.
     */
    @Override
    public void sendRecv(
            int to,
            ByteBuffer send,
            int sendOffset,
            int sendBytes,
            int from,
            int recvBytes,
            InboundSink sink) {
        pointToPoint.sendRecv(to, send, sendOffset, sendBytes, from, recvBytes, sink);
    }

    @Override
    public void barrier() {
        allToAllCounts(-1, ExchangePhase.BARRIER, barrierSend, barrierRecv);
    }

    @Override
    public void abort(Throwable cause) {
        links.abort(cause);
    }

    @Override
    public void close() {
        A2aException closed = new A2aException("communicator closed: rank=" + config.rank());
        abort(closed);
        server.close().syncUninterruptibly();
        links.close(closed);
        frames.release();
        regions.release();
    }
}
