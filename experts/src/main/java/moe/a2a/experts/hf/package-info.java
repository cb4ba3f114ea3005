/**
 * Hugging Face checkpoints: {@code config.json} (architecture and hyperparameters), single-file or
 * sharded safetensors, FP8 weights with block scales, as a {@link moe.a2a.experts.WeightSource}.
 */
@NullMarked
package moe.a2a.experts.hf;

import org.jspecify.annotations.NullMarked;
