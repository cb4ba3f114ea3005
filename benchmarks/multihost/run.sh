#!/usr/bin/env bash
# run.sh: two hosts on one machine, each a network namespace joined to the other by a veth pair
# (only the namespaces' own addresses, nothing outside), the link shaped by tc where the kernel
# allows it; the workload's ranks split evenly over the two hosts. Runs the canonical workloads
# with every token sent flat (rank to rank over tcp) and hierarchically (once per host over tcp,
# then over shared memory inside the host), interleaved launch by launch, and reports step time
# and inter-host bytes: as the dispatcher counts them and as the kernel counted them on the veth
# link (report.py).
#
# usage: sudo benchmarks/multihost/run.sh [--out DIR] [--workloads decode,prefill] [--iters N] [--warmup N]
# environment: REPEATS (launches of each mode, default 3), RATE (tc rate, default 10gbit; "" for
#              none), DELAY (tc netem delay, default 100us; skipped where the kernel lacks netem)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT="" WORKLOADS=decode,prefill ITERS=20 WARMUP=5
REPEATS=${REPEATS:-3} RATE=${RATE-10gbit} DELAY=${DELAY-100us}
# shellcheck source=hosts.sh
. "$HERE/hosts.sh"

usage() { sed -n '10,12p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage 0 ;;
    --out|--workloads|--iters|--warmup) [ $# -ge 2 ] || { echo "run: $1 needs a value" >&2; exit 2; } ;;
    *) echo "run: unknown argument: $1" >&2; usage 2 >&2 ;;
  esac
  case $1 in
    --out) OUT=$2 ;;
    --workloads) WORKLOADS=$2 ;;
    --iters) ITERS=$2 ;;
    --warmup) WARMUP=$2 ;;
  esac
  shift 2
done
[ "$(id -u)" -eq 0 ] || { echo "run: network namespaces need root (run with sudo)" >&2; exit 2; }
command -v ip > /dev/null || { echo "run: needs iproute2 (ip, tc)" >&2; exit 2; }
[ -x "$ROOT/bin/moe-a2a" ] || { echo "run: build first (./mvnw -B install -DskipTests)" >&2; exit 2; }

OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/moe-a2a-multihost.XXXXXX")}
mkdir -p "$OUT"
echo "run: writing to $OUT"

trap hosts_down EXIT
hosts_up "$RATE" "$DELAY"
echo "run: link ${ADDR[0]} <-> ${ADDR[1]}: $SHAPE"
echo "$SHAPE" > "$OUT/link.txt"

# the canonical workloads' rank counts (moe-a2a's BenchWorkload)
ranks() {
  case $1 in
    prefill-n2) echo 2 ;;
    prefill-n8) echo 8 ;;
    *) echo 4 ;;
  esac
}

launch=0
IFS=, read -ra WLS <<< "$WORKLOADS"
for rep in $(seq 1 "$REPEATS"); do
  for wl in "${WLS[@]}"; do
    for mode in flat hierarchical; do
      launch=$((launch + 1))
      dir="$OUT/$mode-$wl-$rep"
      rm -rf "$dir" && mkdir -p "$dir"
      before=$(( $(tx_bytes 0) + $(tx_bytes 1) ))
      pids=()
      n=$(ranks "$wl")
      for rank in $(seq 0 $((n - 1))); do
        h=$((rank / (n / 2)))
        ip netns exec "${NS[$h]}" "$ROOT/bin/moe-a2a" bench-host-rank --workload "$wl" \
          --rank "$rank" --hosts 2 --mode "$mode" --address "${ADDR[$h]}" --dir "$dir" \
          --group-id "$((launch * 1000))" --iters "$ITERS" --warmup "$WARMUP" \
          > "$dir/rank-$rank.log" 2>&1 &
        pids+=($!)
      done
      failed=0
      for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
      after=$(( $(tx_bytes 0) + $(tx_bytes 1) ))
      echo "$((after - before))" > "$dir/link_bytes"
      echo "$((ITERS + WARMUP))" > "$dir/steps"
      [ "$failed" -eq 0 ] || echo "run: $mode $wl launch $rep failed (see $dir/rank-*.log)" >&2
      echo "run: $mode $wl launch $rep done"
    done
  done
done
/usr/bin/python3 "$HERE/report.py" "$OUT"
