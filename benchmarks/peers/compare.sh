#!/usr/bin/env bash
# compare.sh: moe-a2a's bench next to Open MPI and torch.distributed (gloo) on the canonical
# workloads, interleaved launch by launch (absolute times on a shared machine drift between runs
# minutes apart; interleaving keeps the ratios honest), then a table, JSON and plot (README.md).
#
# usage: benchmarks/peers/compare.sh [--out DIR] [--workloads a,b,c] [--iters N] [--warmup N]
# environment: REPEATS (launches of mpi, mpi-nocma, moe-a2a local and shm; default 3),
#              GLOO_REPEATS (launches of torch-gloo, moe-a2a tcp; default 1), RUN_TIMEOUT (s, default 900),
#              FP8 (1, the default: also moe-a2a local and tcp with --dispatch-dtype fp8; 0: bf16 only),
#              SHM (1, the default: also moe-a2a shm, one process a rank over shared memory; 0: not),
#              LL (0, the default; 1: also moe-a2a local, shm and tcp with --mode low-latency)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
ALL=decode,prefill,prefill-skew,prefill-skew-perm,prefill-n2,prefill-n8
OUT="" WORKLOADS=$ALL ITERS="" WARMUP=""
REPEATS=${REPEATS:-3} GLOO_REPEATS=${GLOO_REPEATS:-1} RUN_TIMEOUT=${RUN_TIMEOUT:-900} FP8=${FP8:-1}
SHM=${SHM:-1} LL=${LL:-0}

usage() { sed -n '6,11p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage 0 ;;
    --out|--workloads|--iters|--warmup) [ $# -ge 2 ] || { echo "compare: $1 needs a value" >&2; exit 2; } ;;
    *) echo "compare: unknown argument: $1" >&2; usage 2 >&2 ;;
  esac
  case $1 in
    --out) OUT=$2 ;;
    --workloads) WORKLOADS=$2 ;;
    --iters) ITERS=$2 ;;
    --warmup) WARMUP=$2 ;;
  esac
  shift 2
done

# name -> N T zipf perm | warm-up and measured rounds for MPI (moe-a2a's bench defaults to the same)
#      | warm-up and measured rounds for gloo (fewer: it is 3-4x slower)
spec() {
  case $1 in
    decode)            echo "4 128  0   0 20 200 5 40" ;;
    prefill)           echo "4 2048 0   0 3  40  2 10" ;;
    prefill-skew)      echo "4 2048 1.2 0 3  40  2 10" ;;
    prefill-skew-perm) echo "4 2048 1.2 1 3  40  2 10" ;;
    prefill-n2)        echo "2 2048 0   0 3  40  2 10" ;;
    prefill-n8)        echo "8 2048 0   0 2  15  1 5" ;;
    *) return 1 ;;
  esac
}
IFS=, read -ra WLS <<< "$WORKLOADS"
for wl in "${WLS[@]}"; do
  spec "$wl" > /dev/null || { echo "compare: unknown workload '$wl' (known: $ALL)" >&2; exit 2; }
done

OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/moe-a2a-compare.XXXXXX")}
mkdir -p "$OUT/build" "$OUT/logs"
LOGS=$OUT/logs
rm -f "$LOGS"/*__*  # a reused --out must not mix in an older run's launches
PY=/usr/bin/python3  # Debian's python3 has python3-torch and python3-matplotlib; a pyenv python3 may not
[ -x "$PY" ] || PY=python3
echo "compare: writing to $OUT"
cat /proc/loadavg > "$LOGS/loadavg_start.txt" 2>/dev/null || true
date -u '+%Y-%m-%d %H:%M:%S UTC' > "$LOGS/started.txt"

# ---- what can run here; a missing peer is skipped with one line ----
HAVE_MPI=0 HAVE_MEMBW=0 HAVE_GLOO=0 HAVE_MOE=0
if ! command -v mpicc > /dev/null || ! command -v mpirun > /dev/null; then
  echo "compare: skipping mpi, mpi-nocma: mpicc/mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
elif ! mpicc -O3 -march=native -o "$OUT/build/mpi_a2a" "$HERE/mpi_a2a.c" -lm 2> "$LOGS/build-mpi.log"; then
  echo "compare: skipping mpi, mpi-nocma: mpicc failed (see $LOGS/build-mpi.log)"
else
  HAVE_MPI=1
fi
if ! command -v gcc > /dev/null; then
  echo "compare: skipping the memcpy copy bound: gcc not found (apt-get install gcc)"
elif ! gcc -O2 -pthread -o "$OUT/build/membw" "$HERE/membw.c" 2> "$LOGS/build-membw.log"; then
  echo "compare: skipping the memcpy copy bound: gcc failed (see $LOGS/build-membw.log)"
else
  HAVE_MEMBW=1
fi
if "$PY" -c 'import torch, numpy' 2> /dev/null; then
  HAVE_GLOO=1
else
  echo "compare: skipping torch-gloo: $PY cannot import torch and numpy (apt-get install python3-torch python3-numpy)"
fi
if [ ! -x "$ROOT/bin/moe-a2a" ]; then
  echo "compare: skipping moe-a2a: $ROOT/bin/moe-a2a not found"
elif "$ROOT/bin/moe-a2a" bench --help > /dev/null 2> "$LOGS/moe-a2a-probe.log"; then
  HAVE_MOE=1
else
  echo "compare: skipping moe-a2a: bin/moe-a2a does not run: $(head -n 1 "$LOGS/moe-a2a-probe.log") (build: ./mvnw -q install -DskipTests)"
fi

MPIRUN=(mpirun --oversubscribe --bind-to none)  # N > cores here; unbound like the gloo and JVM ranks
if [ "$(id -u)" = 0 ]; then
  MPIRUN+=(--allow-run-as-root)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

FAILED=0
# One launch: output to logs/<label>__<workload>__<launch>.log, its row from there or from the .json
# next to it (moe-a2a's --json); a failure is noted and the run goes on.
launch() {
  local label=$1 wl=$2 n=$3
  shift 3
  local log="$LOGS/${label}__${wl}__${n}.log" rc=0 row
  timeout "$RUN_TIMEOUT" "$@" < /dev/null > "$log" 2>&1 || rc=$?
  row=$(grep -ho '{[^{}]*"total_us_p50"[^{}]*}' "$log" "${log%.log}.json" 2> /dev/null | tail -n 1 || true)
  if [ -z "$row" ]; then
    FAILED=1
    printf '%-18s %-14s #%d  failed (exit %d, see %s)\n' "$wl" "$label" "$n" "$rc" "$log"
    return 0
  fi
  printf '%-18s %-14s #%d  total p50 %8.2f ms  ok=%s\n' "$wl" "$label" "$n" \
    "$(sed -n 's/.*"total_us_p50":\([0-9.]*\).*/\1/p' <<< "$row" | awk '{print $1 / 1000}')" \
    "$(sed -n 's/.*"ok":\([a-z]*\).*/\1/p' <<< "$row")"
}

