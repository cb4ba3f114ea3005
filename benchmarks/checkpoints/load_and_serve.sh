#!/usr/bin/env bash
# A checkpoint directory served by a control plane and 4 TCP worker processes: each worker's load
# time and resident memory, the control plane's, and client throughput with the model's own gate.
# Usage: benchmarks/checkpoints/load_and_serve.sh DIR [--out OUT]   (DIR from write_checkpoint.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
model=$1
out=/tmp/load-and-serve
if [[ "${2:-}" == "--out" ]]; then out=$3; fi
mkdir -p "$out"
port=50571
pids=()
cleanup() { kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap cleanup EXIT

bin/moe-a2a control-plane --model "$model" --world-size 4 --port $port --cluster-port $((port + 10)) --metrics-port 0 \
  >"$out/control-plane.log" 2>&1 &
pids+=($!)
cp_pid=$!
until grep -q "serving on port" "$out/control-plane.log"; do sleep 0.5; done
start=$(date +%s%N)
for r in 0 1 2 3; do
  bin/moe-a2a worker --control-plane 127.0.0.1:$((port + 10)) --metrics-port 0 --transport tcp --rank $r \
    >"$out/worker-$r.log" 2>&1 &
  pids+=($!)
  worker_pids[$r]=$!
done
until bin/moe-a2a health --target 127.0.0.1:$port >/dev/null 2>&1; do sleep 0.5; done
ready_ms=$(( ($(date +%s%N) - start) / 1000000 ))

rss_mib() { echo $(( $(awk '/VmRSS/ {print $2}' "/proc/$1/status") / 1024 )); }
{
  echo "checkpoint: $model ($(du -sh "$model" | cut -f1) on disk)"
  echo "4 workers started -> cluster SERVING: ${ready_ms} ms"
  for r in 0 1 2 3; do
    load=$(grep -o "in [0-9]* ms" "$out/worker-$r.log" | head -1)
    echo "worker $r: loaded its experts $load, resident $(rss_mib "${worker_pids[$r]}") MiB"
  done
  echo "control plane: resident $(rss_mib "$cp_pid") MiB"
} | tee "$out/summary.txt"

bin/moe-a2a client --target 127.0.0.1:$port --routing GATE --tokens 16 --requests 2 --verify -1 \
  --concurrency 1 >"$out/client-verify.txt" 2>&1
bin/moe-a2a client --target 127.0.0.1:$port --routing GATE --tokens 256 --requests 60 --verify 0 \
  --concurrency 4 >"$out/client-throughput.txt" 2>&1
{
  grep "checked" "$out/client-verify.txt"
  grep -E "tokens/s|latency|server stages" "$out/client-throughput.txt"
  for r in 0 1 2 3; do
    echo "worker $r after serving: resident $(rss_mib "${worker_pids[$r]}") MiB"
  done
} | tee -a "$out/summary.txt"
