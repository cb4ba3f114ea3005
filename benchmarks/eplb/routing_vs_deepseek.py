#!/usr/bin/env python3
"""The canonical skewed workloads' routing, counted exactly under the contiguous placement, DeepSeek's
EPLB and moe-a2a's planner.

usage: benchmarks/eplb/routing_vs_deepseek.py --deepseek DIR [--moe-a2a PATH] [--out DIR]

For each case `moe-a2a eplb --workload W --ranks N --slots P` plans and writes the workload's expert
loads; DeepSeek's `rebalance_experts` (DIR/eplb.py, not part of this repository) places the same
loads (one node, one group), its replicas sharing evenly; `moe-a2a eplb --compare` then counts the
routing under all three with the same dispatcher code (RoutingCost: each source rank's layout,
replicas chosen per token as the dispatcher does) and predicts each step on a hardware profile.
Cases: the skewed workloads at N = 4 with 16 redundant slots (the bench's), and decode, prefill and
both skewed workloads at N = 8, 16 and 64 with one redundant slot per rank (h200-nvlink-8 at N = 8,
h200-ib400 beyond). Without torch, DeepSeek's code runs on numpy_torch/torch.py (the part of torch it calls).
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

CASES = [("prefill-skew", 4, 272, "h200-nvlink-8"), ("prefill-skew-perm", 4, 272, "h200-nvlink-8")]
CASES += [(w, n, 256 + n, "h200-nvlink-8" if n == 8 else "h200-ib400")
          for n in (8, 16, 64) for w in ("decode", "prefill", "prefill-skew", "prefill-skew-perm")]


def load_deepseek(directory):
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_torch"))
    sys.path.insert(0, directory)
    import eplb  # DeepSeek's, run beside ours
    import torch
    return eplb, torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepseek", required=True)
    ap.add_argument("--moe-a2a", default=os.path.join(os.path.dirname(__file__), "../../bin/moe-a2a"))
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.deepseek, "eplb.py")):
        sys.exit(f"routing_vs_deepseek: no eplb.py in {args.deepseek}")
    eplb, torch = load_deepseek(args.deepseek)
    os.makedirs(args.out, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for workload, ranks, slots, hardware in CASES:
            ours = os.path.join(tmp, "ours.json")
            subprocess.run([args.moe_a2a, "eplb", "--workload", workload, "--ranks", str(ranks),
                            "--slots", str(slots), "--json", ours], check=True, capture_output=True)
            loads = json.load(open(ours))["loads"]
            phy2log, _, logcnt = eplb.rebalance_experts(torch.tensor(loads, dtype=torch.float32),
                                                        slots, 1, 1, ranks)
            placement = phy2log.tolist()[0]
            count = logcnt.tolist()[0]
            theirs = os.path.join(tmp, "deepseek.json")
            json.dump({"placement": [placement], "shares": [[1.0 / count[e] for e in placement]]},
                      open(theirs, "w"))
            out = os.path.join(tmp, "costs.json")
            subprocess.run([args.moe_a2a, "eplb", "--workload", workload, "--ranks", str(ranks),
                            "--slots", str(slots), "--compare", theirs, "--predict", hardware,
                            "--json", out], check=True, capture_output=True)
            costs = {c["placement"]: c for c in json.load(open(out))["costs"]}
            rows.append({"workload": workload, "ranks": ranks, "slots": slots, "hardware": hardware,
                         "contiguous": costs["contiguous"], "deepseek": costs["file"],
                         "moe_a2a": costs["planned"]})
            print(f"{workload} N={ranks} P={slots}: done", file=sys.stderr)
    json.dump(rows, open(os.path.join(args.out, "routing_vs_deepseek.json"), "w"), indent=1)
    lines = ["| workload | N | P | placement | pairs max/mean | rows_total | rows_recv_max |"
             " predicted step (µs) |", "|---|---:|---:|---|---:|---:|---:|---:|"]
    for r in rows:
        base = r["contiguous"]["rows_total"]
        for name in ("contiguous", "deepseek", "moe_a2a"):
            c = r[name]
            step = c["dispatch_us"] + c["expert_us"] + c["combine_us"]
            lines.append(f"| {r['workload']} | {r['ranks']} | {r['slots']} | {name} |"
                         f" {c['pairs_max_over_mean']:.3f} | {c['rows_total']:,}"
                         f" ({c['rows_total'] / base:.2f}×) | {c['rows_recv_max']:,} | {step:,.0f}"
                         f" ({r['hardware']}) |")
    table = "\n".join(lines) + "\n"
    open(os.path.join(args.out, "routing_vs_deepseek.md"), "w").write(table)
    print(table)


if __name__ == "__main__":
    main()
