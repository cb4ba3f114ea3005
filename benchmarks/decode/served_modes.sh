#!/usr/bin/env bash
# served_modes.sh: served decode in normal and low-latency mode, interleaved: `serve` with
# --mode normal, then --mode low-latency, ROUNDS times; each time `client --tokens TOKENS` sends
# REQUESTS requests at concurrency 4 and its first 4 answers are checked against the reference.
# Prints one line per launch (requests/s, latency p50 and p99 in ms) and the medians per mode.
#
# usage: benchmarks/decode/served_modes.sh [serve flags...]   (e.g. --model DIR --world-size 4)
# environment: ROUNDS (default 3), REQUESTS (default 200), TOKENS (default 8), PORT (default 50700)
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
ROUNDS=${ROUNDS:-3} REQUESTS=${REQUESTS:-200} TOKENS=${TOKENS:-8} PORT=${PORT:-50700}
OUT=$(mktemp -d)
for ((round = 1; round <= ROUNDS; round++)); do
  for mode in normal low-latency; do
    offset=0; [ "$mode" = normal ] || offset=1
    port=$((PORT + round * 2 + offset))
    "$ROOT/bin/moe-a2a" serve --port "$port" --metrics-port 0 --mode "$mode" "$@" \
      > "$OUT/serve-$mode-$round.log" 2>&1 &
    server=$!
    for _ in $(seq 1 600); do
      grep -q "serving on port" "$OUT/serve-$mode-$round.log" && break
      kill -0 "$server" 2>/dev/null || { cat "$OUT/serve-$mode-$round.log" >&2; exit 1; }
      sleep 0.2
    done
    "$ROOT/bin/moe-a2a" client --target "127.0.0.1:$port" --tokens "$TOKENS" \
      --requests "$REQUESTS" --concurrency 4 --verify 4 > "$OUT/client-$mode-$round.log" 2>&1 || true
    kill "$server"; wait "$server" 2>/dev/null || true
    python3 - "$OUT/client-$mode-$round.log" "$mode" "$round" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
rps = re.search(r"([\d.]+) requests/s", text)
lat = re.search(r"latency ms: p50 ([\d.]+)\s+p90 [\d.]+\s+p99 ([\d.]+)", text)
ok = re.search(r"checked (\d+) answers against the reference: (\d+) mismatches", text)
print(f"{sys.argv[2]:12s} #{sys.argv[3]}  "
      + (f"{rps.group(1)} requests/s  p50 {lat.group(1)} ms  p99 {lat.group(2)} ms" if rps and lat else "no result")
      + (f"  checked {ok.group(1)}, mismatches {ok.group(2)}" if ok else "  not checked"))
PY
  done
done | tee "$OUT/launches.txt"
python3 - "$OUT/launches.txt" <<'PY'
import re, statistics, sys
rows = {}
for line in open(sys.argv[1]):
    m = re.match(r"(\S+)\s+#\d+\s+([\d.]+) requests/s\s+p50 ([\d.]+) ms\s+p99 ([\d.]+) ms", line)
    if m:
        rows.setdefault(m.group(1), []).append(tuple(float(x) for x in m.groups()[1:]))
for mode, r in rows.items():
    print(f"median {mode:12s} {statistics.median(x[0] for x in r):.1f} requests/s  "
          f"p50 {statistics.median(x[1] for x in r):.1f} ms  p99 {statistics.median(x[2] for x in r):.1f} ms  ({len(r)} launches)")
PY
echo "logs in $OUT"
