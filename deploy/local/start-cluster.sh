#!/usr/bin/env bash
# Starts a control plane and N CPU workers on this machine, from this checkout. The control plane
# runs --transport auto: the workers, all on this host, exchange through shared memory (files in
# /dev/shm, removed when they stop); TCP on DATA_PORT+i stays their fallback (-- --transport tcp
# forces it).
#
#   deploy/local/start-cluster.sh [WORKERS [GRPC_PORT [METRICS_PORT [DATA_PORT]]]] [-- CONTROL-PLANE FLAGS...]
#   deploy/local/start-cluster.sh stop          # same as deploy/local/stop-cluster.sh
#
#   WORKERS       world size: one worker process per rank                   (default 4)
#   GRPC_PORT     the control plane's gRPC port, what clients call; workers
#                 join its cluster port, GRPC_PORT+10                         (default 50051)
#   METRICS_PORT  the control plane's /metrics; worker i serves /metrics on
#                 METRICS_PORT+1+i                                            (default 9464)
#   DATA_PORT     worker i listens for its peers on DATA_PORT+i, over tcp     (default 50100)
#   after --       more control-plane flags, e.g. -- --experts 16 --hidden 2048
#
# Environment: MOE_A2A_RUN_DIR (logs and PID files; default deploy/local/run), MOE_A2A_START_TIMEOUT
# (seconds to wait for health SERVING; default 120), MOE_A2A_JAVA_OPTS (JVM options of every process,
# read by bin/moe-a2a).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
cli="$root/bin/moe-a2a"
run_dir="${MOE_A2A_RUN_DIR:-$here/run}"
timeout_s="${MOE_A2A_START_TIMEOUT:-120}"

if [ "${1:-}" = stop ]; then
  exec "$here/stop-cluster.sh"
fi
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  exit 0
fi

positional=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  positional+=("$1")
  shift
done
[ "${1:-}" = -- ] && shift
extra=("$@")
workers="${positional[0]:-4}"
grpc_port="${positional[1]:-50051}"
metrics_port="${positional[2]:-9464}"
data_port="${positional[3]:-50100}"
for v in "$workers" "$grpc_port" "$metrics_port" "$data_port"; do
  case "$v" in
    '' | *[!0-9]*) echo "start-cluster: not a number: '$v' (try --help)" >&2; exit 2 ;;
  esac
done
if [ "$workers" -lt 1 ]; then
  echo "start-cluster: WORKERS: $workers (expected: >= 1)" >&2
  exit 2
fi

# The CLI jar and its health subcommand (bin/moe-a2a prints the build hint when the jar is missing).
if ! ls "$root"/cli/target/moe-a2a-cli-*-all.jar >/dev/null 2>&1; then
  echo "start-cluster: the moe-a2a jar is not built. Build it with:" >&2
  echo "  (cd $root && ./mvnw -B -q install -DskipTests)" >&2
  exit 2
fi
if ! "$cli" health --help >/dev/null 2>&1; then
  echo "start-cluster: this build of moe-a2a has no 'health' subcommand; rebuild it:" >&2
  echo "  (cd $root && ./mvnw -B -q install -DskipTests)" >&2
  exit 2
fi

