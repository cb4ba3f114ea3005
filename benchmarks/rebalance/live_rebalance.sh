#!/usr/bin/env bash
# Live rebalancing under skewed load: layer 0's rank imbalance with and without it (every answer
# checked against the reference), and client latency while a move is staged against steady state.
# Usage: benchmarks/rebalance/live_rebalance.sh [--out DIR]; needs bin/moe-a2a built, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/live-rebalance
if [[ "${1:-}" == "--out" ]]; then out=$2; fi
mkdir -p "$out"
# summarize.py times each move from the ISO-8601 timestamps the server log carries by default

# serve NAME PORT METRICS_PORT ARGS...: starts a server, waits until it answers DescribeModel
serve() {
  local name=$1 port=$2 mport=$3
  shift 3
  bin/moe-a2a serve --port "$port" --metrics-port "$mport" --experts 16 --world-size 4 --top-k 2 "$@" \
    >"$out/$name.server.log" 2>&1 &
  echo $! >"$out/$name.pid"
  for _ in $(seq 1 120); do
    grep -q "serving on port" "$out/$name.server.log" && return 0
    sleep 1
  done
  echo "server $name did not start" >&2
  exit 1
}

stop() {
  kill "$(cat "$out/$1.pid")" 2>/dev/null || true
  wait "$(cat "$out/$1.pid")" 2>/dev/null || true
}

# 1. Imbalance, every answer verified (hidden 256 / ffn 512 keeps the scalar reference quick; the
#    routing, and so the imbalance, does not depend on the weights).
for mode in plain rebalanced; do
  if [[ $mode == plain ]]; then flags=(); else flags=(--redundant-experts 4 --rebalance-every 32); fi
  serve "$mode" 50561 9561 --hidden 256 --ffn 512 "${flags[@]}"
  bin/moe-a2a client --target localhost:50561 --skew 1.2 --requests 600 --tokens 128 \
    --concurrency 2 --verify -1 >"$out/$mode.client.txt" 2>&1
  curl -s localhost:9561/metrics >"$out/$mode.metrics.txt"
  stop "$mode"
done

# 2. Latency during a move at full load, the default model (hidden 1024, ffn 2816: a moved expert
#    is 33 MiB of fp32 weights to generate and load).
serve move 50562 9562 --redundant-experts 4 --rebalance-every 32
bin/moe-a2a client --target localhost:50562 --skew 1.2 --requests 900 --tokens 256 \
  --concurrency 4 --verify 8 --latency-log "$out/move.latency.csv" >"$out/move.client.txt" 2>&1
curl -s localhost:9562/metrics >"$out/move.metrics.txt"
stop move

python3 benchmarks/rebalance/summarize.py "$out" | tee "$out/summary.md"
