package moe.a2a.comm.tcp;

import io.netty.bootstrap.Bootstrap;
import io.netty.bootstrap.ServerBootstrap;
import io.netty.buffer.ByteBuf;
import io.netty.channel.AdaptiveRecvByteBufAllocator;
import io.netty.channel.Channel;
import io.netty.channel.ChannelFuture;
import io.netty.channel.ChannelFutureListener;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.ChannelOption;
import io.netty.channel.socket.SocketChannel;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import moe.a2a.comm.A2aException;
import moe.a2a.comm.Communicator;
import moe.a2a.comm.ExchangeErrors;
import moe.a2a.comm.ExchangePhase;
import moe.a2a.comm.ExchangeTimeoutException;
import moe.a2a.comm.InboundSink;
import moe.a2a.comm.PeerFailedException;
import moe.a2a.comm.SegmentReader;
import moe.a2a.comm.SegmentWriter;
import moe.a2a.comm.Segments;
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
 * <p>Lifecycle: {@link #bind} (listen), hand {@link #localAddress()} to the peers out of band, then
 * {@link #connect} with everyone's address. Collectives are owned by one rank thread.
 */
public final class TcpCommunicator implements Communicator {
    /**
     * Socket buffers large enough that one rank's rows for a peer move in few system calls; also
     * how much of a frame that ran ahead of its post is buffered before its connection is held.
     */
    private static final int SOCKET_BUFFER_BYTES = 4 << 20;

    private final TcpConfig config;
    private final TcpTransport transport;
    private Channel server;
    private final Channel[] peers;
    private final PeerInbox[] inboxes;
    private final CountDownLatch connected;
    private final long[] sendOffsets;
    private final long[] recvOffsets;
    private final long[] barrierSend;
    private final long[] barrierRecv;
    private final DataFrames frames;
    private final ReceiveRegions regions;
    private volatile A2aException failure;

    /** Per peer, the sequence number of the next frame to it, and of the next frame from it. */
    private final long[] sendSeq;

    private final long[] recvSeq;

    /** The sequence numbers of the frames from each peer the exchange in progress takes. */
    private final long[] recvOps;

    private final Messages messages;

    private ByteBuffer staging = ByteBuffer.allocateDirect(0);
    private ByteBuffer inbound = ByteBuffer.allocateDirect(0);
    private final ByteBuffer[] readSegments;
    private final long[] readOffsets;

    private TcpCommunicator(TcpConfig config, TcpTransport transport) {
        int n = config.size();
        this.config = config;
        this.transport = transport;
        this.peers = new Channel[n];
        this.inboxes = new PeerInbox[n];
        for (int p = 0; p < n; p++) {
            inboxes[p] = new PeerInbox(config.rank(), p);
        }
        this.connected = new CountDownLatch(n - 1);
        this.sendOffsets = new long[n];
        this.recvOffsets = new long[n];
        this.barrierSend = new long[n];
        this.barrierRecv = new long[n];
        this.frames = new DataFrames(peers);
        this.regions = new ReceiveRegions(inboxes);
        this.readSegments = new ByteBuffer[n];
        this.readOffsets = new long[n];
        this.sendSeq = new long[n];
        this.recvSeq = new long[n];
        this.recvOps = new long[n];
        this.messages = new Messages(config.rank(), n);
    }

    /** Starts listening on {@code config.bindAddress()} (port 0 picks a free port). */
    public static TcpCommunicator bind(TcpTransport transport, TcpConfig config) {
        TcpCommunicator self = new TcpCommunicator(config, transport);
        self.server =
                new ServerBootstrap()
                        .group(transport.group())
                        .channel(transport.serverChannel())
                        .childOption(ChannelOption.TCP_NODELAY, true)
                        .childOption(ChannelOption.SO_RCVBUF, SOCKET_BUFFER_BYTES)
                        .childOption(ChannelOption.SO_SNDBUF, SOCKET_BUFFER_BYTES)
                        .childHandler(
                                new ChannelInitializer<SocketChannel>() {
                                    @Override
                                    protected void initChannel(SocketChannel ch) {
                                        self.initDataChannel(ch, -1);
                                    }
                                })
                        .bind(config.bindAddress())
                        .syncUninterruptibly()
                        .channel();
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
            connectTo(p, addresses.get(p), deadline);
        }
        try {
            if (!connected.await(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS)) {
                ExchangeTimeoutException e =
                        new ExchangeTimeoutException(
                                -1,
                                ExchangePhase.DISPATCH,
                                config.rank(),
                                firstMissingPeer(),
                                config.timeoutNs());
                abort(e);
                throw e;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while connecting: rank=" + config.rank(), e);
        }
        throwIfFailed();
    }

    private void connectTo(int peer, InetSocketAddress address, long deadline) {
        Bootstrap bootstrap =
                new Bootstrap()
                        .group(transport.group())
                        .channel(transport.socketChannel())
                        .option(ChannelOption.TCP_NODELAY, true)
                        .option(ChannelOption.SO_RCVBUF, SOCKET_BUFFER_BYTES)
                        .option(ChannelOption.SO_SNDBUF, SOCKET_BUFFER_BYTES)
                        .handler(
                                new ChannelInitializer<SocketChannel>() {
                                    @Override
                                    protected void initChannel(SocketChannel ch) {
                                        initDataChannel(ch, peer);
                                    }
                                });
        while (true) {
            ChannelFuture f = bootstrap.connect(address).awaitUninterruptibly();
            if (f.isSuccess()) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new PeerFailedException(
                        config.rank(), peer, "cannot connect to " + address + ": " + f.cause());
            }
            sleepMillis(50);
        }
    }

    /**
     * TLS when the group has it, frames, then the handshake. Plaintext reads land in posted receive
     * regions where they can; under TLS the socket reads ciphertext, so decrypted rows are copied
     * there instead.
     */
    private void initDataChannel(SocketChannel ch, int expectedPeer) {
        FrameDecoder frames = new FrameDecoder(config.maxFrameBytes(), SOCKET_BUFFER_BYTES);
        DataPlaneTls tls = config.tls();
        if (tls == null) {
            ch.config().setRecvByteBufAllocator(new LandingAllocator(readSizes(), frames));
        } else {
            ch.config().setRecvByteBufAllocator(readSizes());
            ch.pipeline().addLast("tls", tls.handler(ch, expectedPeer < 0));
        }
        ch.pipeline()
                .addLast("frames", frames)
                .addLast("handshake", new Handshake(this, expectedPeer));
    }

    synchronized boolean registerPeer(int peer, Channel channel) {
        if (peers[peer] != null || failure != null) {
            return false;
        }
        peers[peer] = channel;
        connected.countDown();
        return true;
    }

    TcpConfig config() {
        return config;
    }

    PeerInbox inbox(int peer) {
        return inboxes[peer];
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
    public Transport transport() {
        return Transport.TCP;
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
        final int n = config.size();
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        throwIfFailed();
        final long deadline = System.nanoTime() + config.timeoutNs();
        for (int p = 0; p < n; p++) {
            if (p != config.rank()) {
                ByteBuf frame = peers[p].alloc().buffer(FrameHeader.BYTES + Long.BYTES);
                FrameHeader.write(
                        frame, FrameHeader.COUNT, phase.ordinal(), step, sendSeq[p]++, Long.BYTES);
                peers[p].writeAndFlush(frame.writeLong(sendCounts[p]));
            }
        }
        recvCounts[config.rank()] = sendCounts[config.rank()];
        for (int p = 0; p < n; p++) {
            if (p != config.rank()) {
                Frame frame = await(p, step, phase, recvSeq[p]++, FrameHeader.COUNT, deadline);
                recvCounts[p] = frame.payload().readLong();
                frame.release();
            }
        }
    }

    @Override
    public void allToAllV(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        exchange(step, phase, send, null, sendCounts, recv, recvCounts);
    }

    /**
     * Posts this rank's receive regions, then sends each peer its rows (written into {@code send}
     * by {@code writer} just before, when there is one, so that the socket moves one peer's rows
     * while the next peer's are written), copies its own rows, and waits for every peer's.
     */
    private void exchange(
            long step,
            ExchangePhase phase,
            ByteBuffer send,
            SegmentWriter writer,
            long[] sendCounts,
            ByteBuffer recv,
            long[] recvCounts) {
        final int n = config.size();
        final int me = config.rank();
        Segments.checkLength("sendCounts", sendCounts, n);
        Segments.checkLength("recvCounts", recvCounts, n);
        throwIfFailed();
        final long deadline = System.nanoTime() + config.timeoutNs();
        long s = 0;
        long r = 0;
        for (int p = 0; p < n; p++) {
            sendOffsets[p] = s;
            recvOffsets[p] = r;
            s += sendCounts[p];
            r += recvCounts[p];
        }
        if (r > recv.capacity()) {
            throw new A2aException(
                    "receive buffer too small: rank="
                            + me
                            + ", needBytes="
                            + r
                            + ", capacityBytes="
                            + recv.capacity());
        }
        if (sendCounts[me] != recvCounts[me]) {
            fail(ExchangeErrors.countMismatch(me, me, sendCounts[me], recvCounts[me]));
        }
        for (int p = 0; p < n; p++) {
            if (p != me) {
                recvOps[p] = recvSeq[p]++;
            }
        }
        try {
            regions.post(recvOps, phase, recv, recvOffsets, recvCounts, me);
        } catch (A2aException e) {
            regions.withdrawAll();
            fail(e);
        }
        for (int i = 1; i < n; i++) {
            int p = (me + i) % n;
            if (writer != null && sendCounts[p] > 0) {
                writer.write(p, send, (int) sendOffsets[p]);
            }
            frames.send(p, phase, step, sendSeq[p]++, send, sendOffsets[p], sendCounts[p]);
        }
        if (writer == null) {
            recv.put((int) recvOffsets[me], send, (int) sendOffsets[me], (int) sendCounts[me]);
        } else if (sendCounts[me] > 0) {
            writer.write(me, recv, (int) recvOffsets[me]);
        }
        try {
            for (int i = 1; i < n; i++) {
                int p = (me - i + n) % n;
                Frame frame = await(p, step, phase, recvOps[p], FrameHeader.DATA, deadline);
                try {
                    regions.take(frame, p, me, recv, recvOffsets[p], recvCounts[p]);
                } catch (A2aException e) {
                    fail(e);
                } finally {
                    frame.release();
                }
            }
        } finally {
            regions.withdrawAll();
        }
        for (int p = 0; p < n; p++) {
            if (p != me) {
                awaitWrite(p, step, phase, deadline);
            }
        }
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
        long total = 0;
        for (long c : sendCounts) {
            total += c;
        }
        if (staging.capacity() < total) {
            staging =
                    ByteBuffer.allocateDirect((int) total).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        exchange(step, phase, staging, writer, sendCounts, recv, recvCounts);
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
        long total = 0;
        for (int p = 0; p < recvCounts.length; p++) {
            readOffsets[p] = total;
            total += recvCounts[p];
        }
        if (inbound.capacity() < total) {
            inbound =
                    ByteBuffer.allocateDirect((int) total).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        }
        allToAllV(step, phase, send, sendCounts, inbound, recvCounts);
        java.util.Arrays.fill(readSegments, inbound);
        reader.read(readSegments, readOffsets);
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
        final int me = config.rank();
        messages.check(to, send, sendOffset, sendBytes, from, recvBytes, sink);
        throwIfFailed();
        final long deadline = System.nanoTime() + config.timeoutNs();
        final boolean remoteFrom = from != NONE && from != me;
        final boolean remoteTo = to != NONE && to != me;
        try {
            ByteBuffer landing = null;
            int landingOffset = 0;
            long recvOp = -1;
            if (remoteFrom) {
                recvOp = recvSeq[from]++;
                landing = messages.landing(sink, recvBytes);
                landingOffset = Messages.landingOffset(sink, landing);
                try {
                    regions.postMessage(from, recvOp, landing, landingOffset, recvBytes);
                } catch (A2aException e) {
                    inboxes[from].unpost();
                    throw e;
                }
            }
            if (remoteTo) {
                frames.sendMessage(to, sendSeq[to]++, send, sendOffset, sendBytes);
            }
            if (to == me || from == me) {
                messages.self(to == me, send, sendOffset, sendBytes, from == me, recvBytes, sink);
            }
            if (remoteFrom) {
                Frame frame =
                        await(
                                from,
                                -1,
                                ExchangePhase.COLLECTIVE,
                                recvOp,
                                FrameHeader.SEND,
                                deadline);
                try {
                    regions.takeMessage(frame, from, me, landing, landingOffset, recvBytes);
                } finally {
                    frame.release();
                    inboxes[from].unpost();
                }
                if (messages.forSink(landing)) {
                    sink.accept(landing, landingOffset, recvBytes);
                }
            }
            if (remoteTo) {
                awaitWrite(to, -1, ExchangePhase.COLLECTIVE, deadline);
            }
        } catch (RuntimeException e) {
            // whatever failed (a sink that threw included), the peers must not wait for this rank,
            // nor may it reuse a header whose write may still be in flight
            abort(e);
            throw e;
        }
    }

    @Override
    public void barrier() {
        allToAllCounts(-1, ExchangePhase.BARRIER, barrierSend, barrierRecv);
    }

    @Override
    public void abort(Throwable cause) {
        A2aException reason =
                cause instanceof A2aException a ? a : new A2aException("aborted: " + cause, cause);
        synchronized (this) {
            if (failure != null) {
                return;
            }
            failure = reason;
        }
        byte[] text = String.valueOf(cause.getMessage()).getBytes(StandardCharsets.UTF_8);
        int len = Math.min(text.length, FrameHeader.MAX_ABORT_BYTES);
        for (Channel ch : peers) {
            if (ch != null && ch.isActive()) {
                ByteBuf frame = ch.alloc().buffer(FrameHeader.BYTES + len);
                FrameHeader.write(frame, FrameHeader.ABORT, 0, -1, 0, len);
                ch.writeAndFlush(frame.writeBytes(text, 0, len))
                        .addListener(ChannelFutureListener.CLOSE);
            }
        }
        for (int p = 0; p < inboxes.length; p++) {
            inboxes[p].fail(new PeerFailedException(config.rank(), reason));
        }
    }

    @Override
    public void close() {
        A2aException closed = new A2aException("communicator closed: rank=" + config.rank());
        abort(closed);
        server.close().syncUninterruptibly();
        for (Channel ch : peers) {
            if (ch != null) {
                ch.close().syncUninterruptibly();
            }
        }
        for (PeerInbox inbox : inboxes) {
            inbox.close(closed);
        }
        frames.release();
        regions.release();
    }

    private Frame await(
            int peer, long step, ExchangePhase phase, long seq, byte kind, long deadline) {
        Frame frame;
        try {
            frame = inboxes[peer].poll(deadline);
        } catch (A2aException e) {
            abort(e);
            throw e;
        }
        if (frame == PeerInbox.TIMED_OUT) {
            ExchangeTimeoutException e =
                    new ExchangeTimeoutException(
                            step, phase, config.rank(), peer, config.timeoutNs());
            abort(e);
            throw e;
        }
        if (frame.op() != seq
                || frame.kind() != kind
                || frame.step() != step
                || frame.phase() != phase.ordinal()) {
            frame.release();
            fail(
                    new A2aException(
                            "protocol error: rank="
                                    + config.rank()
                                    + ", peer="
                                    + peer
                                    + ", step="
                                    + frame.step()
                                    + ", phase="
                                    + frame.phase()
                                    + ", op="
                                    + frame.op()
                                    + ", kind="
                                    + FrameHeader.kindName(frame.kind())
                                    + " (expected: step="
                                    + step
                                    + ", phase="
                                    + phase.ordinal()
                                    + ", op="
                                    + seq
                                    + ", kind="
                                    + FrameHeader.kindName(kind)
                                    + ")"));
        }
        return frame;
    }

    private void awaitWrite(int peer, long step, ExchangePhase phase, long deadline) {
        ChannelFuture write = frames.takeWrite(peer);
        long waitNs = Math.max(0, deadline - System.nanoTime());
        if (!write.awaitUninterruptibly(waitNs, TimeUnit.NANOSECONDS)) {
            fail(
                    new ExchangeTimeoutException(
                            step, phase, config.rank(), peer, config.timeoutNs()));
        }
        if (!write.isSuccess()) {
            fail(new PeerFailedException(config.rank(), peer, "write failed: " + write.cause()));
        }
    }

    private void fail(A2aException e) {
        abort(e);
        throw e;
    }

    private void throwIfFailed() {
        A2aException f = failure;
        if (f != null) {
            throw f instanceof PeerFailedException ? f : new PeerFailedException(config.rank(), f);
        }
    }

    private int firstMissingPeer() {
        synchronized (this) {
            for (int p = 0; p < peers.length; p++) {
                if (p != config.rank() && peers[p] == null) {
                    return p;
                }
            }
        }
        return -1;
    }

    /** Reads grow up to 1 MiB per call when rows stream in, instead of Netty's 64 KiB. */
    private static AdaptiveRecvByteBufAllocator readSizes() {
        return new AdaptiveRecvByteBufAllocator(64, 64 << 10, 1 << 20);
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new A2aException("interrupted while connecting", e);
        }
    }
}
