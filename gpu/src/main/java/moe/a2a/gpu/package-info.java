/**
 * The GPU side of moe-a2a: where the CUDA and NCCL libraries come from ({@link
 * moe.a2a.gpu.GpuLibraries}), whether this machine can use them ({@link moe.a2a.gpu.GpuProbe}), and
 * checked CUDA calls. Nothing here loads a native library until asked, so every class is safe to
 * touch on a machine without a GPU.
 */
@NullMarked
package moe.a2a.gpu;

import org.jspecify.annotations.NullMarked;
