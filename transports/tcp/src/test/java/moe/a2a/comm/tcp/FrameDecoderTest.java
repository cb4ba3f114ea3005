package moe.a2a.comm.tcp;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.embedded.EmbeddedChannel;
import io.netty.handler.codec.CorruptedFrameException;
import io.netty.handler.codec.TooLongFrameException;
import java.nio.charset.StandardCharsets;
import java.util.SplittableRandom;
import moe.a2a.comm.PeerFailedException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class FrameDecoderTest {

    @Test
    void shouldDecodeFramesWhenFedOneByteAtATime() {
        ByteBuf stream = stream(new SplittableRandom(1));
        EmbeddedChannel ch = handshaken(1 << 20);
        while (stream.isReadable()) {
            ch.writeInbound(stream.readRetainedSlice(1));
        }
        stream.release();
        assertFrames(ch, new SplittableRandom(1));
        assertThat(ch.finish()).isFalse();
    }

    @Test
    void shouldDecodeFramesWhenFedRandomFragments() {
        for (long seed = 0; seed < 20; seed++) {
            ByteBuf stream = stream(new SplittableRandom(seed));
            EmbeddedChannel ch = handshaken(1 << 20);
            SplittableRandom cuts = new SplittableRandom(seed + 1000);
            while (stream.isReadable()) {
                ch.writeInbound(
                        stream.readRetainedSlice(
                                Math.min(stream.readableBytes(), cuts.nextInt(1, 700))));
            }
            stream.release();
            assertFrames(ch, new SplittableRandom(seed));
            assertThat(ch.finish()).isFalse();
        }
    }

    /**
     * The socket's reads go where {@link FrameDecoder#landingBuffer} says, up to the frame's end;
     * payload bytes that came with the header are copied there (the place posted first, or only
     * once they had arrived); the next frame decodes as usual.
     */
    @ParameterizedTest
    @ValueSource(booleans = {true, false})
    void shouldLandDataFrameWhereRankPostedIt(boolean postedBeforeFrame) {
        SplittableRandom random = new SplittableRandom(5);
        byte[] rows = new byte[10_000];
        random.nextBytes(rows);
        ByteBuf region = Unpooled.directBuffer(rows.length).writeZero(rows.length).clear();
        PeerInbox inbox = new PeerInbox(0, 1);
        FrameDecoder decoder = new FrameDecoder(1 << 20, 1 << 20);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        decoder.landIn(inbox);
        if (postedBeforeFrame) {
            inbox.post(FrameHeader.DATA, 3, rows.length, region);
        }
        ByteBuf first = Unpooled.buffer();
        FrameHeader.write(first, FrameHeader.DATA, 1, 2, 3, rows.length);
        ch.writeInbound(first.writeBytes(rows, 0, 100));
        assertThat(ch.config().isAutoRead()).as("100 bytes ahead: within the bound").isTrue();
        if (!postedBeforeFrame) {
            inbox.post(FrameHeader.DATA, 3, rows.length, region);
        }
        int at = 100;
        while (at < rows.length) {
            ByteBuf read = decoder.landingBuffer();
            assertThat(read.memoryAddress() + read.writerIndex())
                    .isEqualTo(region.memoryAddress() + at);
            int n = Math.min(read.writableBytes(), random.nextInt(1, 3000));
            ch.writeInbound(read.writeBytes(rows, at, n));
            at += n;
        }
        assertThat(decoder.landingBuffer()).isNull();
        ByteBuf next = Unpooled.buffer();
        FrameHeader.write(next, FrameHeader.COUNT, 1, 2, 4, Long.BYTES);
        ch.writeInbound(next.writeLong(77));

        Frame landed = ch.readInbound();
        assertThat(landed.landed()).isTrue();
        assertThat(landed.op()).isEqualTo(3);
        byte[] got = new byte[rows.length];
        region.getBytes(0, got);
        assertThat(got).isEqualTo(rows);
        Frame count = ch.readInbound();
        assertThat(count.landed()).isFalse();
        assertThat(count.payload().readLong()).isEqualTo(77);
        count.release();
        assertThat(region.refCnt()).isEqualTo(1);
        region.release();
        assertThat(ch.finish()).isFalse();
    }

    /** Nothing of a frame whose length is not the posted count is read into the region. */
    @ParameterizedTest
    @ValueSource(ints = {999, 1001})
    void shouldFailAtTheHeaderWhenDataFrameDisagreesWithThePost(int sentBytes) {
        ByteBuf region = Unpooled.directBuffer(1000).writeZero(1000).clear();
        PeerInbox inbox = new PeerInbox(0, 1);
        FrameDecoder decoder = new FrameDecoder(1 << 20, 1 << 20);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        decoder.landIn(inbox);
        inbox.post(FrameHeader.DATA, 3, 1000, region);
        ByteBuf frame = Unpooled.buffer();
        FrameHeader.write(frame, FrameHeader.DATA, 0, 2, 3, sentBytes);
        frame.writeBytes(new byte[sentBytes]).setByte(FrameHeader.BYTES, 7);

        assertThatThrownBy(() -> ch.writeInbound(frame))
                .isInstanceOf(PeerFailedException.class)
                .hasMessage(
                        "exchange peer failed: rank=0, peer=1, reason=all-to-all-v counts"
                                + " disagree: op=3, sentBytes="
                                + sentBytes
                                + ", expectedBytes=1000");
        assertThat(decoder.landingBuffer()).isNull();
        assertThat(region.writerIndex()).isZero();
        assertThat(region.getByte(0)).isZero();
        ch.finishAndReleaseAll();
        region.release();
    }

    /**
     * A frame ahead of its post is read up to the bound, then the connection is held; the post lets
     * it be read again only when the frame's length is the posted count.
     */
    @ParameterizedTest
    @ValueSource(ints = {9_999, 10_000, 10_001})
    void shouldHoldAFrameAheadOfItsPostUntilThePostChecksItsLength(int postedBytes) {
        SplittableRandom random = new SplittableRandom(postedBytes);
        byte[] rows = new byte[10_000];
        random.nextBytes(rows);
        ByteBuf region = Unpooled.directBuffer(postedBytes).writeZero(postedBytes).clear();
        PeerInbox inbox = new PeerInbox(0, 1);
        FrameDecoder decoder = new FrameDecoder(1 << 20, 4096);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        decoder.landIn(inbox);
        ByteBuf first = Unpooled.buffer();
        FrameHeader.write(first, FrameHeader.DATA, 0, 2, 3, rows.length);
        ch.writeInbound(first.writeBytes(rows, 0, 5000));
        assertThat(ch.config().isAutoRead()).as("5000 bytes ahead of the post").isFalse();
        assertThat(decoder.landingBuffer()).isNull();

        if (postedBytes != rows.length) {
            assertThatThrownBy(() -> inbox.post(FrameHeader.DATA, 3, postedBytes, region))
                    .isInstanceOf(PeerFailedException.class)
                    .hasMessageContaining(
                            "peer=1, reason=all-to-all-v counts disagree: op=3, sentBytes=10000,"
                                    + " expectedBytes="
                                    + postedBytes);
            assertThat(ch.config().isAutoRead()).isFalse();
            assertThat(region.writerIndex()).isZero();
        } else {
            inbox.post(FrameHeader.DATA, 3, postedBytes, region);
            assertThat(ch.config().isAutoRead()).isTrue();
            ByteBuf read = decoder.landingBuffer();
            ch.writeInbound(read.writeBytes(rows, 5000, 5000));
            Frame landed = ch.readInbound();
            assertThat(landed.landed()).isTrue();
            byte[] got = new byte[rows.length];
            region.getBytes(0, got);
            assertThat(got).isEqualTo(rows);
        }
        ch.finishAndReleaseAll();
        region.release();
    }

    /**
     * A peer several point-to-point messages ahead: frames that came whole in one read are queued,
     * the connection held until the last of them is posted (the rank takes the others without
     * reading), and only that post lets it be read again; a frame after them still lands.
     */
    @Test
    void shouldHoldUntilTheLastOfSeveralFramesAheadIsPosted() {
        PeerInbox inbox = new PeerInbox(0, 1);
        FrameDecoder decoder = new FrameDecoder(1 << 20, 4096);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        decoder.landIn(inbox);
        ByteBuf ahead = Unpooled.buffer();
        for (int op = 0; op < 3; op++) {
            FrameHeader.write(ahead, FrameHeader.SEND, 3, -1, op, 10 + op);
            ahead.writeZero(10 + op).setByte(ahead.writerIndex() - 1, op);
        }
        ch.writeInbound(ahead);
        assertThat(ch.config().isAutoRead()).as("three frames ahead").isFalse();
        for (int op = 0; op < 3; op++) {
            inbox.post(FrameHeader.SEND, op, 10 + op, PeerInbox.NO_PLACE);
            assertThat(ch.config().isAutoRead()).as("posted %d", op).isEqualTo(op == 2);
            Frame frame = ch.readInbound();
            assertThat(frame.kind()).isEqualTo(FrameHeader.SEND);
            assertThat(frame.op()).isEqualTo(op);
            assertThat(frame.payload().readableBytes()).isEqualTo(10 + op);
            assertThat(frame.payload().getByte(9 + op)).isEqualTo((byte) op);
            frame.release();
            inbox.unpost();
        }
        ByteBuf region = Unpooled.directBuffer(100).writeZero(100).clear();
        inbox.post(FrameHeader.SEND, 3, 100, region);
        ByteBuf next = Unpooled.buffer();
        FrameHeader.write(next, FrameHeader.SEND, 3, -1, 3, 100);
        ch.writeInbound(next);
        ByteBuf read = decoder.landingBuffer();
        assertThat(read.memoryAddress()).isEqualTo(region.memoryAddress());
        ch.writeInbound(read.writeBytes(new byte[100]));
        Frame landed = ch.readInbound();
        assertThat(landed.landed()).isTrue();
        assertThat(region.refCnt()).isEqualTo(1);
        region.release();
        assertThat(ch.finish()).isFalse();
    }

    /** A frame of another kind than the one posted fails its peer at the header. */
    @Test
    void shouldFailAtTheHeaderWhenAFrameIsOfAnotherKindThanPosted() {
        ByteBuf region = Unpooled.directBuffer(16).writeZero(16).clear();
        PeerInbox inbox = new PeerInbox(0, 1);
        FrameDecoder decoder = new FrameDecoder(1 << 20, 1 << 20);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        decoder.landIn(inbox);
        inbox.post(FrameHeader.SEND, 0, 16, region);
        ByteBuf frame = Unpooled.buffer();
        FrameHeader.write(frame, FrameHeader.DATA, 3, -1, 0, 16);
        assertThatThrownBy(() -> ch.writeInbound(frame.writeZero(16)))
                .isInstanceOf(PeerFailedException.class)
                .hasMessageContaining("frame of another kind: op=0, kind=DATA (expected: SEND)");
        assertThat(region.writerIndex()).isZero();
        ch.finishAndReleaseAll();
        region.release();
    }

    @Test
    void shouldFailWhenMagicIsWrong() {
        EmbeddedChannel ch = handshaken(1 << 20);
        ByteBuf garbage =
                Unpooled.buffer()
                        .writeBytes(
                                "GET / HTTP/1.1\r\nHost: example.org\r\n\r\n"
                                        .getBytes(StandardCharsets.US_ASCII));
        assertThatThrownBy(() -> ch.writeInbound(garbage))
                .isInstanceOf(CorruptedFrameException.class)
                .hasMessageContaining("bad frame magic");
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldFailBeforeAllocatingWhenFrameClaimsTenGigabytes() {
        EmbeddedChannel ch = handshaken(1 << 20);
        ByteBuf header = Unpooled.buffer();
        FrameHeader.write(header, FrameHeader.DATA, 0, 0, 0, 10_000_000_000L);
        assertThatThrownBy(() -> ch.writeInbound(header))
                .isInstanceOf(TooLongFrameException.class)
                .hasMessageContaining("length=10000000000 (expected: in [0, 1048576])");
        ch.finishAndReleaseAll();
    }

    @Test
    void shouldFailWhenKindIsUnknown() {
        EmbeddedChannel ch = handshaken(1 << 20);
        ByteBuf header = Unpooled.buffer();
        FrameHeader.write(header, (byte) 9, 0, 0, 0, 0);
        assertThatThrownBy(() -> ch.writeInbound(header))
                .hasMessageContaining("unknown frame kind: kind=9");
        ch.finishAndReleaseAll();
    }

    /**
     * COUNT, DATA of random length (zero included), DATA, ABORT: contents derived from the seed.
     */
    private static ByteBuf stream(SplittableRandom random) {
        ByteBuf out = Unpooled.buffer();
        FrameHeader.write(out, FrameHeader.COUNT, 1, 9, 1, 8);
        out.writeLong(random.nextLong());
        for (int i = 0; i < 2; i++) {
            int len = i == 0 ? random.nextInt(0, 5000) : 0;
            FrameHeader.write(out, FrameHeader.DATA, 0, 10 + i, 2 + i, len);
            for (int b = 0; b < len; b++) {
                out.writeByte(random.nextInt(256));
            }
        }
        FrameHeader.write(out, FrameHeader.ABORT, 0, -1, 4, 3);
        out.writeBytes(new byte[] {'b', 'y', 'e'});
        return out;
    }

    private static void assertFrames(EmbeddedChannel ch, SplittableRandom random) {
        Frame count = ch.readInbound();
        assertThat(count.kind()).isEqualTo(FrameHeader.COUNT);
        assertThat(count.op()).isEqualTo(1);
        assertThat(count.phase()).isEqualTo(1);
        assertThat(count.step()).isEqualTo(9);
        assertThat(count.payload().readLong()).isEqualTo(random.nextLong());
        count.release();
        for (int i = 0; i < 2; i++) {
            int len = i == 0 ? random.nextInt(0, 5000) : 0;
            Frame data = ch.readInbound();
            assertThat(data.kind()).isEqualTo(FrameHeader.DATA);
            assertThat(data.op()).isEqualTo(2 + i);
            assertThat(data.step()).isEqualTo(10 + i);
            assertThat(data.payload().readableBytes()).isEqualTo(len);
            for (int b = 0; b < len; b++) {
                assertThat(data.payload().readUnsignedByte())
                        .isEqualTo((short) random.nextInt(256));
            }
            data.release();
        }
        Frame abort = ch.readInbound();
        assertThat(abort.kind()).isEqualTo(FrameHeader.ABORT);
        assertThat(abort.payload().toString(java.nio.charset.StandardCharsets.UTF_8))
                .isEqualTo("bye");
        abort.release();
        Object rest = ch.readInbound();
        assertThat(rest).isNull();
    }

    @Test
    void shouldRefuseAnyFrameButHelloBeforeTheHandshake() {
        EmbeddedChannel ch = new EmbeddedChannel(new FrameDecoder(1 << 20, 1 << 20));
        ByteBuf frame = Unpooled.buffer();
        FrameHeader.write(frame, FrameHeader.DATA, 0, 0, 0, Integer.MAX_VALUE);
        assertThatThrownBy(() -> ch.writeInbound(frame))
                .isInstanceOf(CorruptedFrameException.class)
                .hasMessage("a DATA frame before the handshake (expected: HELLO)");
    }

    /** A decoder past the handshake: its frames may land in an inbox of their own. */
    private static EmbeddedChannel handshaken(long maxFrameBytes) {
        FrameDecoder decoder = new FrameDecoder(maxFrameBytes, maxFrameBytes);
        EmbeddedChannel ch = new EmbeddedChannel(decoder);
        decoder.landIn(new PeerInbox(0, 1));
        return ch;
    }
}
