package moe.a2a.gpu;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.javacpp.PointerPointer;
import org.junit.jupiter.api.Test;

/**
 * The pointer lists cuBLAS's batched and grouped calls read: a {@link PointerPointer} at a byte
 * offset must address the list there, one pointer an element (on host memory here; the device's
 * addresses are numbers alike).
 */
class CudaMemoryTest {
    @Test
    void shouldAddressAPointerListByByteOffset() {
        try (BytePointer lists = new BytePointer(64)) {
            for (int i = 0; i < 8; i++) {
                lists.putLong(i * (long) Long.BYTES, 0x1000L + 0x100L * i);
            }
            PointerPointer<Pointer> b = CudaMemory.pointerArray(lists, 3L * Long.BYTES);
            assertThat(b.address() + b.position() * (long) Long.BYTES)
                    .isEqualTo(lists.address() + 24);
            assertThat(b.get(0).address()).isEqualTo(0x1300L);
            assertThat(b.get(2).address()).isEqualTo(0x1500L);
        }
    }

    @Test
    void shouldRefuseAnOffsetInsideAPointer() {
        try (BytePointer lists = new BytePointer(64)) {
            assertThatThrownBy(() -> CudaMemory.pointerArray(lists, 12))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("offset: 12");
        }
    }
}
