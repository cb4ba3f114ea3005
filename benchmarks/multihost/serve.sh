#!/usr/bin/env bash
# serve.sh: a served cluster on two hosts on one machine (network namespaces joined by a veth pair,
# the link shaped by tc as in run.sh). The control plane and the client run on host 0; four
# workers, ranks dealt to the hosts in turn (host 0: ranks 0 and 2; host 1: ranks 1 and 3), each
# host with a shared-memory directory of its own. Each launch serves the same seeded client load
# once with the control plane on --transport tcp (one flat group) and once on --transport auto
# (a group across hosts: tcp rails, shm inside each), interleaved, and records the client's
# tokens/s, the bytes the step meters count between ranks of different hosts, and the bytes the
# kernel counted on the link (serve-report.py).
#
# usage: sudo benchmarks/multihost/serve.sh [--out DIR] [--requests N] [--tokens N] [--concurrency N] [-- MODEL FLAGS]
# environment: REPEATS (launches of each mode, default 3), RATE (tc rate, default 1gbit; "" for none)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT="" REQUESTS=40 TOKENS=256 CONCURRENCY=4
REPEATS=${REPEATS:-3} RATE=${RATE-1gbit}
MODEL=(--experts 32 --hidden 2048 --ffn 256 --top-k 4 --layers 1 --seed 7)
# shellcheck source=hosts.sh
. "$HERE/hosts.sh"

usage() { sed -n '11,12p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage 0 ;;
    --) shift; MODEL=("$@"); break ;;
    --out|--requests|--tokens|--concurrency) [ $# -ge 2 ] || { echo "serve: $1 needs a value" >&2; exit 2; } ;;
    *) echo "serve: unknown argument: $1" >&2; usage 2 >&2 ;;
  esac
  case $1 in
    --out) OUT=$2 ;;
    --requests) REQUESTS=$2 ;;
    --tokens) TOKENS=$2 ;;
    --concurrency) CONCURRENCY=$2 ;;
  esac
  shift 2
done
[ "$(id -u)" -eq 0 ] || { echo "serve: network namespaces need root (run with sudo)" >&2; exit 2; }
command -v ip > /dev/null || { echo "serve: needs iproute2 (ip, tc)" >&2; exit 2; }
[ -x "$ROOT/bin/moe-a2a" ] || { echo "serve: build first (./mvnw -B install -DskipTests)" >&2; exit 2; }

OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/moe-a2a-multihost-serve.XXXXXX")}
mkdir -p "$OUT"
echo "serve: writing to $OUT"
SHM=(/dev/shm/moe-a2a-host-0 /dev/shm/moe-a2a-host-1)

# each server runs in a process group of its own (setsid), so that stopping the group stops the JVM
# that bin/moe-a2a starts, not only the script
PIDS=()
stop_all() {
  for pid in "${PIDS[@]}"; do kill -TERM -- "-$pid" 2> /dev/null || true; done
  for pid in "${PIDS[@]}"; do wait "$pid" 2> /dev/null || true; done
  PIDS=()
}
cleanup() {
  stop_all
  hosts_down
  rm -rf "${SHM[@]}"
}
trap cleanup EXIT
mkdir -p "${SHM[@]}"
hosts_up "$RATE" ""
echo "$SHAPE" > "$OUT/link.txt"
echo "serve: link ${ADDR[0]} <-> ${ADDR[1]}: $SHAPE"

in_ns() { local h=$1; shift; ip netns exec "${NS[$h]}" "$@"; }

await_log() { # file text seconds
  for _ in $(seq 1 $(($3 * 10))); do grep -q "$2" "$1" 2> /dev/null && return 0; sleep 0.1; done
  echo "serve: no \"$2\" in $1 within $3 s" >&2; return 1
}

launch=0
for rep in $(seq 1 "$REPEATS"); do
  for transport in tcp auto; do
    # fresh ports each launch: the last launch's may linger in TIME_WAIT
    launch=$((launch + 1))
    PORT=$((50100 + launch * 3)) CLUSTER_PORT=$((50101 + launch * 3)) METRICS_PORT=$((50102 + launch * 3))
    dir="$OUT/$transport-$rep"
    rm -rf "$dir" && mkdir -p "$dir"
    setsid ip netns exec "${NS[0]}" "$ROOT/bin/moe-a2a" control-plane --host "${ADDR[0]}" --plaintext --port "$PORT" \
      --cluster-port "$CLUSTER_PORT" --metrics-port "$METRICS_PORT" --world-size 4 \
      --transport "$transport" "${MODEL[@]}" > "$dir/control-plane.log" 2>&1 &
    PIDS+=($!)
    await_log "$dir/control-plane.log" "cluster port" 60
    for rank in 0 1 2 3; do
      h=$((rank % 2))
      setsid ip netns exec "${NS[$h]}" "$ROOT/bin/moe-a2a" worker --control-plane "${ADDR[0]}:$CLUSTER_PORT" \
        --rank "$rank" --data-host "${ADDR[$h]}" --shm-dir "${SHM[$h]}" --transport auto \
        --metrics-port 0 > "$dir/worker-$rank.log" 2>&1 &
      PIDS+=($!)
    done
    await_log "$dir/control-plane.log" "serving: epoch=" 120
    # warm-up, then the measured load
    in_ns 0 "$ROOT/bin/moe-a2a" client --target "${ADDR[0]}:$PORT" --requests 10 \
      --tokens "$TOKENS" --concurrency "$CONCURRENCY" --verify 0 > "$dir/warmup.log" 2>&1
    in_ns 0 curl -s "http://${ADDR[0]}:$METRICS_PORT/metrics" > "$dir/metrics-before.txt"
    before=$(( $(tx_bytes 0) + $(tx_bytes 1) ))
    in_ns 0 "$ROOT/bin/moe-a2a" client --target "${ADDR[0]}:$PORT" --requests "$REQUESTS" \
      --tokens "$TOKENS" --concurrency "$CONCURRENCY" --verify 2 > "$dir/client.log" 2>&1
    after=$(( $(tx_bytes 0) + $(tx_bytes 1) ))
    in_ns 0 curl -s "http://${ADDR[0]}:$METRICS_PORT/metrics" > "$dir/metrics-after.txt"
    echo "$((after - before))" > "$dir/link_bytes"
    grep -m1 "forming group" "$dir/control-plane.log" > "$dir/group.txt" || true
    stop_all
    echo "serve: $transport launch $rep: $(grep -m1 'tokens/s' "$dir/client.log")"
  done
done
/usr/bin/python3 "$HERE/serve-report.py" "$OUT"