mkdir -p "$run_dir"
for pid_file in "$run_dir"/*.pid; do
  [ -e "$pid_file" ] || continue
  if kill -0 "$(cat "$pid_file")" 2>/dev/null; then
    echo "start-cluster: $(basename "$pid_file" .pid) is still running (PID $(cat "$pid_file"));" \
      "stop it first: $here/stop-cluster.sh" >&2
    exit 1
  fi
  rm -f "$pid_file"
done

# Fail before starting anything when a port is taken.
port_in_use() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
cluster_port=$((grpc_port + 10))
ports=("$grpc_port" "$cluster_port" "$metrics_port")
for ((i = 0; i < workers; i++)); do
  ports+=("$((metrics_port + 1 + i))" "$((data_port + i))")
done
for p in "${ports[@]}"; do
  if port_in_use "$p"; then
    echo "start-cluster: port $p is in use (pass other base ports; try --help)" >&2
    exit 1
  fi
done

# start NAME ARGS...: runs bin/moe-a2a ARGS in the background, log in RUN_DIR/NAME.log, PID in
# RUN_DIR/NAME.pid (bin/moe-a2a execs java, so the PID is the JVM's).
start() {
  local name="$1"
  shift
  nohup "$cli" "$@" >"$run_dir/$name.log" 2>&1 </dev/null &
  echo $! >"$run_dir/$name.pid"
}

# auto unless the extra flags name a transport themselves
transport=(--transport auto)
for flag in ${extra[@]+"${extra[@]}"}; do
  case "$flag" in --transport | --transport=*) transport=() ;; esac
done
start control-plane control-plane --host 127.0.0.1 --port "$grpc_port" --cluster-port "$cluster_port" \
  --metrics-port "$metrics_port" --world-size "$workers" ${transport[@]+"${transport[@]}"} \
  ${extra[@]+"${extra[@]}"}
for ((i = 0; i < workers; i++)); do
  start "worker-$i" worker --control-plane "127.0.0.1:$cluster_port" --rank "$i" --worker-id "local-$i" \
    --transport auto --data-host 127.0.0.1 --data-port "$((data_port + i))" --metrics-port "$((metrics_port + 1 + i))"
done

names=(control-plane)
for ((i = 0; i < workers; i++)); do names+=("worker-$i"); done

echo "start-cluster: waiting up to ${timeout_s}s for 127.0.0.1:$grpc_port to report SERVING ..."
deadline=$((SECONDS + timeout_s))
until "$cli" health --target "127.0.0.1:$grpc_port" >/dev/null 2>&1; do
  for name in "${names[@]}"; do
    if ! kill -0 "$(cat "$run_dir/$name.pid")" 2>/dev/null; then
      echo "start-cluster: $name exited; the end of $run_dir/$name.log:" >&2
      tail -n 20 "$run_dir/$name.log" >&2
      "$here/stop-cluster.sh" >&2 || true
      exit 1
    fi
  done
  if [ "$SECONDS" -ge "$deadline" ]; then
    echo "start-cluster: not SERVING after ${timeout_s}s; logs are in $run_dir. Stopping." >&2
    "$here/stop-cluster.sh" >&2 || true
    exit 1
  fi
  sleep 1
done

echo
data_plane=$(grep -o 'transport=[a-z]*' "$run_dir/control-plane.log" | tail -n 1 | cut -d= -f2 || true)
echo "moe-a2a local cluster: $workers workers (data plane: ${data_plane:-?}), SERVING on 127.0.0.1:$grpc_port"
printf '  %-14s %-8s %s\n' process PID ports
printf '  %-14s %-8s %s\n' control-plane "$(cat "$run_dir/control-plane.pid")" \
  "grpc $grpc_port, cluster $cluster_port, metrics $metrics_port"
for ((i = 0; i < workers; i++)); do
  printf '  %-14s %-8s %s\n' "worker-$i" "$(cat "$run_dir/worker-$i.pid")" \
    "rank $i, data $((data_port + i)), metrics $((metrics_port + 1 + i))"
done
targets="\"127.0.0.1:$metrics_port\""
for ((i = 0; i < workers; i++)); do targets+=", \"127.0.0.1:$((metrics_port + 1 + i))\""; done
echo
echo "logs and PIDs: $run_dir"
echo "call it:       $root/bin/moe-a2a client --target 127.0.0.1:$grpc_port"
if [ "$workers" = 4 ] && [ "$metrics_port" = 9464 ]; then
  echo "scrape:        prometheus --config.file=$root/deploy/prometheus/local-cluster.yml (this default layout)"
else
  echo "scrape:        /metrics on [$targets]"
fi
echo "stop it:       $here/stop-cluster.sh"
