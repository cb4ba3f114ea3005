#!/usr/bin/env bash
# The GPU machine check, from target/gpu-bundle (built by scripts/gpu-bundle.sh): no Java, no
# network needed. Finds libcudart/libnccl from NVIDIA's Python wheels (or $MOE_A2A_CUDA_LIB_DIR /
# $MOE_A2A_NCCL_LIB_DIR), then runs GpuCheck at world size 1: probe; dispatch + combine on the GPU
# against the CPU path in bf16, fp16, fp32, with FP8 dispatch and with capacity drops; the layer
# with cuBLAS experts (and a gated shared expert) against the reference; layers restaged for
# another placement; experts held in FP8 against bf16; the low-latency step replayed as a CUDA
# graph against the same step enqueued (plain, with a shared expert, as a sparse group, at an odd
# hidden size) and its time both ways; kernel and NCCL timings and a served step's stages at the
# prefill rank-0 shape; NCCL's own collectives against a reference (across the GPUs too, up to 8,
# when there are two or more); then the served path (GpuServedCheck: a control plane and a worker on
# nccl in one process, a client's answers checked in bf16, fp16 and fp32, normal and low-latency,
# after a placement rollout, with FP8 dispatch, with an expert capacity, and for a checkpoint with a
# gated shared expert). Prints each check's time as it ends, a table last, then the total time;
# a check that throws is a failed row and the others still run.
# exit 0 = every check passed, 1 = one failed, 3 = no usable GPU.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bundle="${MOE_A2A_GPU_BUNDLE:-$root/target/gpu-bundle}"
if [ ! -x "$bundle/jre/bin/java" ]; then
  echo "gpu-check: no bundle at $bundle; build it first (on a machine with a JDK): scripts/gpu-bundle.sh" >&2
  exit 2
fi

args=()
# Ask Python where the wheels are, when Python is there; GpuLibraries also searches site-packages itself.
if command -v python3 >/dev/null 2>&1; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null || true)
  if [ -z "${MOE_A2A_NCCL_LIB_DIR:-}" ] && [ -n "$nccl_dir" ] && [ -e "$nccl_dir/libnccl.so.2" ]; then
    args+=(--nccl-lib-dir "$nccl_dir")
  fi
  cuda_dir=$(python3 - <<'PY' 2>/dev/null || true
import os, importlib
for name in ("nvidia.cu13", "nvidia.cuda_runtime"):
    try:
        m = importlib.import_module(name)
    except ImportError:
        continue
    for p in m.__path__:
        lib = os.path.join(p, "lib")
        if os.path.exists(os.path.join(lib, "libcudart.so.13")):
            print(lib)
            raise SystemExit
PY
)
  if [ -z "${MOE_A2A_CUDA_LIB_DIR:-}" ] && [ -n "$cuda_dir" ]; then
    args+=(--cuda-lib-dir "$cuda_dir")
  fi
fi

# A private JavaCPP cache: a symlink cached by an earlier run must not pick the libraries.
cache="$(mktemp -d)"
trap 'rm -rf "$cache"' EXIT
# NCCL's own warnings in the output; cuBLAS with one fixed workspace a stream, so a graph's replay
# and the same step enqueued compute alike (cuBLAS's documented setting for reproducible results).
export NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
export CUBLAS_WORKSPACE_CONFIG="${CUBLAS_WORKSPACE_CONFIG:-:4096:8}"
# Under a device run, the whole output and a JVM crash's report come back in $OUT as well.
out_dir="${OUT:-}"
log=/dev/null
error_file=/tmp/hs_err_%p.log
if [ -n "$out_dir" ] && [ -d "$out_dir" ]; then
  log="$out_dir/gpu-check.log"
  error_file="$out_dir/hs_err_%p.log"
fi
{
  echo "bundle built from commit $(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
} | tee "$log"
# JavaCPP's own limits on native memory are off: the served step's shape uploads gigabytes of
# experts through host buffers, and the device's memory is not the JVM's to count.
set +e
"$bundle/jre/bin/java" --add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED \
  --sun-misc-unsafe-memory-access=allow -XX:MaxRAMPercentage=75 -XX:ErrorFile="$error_file" \
  -Dorg.bytedeco.javacpp.cachedir="$cache" -Dorg.bytedeco.javacpp.maxBytes=0 \
  -Dorg.bytedeco.javacpp.maxPhysicalBytes=0 -Xmx4g \
  -cp "$bundle/lib/*" moe.a2a.cli.GpuCheckMain "${args[@]}" "$@" 2>&1 | tee -a "$log"
exit "${PIPESTATUS[0]}"
