#!/usr/bin/env bash
# What a live move costs in rows and buys in balance: serves under skewed load with live
# rebalancing, scrapes the metrics every half second, and compares layer 0's dispatch rows per
# (token, expert) pair and its pair balance before the first move with those after it (every
# answer checked against the reference).
# Usage: benchmarks/rebalance/rows_before_after.sh [--out DIR]; needs bin/moe-a2a built, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/rows-before-after
if [[ "${1:-}" == "--out" ]]; then out=$2; fi
mkdir -p "$out/scrapes"
rm -f "$out"/scrapes/*

bin/moe-a2a serve --port 50563 --metrics-port 9563 --experts 16 --world-size 4 --top-k 2 \
  --hidden 256 --ffn 512 --redundant-experts 4 --rebalance-every 32 >"$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  grep -q "serving on port" "$out/server.log" && break
  sleep 1
done

bin/moe-a2a client --target localhost:50563 --skew 1.2 --requests 600 --tokens 128 \
  --concurrency 2 --verify -1 >"$out/client.txt" 2>&1 &
client=$!
i=0
while kill -0 "$client" 2>/dev/null; do
  curl -s localhost:9563/metrics >"$out/scrapes/$(printf %05d $i).txt" || true
  i=$((i + 1))
  sleep 0.5
done
wait "$client"
curl -s localhost:9563/metrics >"$out/scrapes/$(printf %05d $i).txt"
grep "checked" "$out/client.txt" || true
python3 benchmarks/rebalance/rows_before_after.py "$out" | tee "$out/summary.md"
