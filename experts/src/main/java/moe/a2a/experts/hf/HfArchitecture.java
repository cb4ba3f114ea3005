package moe.a2a.experts.hf;

import java.util.Arrays;
import java.util.stream.Collectors;
import moe.a2a.experts.WeightNaming;

/**
 * The MoE architectures served from a Hugging Face checkpoint, by the class name {@code
 * config.json} gives in {@code architectures} (or its {@code model_type}), with their tensor names.
 */
public enum HfArchitecture {
    MIXTRAL("MixtralForCausalLM", "mixtral", WeightNaming.MIXTRAL),
    QWEN2_MOE("Qwen2MoeForCausalLM", "qwen2_moe", WeightNaming.DEEPSEEK),
    QWEN3_MOE("Qwen3MoeForCausalLM", "qwen3_moe", WeightNaming.DEEPSEEK),
    DEEPSEEK_V2("DeepseekV2ForCausalLM", "deepseek_v2", WeightNaming.DEEPSEEK),
    DEEPSEEK_V3("DeepseekV3ForCausalLM", "deepseek_v3", WeightNaming.DEEPSEEK);

    private final String className;
    private final String modelType;
    private final WeightNaming naming;

    HfArchitecture(String className, String modelType, WeightNaming naming) {
        this.className = className;
        this.modelType = modelType;
        this.naming = naming;
    }

    /** The {@code architectures} entry, e.g. {@code MixtralForCausalLM}. */
    public String className() {
        return className;
    }

    public WeightNaming naming() {
        return naming;
    }

    /**
     * The architecture {@code config.json} names.
     *
     * @param field the field it came from, for the error
     * @throws IllegalArgumentException naming the field and the supported values
     */
    static HfArchitecture of(String field, String name) {
        for (HfArchitecture a : values()) {
            if (a.className.equals(name) || a.modelType.equals(name)) {
                return a;
            }
        }
        throw new IllegalArgumentException(
                "config.json "
                        + field
                        + ": "
                        + name
                        + " (expected: one of "
                        + Arrays.stream(values())
                                .map(a -> a.className)
                                .collect(Collectors.joining(", "))
                        + ")");
    }

    @Override
    public String toString() {
        return className;
    }
}