membw() {
  [ "$HAVE_MEMBW" = 1 ] || return 0
  "$OUT/build/membw" > "$LOGS/membw__$1.log" 2>&1 || { FAILED=1; echo "compare: membw failed (see $LOGS/membw__$1.log)"; return 0; }
  echo "memcpy ($1): $(sed -n 's/^RESULT //p' "$LOGS/membw__$1.log")"
}

membw before
for wl in "${WLS[@]}"; do
  read -r N T S P MW MI GW GI <<< "$(spec "$wl")"
  MW=${WARMUP:-$MW} MI=${ITERS:-$MI} GW=${WARMUP:-$GW} GI=${ITERS:-$GI}
  peer_args=(-T "$T" -H 7168 -K 8 -E 256 -s "$S" -P "$P" -S 42 -n "$wl")
  moe_args=()
  [ -n "$ITERS" ] && moe_args+=(--iters "$ITERS")
  [ -n "$WARMUP" ] && moe_args+=(--warmup "$WARMUP")
  for ((n = 1; n <= (REPEATS > GLOO_REPEATS ? REPEATS : GLOO_REPEATS); n++)); do
    if [ "$n" -le "$REPEATS" ]; then
      if [ "$HAVE_MPI" = 1 ]; then
        launch mpi "$wl" "$n" env -u OMPI_MCA_btl_vader_single_copy_mechanism \
          "${MPIRUN[@]}" -np "$N" "$OUT/build/mpi_a2a" "${peer_args[@]}" -w "$MW" -i "$MI" -p mpi
        launch mpi-nocma "$wl" "$n" env OMPI_MCA_btl_vader_single_copy_mechanism=none \
          "${MPIRUN[@]}" -np "$N" "$OUT/build/mpi_a2a" "${peer_args[@]}" -w "$MW" -i "$MI" -p mpi-nocma
      fi
      if [ "$HAVE_MOE" = 1 ]; then
        launch moe-a2a-local "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport local \
          --json "$LOGS/moe-a2a-local__${wl}__$n.json" "${moe_args[@]}"
        if [ "$FP8" = 1 ]; then
          launch moe-a2a-local-fp8 "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport local \
            --dispatch-dtype fp8 --json "$LOGS/moe-a2a-local-fp8__${wl}__$n.json" "${moe_args[@]}"
        fi
        if [ "$SHM" = 1 ]; then
          launch moe-a2a-shm "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport shm \
            --json "$LOGS/moe-a2a-shm__${wl}__$n.json" "${moe_args[@]}"
        fi
        if [ "$LL" = 1 ]; then
          launch moe-a2a-local-ll "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport local \
            --mode low-latency --json "$LOGS/moe-a2a-local-ll__${wl}__$n.json" "${moe_args[@]}"
          if [ "$SHM" = 1 ]; then
            launch moe-a2a-shm-ll "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport shm \
              --mode low-latency --json "$LOGS/moe-a2a-shm-ll__${wl}__$n.json" "${moe_args[@]}"
          fi
        fi
      fi
    fi
    if [ "$n" -le "$GLOO_REPEATS" ]; then
      if [ "$HAVE_GLOO" = 1 ]; then
        launch torch-gloo "$wl" "$n" \
          "$PY" "$HERE/torch_gloo_a2a.py" -N "$N" "${peer_args[@]}" -w "$GW" -i "$GI" -p torch-gloo
      fi
      if [ "$HAVE_MOE" = 1 ]; then
        launch moe-a2a-tcp "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport tcp \
          --json "$LOGS/moe-a2a-tcp__${wl}__$n.json" "${moe_args[@]}"
        if [ "$FP8" = 1 ]; then
          launch moe-a2a-tcp-fp8 "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport tcp \
            --dispatch-dtype fp8 --json "$LOGS/moe-a2a-tcp-fp8__${wl}__$n.json" "${moe_args[@]}"
        fi
        if [ "$LL" = 1 ]; then
          launch moe-a2a-tcp-ll "$wl" "$n" "$ROOT/bin/moe-a2a" bench --workload "$wl" --transport tcp \
            --mode low-latency --json "$LOGS/moe-a2a-tcp-ll__${wl}__$n.json" "${moe_args[@]}"
        fi
      fi
    fi
  done
done
membw after
cat /proc/loadavg > "$LOGS/loadavg_end.txt" 2>/dev/null || true

rc=0
"$PY" "$HERE/compare_report.py" "$OUT" || rc=$?
[ "$FAILED" = 0 ] || rc=1
exit "$rc"
