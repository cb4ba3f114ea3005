#!/usr/bin/env bash
# compare_coll.sh: moe-a2a's bench --collective next to Open MPI (mpi_coll.c, both shared-memory
# modes) and torch.distributed gloo (torch_gloo_coll.py) at the same sizes, interleaved launch by
# launch, then a comparison (coll_comparison.md, coll_comparison.json) with busbw ratios.
#
# usage: benchmarks/peers/compare_coll.sh [--out DIR] [--collectives a,b] [--sizes 8,64M] [--ranks N] [--iters N] [--warmup N]
# environment: REPEATS (launches of each peer and transport; default 2), RUN_TIMEOUT (s, default 900)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT="" COLLECTIVES=allreduce,allgather,reducescatter,broadcast,alltoall SIZES=8,64M RANKS=4 ITERS=10 WARMUP=3
REPEATS=${REPEATS:-2} RUN_TIMEOUT=${RUN_TIMEOUT:-900}

usage() { sed -n '7,8p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
while [ $# -gt 0 ]; do
  case $1 in
    -h|--help) usage 0 ;;
    --out|--collectives|--sizes|--ranks|--iters|--warmup) [ $# -ge 2 ] || { echo "compare_coll: $1 needs a value" >&2; exit 2; } ;;
    *) echo "compare_coll: unknown argument: $1" >&2; usage 2 >&2 ;;
  esac
  case $1 in
    --out) OUT=$2 ;;
    --collectives) COLLECTIVES=$2 ;;
    --sizes) SIZES=$2 ;;
    --ranks) RANKS=$2 ;;
    --iters) ITERS=$2 ;;
    --warmup) WARMUP=$2 ;;
  esac
  shift 2
done

# 64M -> 67108864 (K, M, G: powers of 1024, as moe-a2a's --bytes and nccl-tests)
bytes() {
  local s=${1^^} m=1
  case $s in *K) m=1024; s=${s%K} ;; *M) m=$((1 << 20)); s=${s%M} ;; *G) m=$((1 << 30)); s=${s%G} ;; esac
  [[ $s =~ ^[0-9]+$ ]] || { echo "compare_coll: bad size '$1'" >&2; exit 2; }
  echo $((s * m))
}
IFS=, read -ra COLLS <<< "$COLLECTIVES"
IFS=, read -ra SZS <<< "$SIZES"
for c in "${COLLS[@]}"; do
  case $c in allreduce|allgather|reducescatter|broadcast|alltoall) ;; *) echo "compare_coll: unknown collective '$c'" >&2; exit 2 ;; esac
done

OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/moe-a2a-compare-coll.XXXXXX")}
mkdir -p "$OUT/build" "$OUT/logs"
LOGS=$OUT/logs
rm -f "$LOGS"/*__*
PY=/usr/bin/python3  # Debian's python3 has python3-torch; a pyenv python3 may not
[ -x "$PY" ] || PY=python3
echo "compare_coll: writing to $OUT"
cat /proc/loadavg > "$LOGS/loadavg_start.txt" 2>/dev/null || true
date -u '+%Y-%m-%d %H:%M:%S UTC' > "$LOGS/started.txt"

HAVE_MPI=0 HAVE_GLOO=0 HAVE_MOE=0
if ! command -v mpicc > /dev/null || ! command -v mpirun > /dev/null; then
  echo "compare_coll: skipping mpi, mpi-nocma: mpicc/mpirun not found (apt-get install openmpi-bin libopenmpi-dev)"
elif ! mpicc -O3 -march=native -o "$OUT/build/mpi_coll" "$HERE/mpi_coll.c" -lm 2> "$LOGS/build-mpi.log"; then
  echo "compare_coll: skipping mpi, mpi-nocma: mpicc failed (see $LOGS/build-mpi.log)"
else
  HAVE_MPI=1
fi
if "$PY" -c 'import torch' 2> /dev/null; then
  HAVE_GLOO=1
else
  echo "compare_coll: skipping torch-gloo: $PY cannot import torch (apt-get install python3-torch)"
fi
if [ ! -x "$ROOT/bin/moe-a2a" ]; then
  echo "compare_coll: skipping moe-a2a: $ROOT/bin/moe-a2a not found"
elif "$ROOT/bin/moe-a2a" bench --help > /dev/null 2> "$LOGS/moe-a2a-probe.log"; then
  HAVE_MOE=1
else
  echo "compare_coll: skipping moe-a2a: bin/moe-a2a does not run: $(head -n 1 "$LOGS/moe-a2a-probe.log")"
fi

MPIRUN=(mpirun --oversubscribe --bind-to none)
if [ "$(id -u)" = 0 ]; then
  MPIRUN+=(--allow-run-as-root)
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi

FAILED=0
# One launch: output to logs/<label>__<collective>__<bytes>__<launch>.log; its row is the RESULT line
# (peers) or the --json file next to it (moe-a2a).
launch() {
  local label=$1 coll=$2 size=$3 n=$4
  shift 4
  local log="$LOGS/${label}__${coll}__${size}__${n}.log" rc=0
  timeout "$RUN_TIMEOUT" "$@" < /dev/null > "$log" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    FAILED=1
    printf '%-13s %10s %-14s #%d  failed (exit %d, see %s)\n' "$coll" "$size" "$label" "$n" "$rc" "$log"
  else
    printf '%-13s %10s %-14s #%d  done\n' "$coll" "$size" "$label" "$n"
  fi
}

for ((n = 1; n <= REPEATS; n++)); do
  for coll in "${COLLS[@]}"; do
    for s in "${SZS[@]}"; do
      b=$(bytes "$s")
      if [ "$HAVE_MPI" = 1 ]; then
        launch mpi "$coll" "$b" "$n" env -u OMPI_MCA_btl_vader_single_copy_mechanism \
          "${MPIRUN[@]}" -np "$RANKS" "$OUT/build/mpi_coll" -c "$coll" -b "$b" -w "$WARMUP" -i "$ITERS" -p mpi
        launch mpi-nocma "$coll" "$b" "$n" env OMPI_MCA_btl_vader_single_copy_mechanism=none \
          "${MPIRUN[@]}" -np "$RANKS" "$OUT/build/mpi_coll" -c "$coll" -b "$b" -w "$WARMUP" -i "$ITERS" -p mpi-nocma
      fi
      for t in local tcp; do
        if [ "$HAVE_MOE" = 1 ]; then
          launch "moe-a2a-$t" "$coll" "$b" "$n" "$ROOT/bin/moe-a2a" bench --collective "$coll" --transport "$t" \
            --ranks "$RANKS" --bytes "$b" --iters "$ITERS" --warmup "$WARMUP" \
            --json "$LOGS/moe-a2a-${t}__${coll}__${b}__$n.json"
        fi
        if [ "$t" = local ] && [ "$HAVE_GLOO" = 1 ]; then
          launch torch-gloo "$coll" "$b" "$n" "$PY" "$HERE/torch_gloo_coll.py" --ranks "$RANKS" \
            --collective "$coll" --bytes "$b" --warm "$WARMUP" --iters "$ITERS"
        fi
      done
    done
  done
done
cat /proc/loadavg > "$LOGS/loadavg_end.txt" 2>/dev/null || true

rc=0
"$PY" "$HERE/compare_coll_report.py" "$OUT" || rc=$?
[ "$FAILED" = 0 ] || rc=1
exit "$rc"
