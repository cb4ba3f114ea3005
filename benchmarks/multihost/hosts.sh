# hosts.sh, sourced by run.sh and serve.sh: two hosts on one machine, each a network namespace,
# joined by a veth pair (only the namespaces' own addresses, nothing outside). hosts_up shapes the
# link with netem (delay, and rate) where the kernel has it, else with tbf (rate alone), and says
# how in SHAPE; hosts_down removes both namespaces.
NS=(moe-a2a-h0 moe-a2a-h1) DEV=(moe-a2a-v0 moe-a2a-v1) ADDR=(10.77.0.1 10.77.0.2)
SHAPE="none"

hosts_down() {
  for ns in "${NS[@]}"; do ip netns del "$ns" 2> /dev/null || true; done
}

# hosts_up RATE DELAY: either may be empty
hosts_up() {
  local rate=$1 delay=$2 h dev ns
  hosts_down
  ip netns add "${NS[0]}"
  ip netns add "${NS[1]}"
  ip link add "${DEV[0]}" netns "${NS[0]}" type veth peer name "${DEV[1]}" netns "${NS[1]}"
  for h in 0 1; do
    ip -n "${NS[$h]}" addr add "${ADDR[$h]}/24" dev "${DEV[$h]}"
    ip -n "${NS[$h]}" link set lo up
    ip -n "${NS[$h]}" link set "${DEV[$h]}" up
  done
  for h in 0 1; do
    dev=${DEV[$h]} ns=${NS[$h]}
    if [ -n "$delay" ] && ip netns exec "$ns" tc qdisc add dev "$dev" root netem delay "$delay" \
          ${rate:+rate "$rate"} 2> /dev/null; then
      SHAPE="netem delay $delay${rate:+ rate $rate}"
    elif [ -n "$rate" ] && ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" \
          burst 4mb latency 10ms 2> /dev/null; then
      SHAPE="tbf rate $rate${delay:+ (no netem in this kernel: no added delay)}"
    fi
  done
}

# tx_bytes HOST: bytes the host's end of the link has sent
tx_bytes() { ip netns exec "${NS[$1]}" cat "/sys/class/net/${DEV[$1]}/statistics/tx_bytes"; }
