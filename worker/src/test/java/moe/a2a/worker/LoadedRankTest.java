package moe.a2a.worker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import moe.a2a.dispatch.DispatchDType;
import moe.a2a.v1.ModelSpec;
import org.junit.jupiter.api.Test;

/** A worker serves the dispatch dtype the control plane's model spec names. */
class LoadedRankTest {
    private static final ModelSpec SPEC =
            ModelSpec.newBuilder()
                    .setExperts(4)
                    .setHidden(8)
                    .setFfn(8)
                    .setTopK(2)
                    .setLayers(1)
                    .setSeed(3)
                    .build();

    @Test
    void shouldDispatchAsTheSpecSaysWhenItNamesADType() {
        assertThat(LoadedRank.model(SPEC).dispatchDType()).isEqualTo(DispatchDType.BF16);
        assertThat(
                        LoadedRank.model(SPEC.toBuilder().setDispatchDtype("fp8").build())
                                .dispatchDType())
                .isEqualTo(DispatchDType.FP8);
    }

    @Test
    void shouldNameTheFieldWhenTheSpecsDTypeIsUnknown() {
        assertThatThrownBy(
                        () -> LoadedRank.model(SPEC.toBuilder().setDispatchDtype("int4").build()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("model.dispatch_dtype: int4 (expected: one of bf16, fp8)");
    }
}
