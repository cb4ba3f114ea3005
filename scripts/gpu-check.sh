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
# gated shared expert). Each check runs in a JVM of its own, bounded by a cap (180 s) and by what
# is left of the run's budget (540 s); it prints its time as it ends, and the rows of them all make
# one table last, then the total time. A check that throws, crashes its JVM or runs out of time is
# a failed row and the others still run.
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
rows="$cache/gpu-check-rows.tsv"
if [ -n "$out_dir" ] && [ -d "$out_dir" ]; then
  log="$out_dir/gpu-check.log"
  rows="$out_dir/gpu-check-rows.tsv"
  error_file="$out_dir/hs_err_%p.log"
fi
{
  echo "bundle built from commit $(cat "$bundle/COMMIT" 2>/dev/null || echo unknown)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null || echo "nvidia-smi: not available"
} | tee "$log"
# JavaCPP's own limits on native memory are off: the served step's shape uploads gigabytes of
# experts through host buffers, and the device's memory is not the JVM's to count.
java_cmd=("$bundle/jre/bin/java" --add-modules=jdk.incubator.vector --enable-native-access=ALL-UNNAMED
  --sun-misc-unsafe-memory-access=allow -XX:MaxRAMPercentage=75 -XX:ErrorFile="$error_file"
  -Dorg.bytedeco.javacpp.cachedir="$cache" -Dorg.bytedeco.javacpp.maxBytes=0
  -Dorg.bytedeco.javacpp.maxPhysicalBytes=0 -Xmx4g
  -cp "$bundle/lib/*" moe.a2a.cli.GpuCheckMain)

# Each check runs in a JVM of its own: a crash, or an error that poisons the CUDA context (an
# illegal address), costs that check alone. Each is bounded by what is left of the run's budget
# and by a cap of its own; the rows land in one file ($OUT's, under a device run, so that they come
# back even if the run is cut short) and print as one table at the end.
budget_s="${MOE_A2A_CHECK_BUDGET_S:-540}"
cap_s="${MOE_A2A_CHECK_TIMEOUT_S:-180}"
: >"$rows"
start=$SECONDS
mapfile -t checks < <("${java_cmd[@]}" --list 2>/dev/null)
if [ "${#checks[@]}" -eq 0 ]; then
  echo "gpu-check: the bundle's GpuCheckMain listed no checks:" >&2
  "${java_cmd[@]}" --list >&2
  exit 2
fi
set +e
for check in "${checks[@]}"; do
  left=$((budget_s - (SECONDS - start) - 15))
  if [ "$left" -lt 20 ]; then
    printf '%s\tskipped: the run'"'"'s budget of %s s was spent\tFAIL\n' "$check" "$budget_s" >>"$rows"
    continue
  fi
  limit=$((left < cap_s ? left : cap_s))
  echo "== $check (at most $limit s)" | tee -a "$log"
  before=$(wc -l <"$rows")
  timeout -k 10 "$limit" "${java_cmd[@]}" "${args[@]}" "$@" --only "$check" --rows "$rows" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  case "$rc" in
    0) ;;
    1)
      # 1 is also what a JVM that failed to start, or a throwable the checks did not catch, exits with
      if ! tail -n +"$((before + 1))" "$rows" | grep -q $'\tFAIL$'; then
        printf '%s\texited 1 without a failed row (see the log above)\tFAIL\n' "$check" >>"$rows"
      fi
      ;;
    3) "${java_cmd[@]}" --print-rows "$rows" 2>&1 | tee -a "$log"; exit 3 ;;
    124|137) printf '%s\ttimed out after %s s\tFAIL\n' "$check" "$limit" >>"$rows" ;;
    *) printf '%s\tthe JVM exited %s (a crash leaves hs_err_PID.log)\tFAIL\n' "$check" "$rc" >>"$rows" ;;
  esac
done
"${java_cmd[@]}" --print-rows "$rows" 2>&1 | tee -a "$log"
rc=${PIPESTATUS[0]}
echo "gpu-check took $((SECONDS - start)) s" | tee -a "$log"
exit "$rc"
