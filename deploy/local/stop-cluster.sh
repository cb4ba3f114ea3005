#!/usr/bin/env bash
# Stops what deploy/local/start-cluster.sh started: the PIDs in its run directory (MOE_A2A_RUN_DIR,
# default deploy/local/run), workers first, then the control plane. SIGTERM (each process runs its
# shutdown hook), then SIGKILL for any still alive after MOE_A2A_STOP_TIMEOUT seconds (default 10).
# A PID whose process is no longer a moe-a2a JVM (reused by the system) is left alone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
run_dir="${MOE_A2A_RUN_DIR:-$here/run}"
timeout_s="${MOE_A2A_STOP_TIMEOUT:-10}"

ours() { # PID: still the moe-a2a JVM that start-cluster.sh started?
  kill -0 "$1" 2>/dev/null && tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -Eq 'moe-a2a-cli-.*-all\.jar|bin/moe-a2a'
}

pid_files=()
for f in "$run_dir"/worker-*.pid "$run_dir"/control-plane.pid; do
  [ -e "$f" ] && pid_files+=("$f")
done
if [ ${#pid_files[@]} -eq 0 ]; then
  echo "stop-cluster: nothing to stop (no PID files in $run_dir)"
  exit 0
fi

stopping=()
for f in "${pid_files[@]}"; do
  pid="$(cat "$f")"
  if ours "$pid"; then
    echo "stop-cluster: stopping $(basename "$f" .pid) (PID $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    stopping+=("$pid")
  fi
  rm -f "$f"
done

deadline=$((SECONDS + timeout_s))
for pid in "${stopping[@]+"${stopping[@]}"}"; do
  while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
    sleep 0.2
  done
  if kill -0 "$pid" 2>/dev/null; then
    echo "stop-cluster: PID $pid still running after ${timeout_s}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
done
echo "stop-cluster: stopped; logs stay in $run_dir"
