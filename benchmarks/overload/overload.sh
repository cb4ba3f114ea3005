#!/usr/bin/env bash
# Overload: a server with a small admission queue, driven first within its capacity, then far past
# it, then within it again. Reports the rejections' latency (RESOURCE_EXHAUSTED must come at once),
# the throughput the admitted requests keep against the unloaded run, and whether latency is back
# to its baseline once the overload stops.
# Usage: benchmarks/overload/overload.sh [--out DIR]; needs bin/moe-a2a built, python3.
set -euo pipefail
cd "$(dirname "$0")/../.."
out=/tmp/overload
if [[ "${1:-}" == "--out" ]]; then out=$2; fi
mkdir -p "$out"
port=50581

# The server runs on core 0 and the clients on core 1 (taskset), so that the clients' own work,
# generating thousands of requests the server then refuses, does not take the server's CPU: on a
# real deployment they run elsewhere. Both runs are pinned alike, so their ratio is fair.
taskset -c 0 bin/moe-a2a serve --port "$port" --metrics-port 9581 --hidden 512 --ffn 1024 \
  --max-queued-requests 16 --max-queued-tokens 4096 >"$out/server.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  grep -q "serving on port" "$out/server.log" && break
  sleep 1
done

# client NAME REQUESTS CONCURRENCY: one run, its per-request CSV in $out/NAME.csv
client() {
  taskset -c 1 bin/moe-a2a client --target "localhost:$port" --requests "$2" --tokens 128 --concurrency "$3" \
    --verify 0 --latency-log "$out/$1.csv" >"$out/$1.txt" 2>&1 || true
}

client warmup 200 8
client before 600 8     # within capacity: 8 callers never fill a 16-request queue
client overload 4000 64 # far past it
curl -s localhost:9581/metrics >"$out/metrics.txt"
client after 600 8
python3 benchmarks/overload/summarize.py "$out"
