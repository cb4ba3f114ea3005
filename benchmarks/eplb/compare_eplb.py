#!/usr/bin/env python3
"""moe-a2a's placement planner (`moe-a2a eplb`) next to DeepSeek's EPLB on the same load matrices.

usage: benchmarks/eplb/compare_eplb.py --deepseek DIR [--moe-a2a PATH] [--layers N] [--out DIR]

DIR holds DeepSeek's eplb.py (https://github.com/deepseek-ai/EPLB; not part of this repository).
Load matrices: lognormal (sigma 0.5 and 1.0) and Zipf (s = 1.2, experts in random order); E 64, 128,
256; N 8 to 64; R 0, N, 2N redundant slots; one node, and 4 nodes with 8 expert groups. For each
case both placements are scored the same way, here, as moe-a2a's dispatcher routes (see score):
each rank keeps its own tokens of the experts it hosts, and the other ranks' tokens split over the
replicas by their shares (DeepSeek's replicas share evenly; moe-a2a's carry the shares it planned).
The score is max/mean over ranks, averaged over the case's layers. A lower bound that
no placement can beat (see lower_bound) says how much lower than DeepSeek's any planner could go.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

DISTS = [("lognormal-0.5", 0.5), ("lognormal-1.0", 1.0), ("zipf-1.2", None)]


def loads_for(dist, sigma, experts, layers, rng):
    out = []
    for _ in range(layers):
        if sigma is not None:
            v = rng.lognormal(0.0, sigma, experts)
        else:
            v = 1.0 / np.arange(1, experts + 1) ** 1.2
            rng.shuffle(v)
        out.append((v * 10000.0).tolist())
    return out


def score(loads, slot_expert, share, ranks):
    """max/mean rank load as moe-a2a's dispatcher routes (RankLoadModel): every rank is home to an
    equal part of each expert's tokens and keeps its part of the experts it hosts; the parts of
    ranks without a replica split over the replicas by their shares."""
    per_rank = len(slot_expert) // ranks
    on = {}
    for s, e in enumerate(slot_expert):
        on[(e, s // per_rank)] = on.get((e, s // per_rank), 0) + 1
    hosts = {}
    for (e, _r) in on:
        hosts[e] = hosts.get(e, 0) + 1
    rank = np.zeros(ranks)
    for s, e in enumerate(slot_expert):
        r = s // per_rank
        rank[r] += loads[e] / ranks / on[(e, r)] + share[s] * loads[e] * (ranks - hosts[e]) / ranks
    return rank.max() / rank.mean()


def best_node_peak(group_loads, nodes):
    """The lowest peak node load over every way to give each node the same number of groups."""
    per = len(group_loads) // nodes
    best = [float("inf")]

    def place(i, bins, counts):
        if i == len(group_loads):
            best[0] = min(best[0], max(bins))
            return
        seen = set()
        for b in range(nodes):
            if counts[b] < per and (bins[b], counts[b]) not in seen:
                seen.add((bins[b], counts[b]))
                bins[b] += group_loads[i]
                counts[b] += 1
                if max(bins) < best[0]:
                    place(i + 1, bins, counts)
                bins[b] -= group_loads[i]
                counts[b] -= 1

    place(0, [0.0] * nodes, [0] * nodes)
    return best[0]


def lower_bound(loads, slots, groups, nodes, ranks):
    """A max/mean no placement can beat: the mean; the heaviest expert over the most ranks its
    replicas can reach; with R = 0, the heaviest expert's rank also holds P/N - 1 others; with
    several nodes, the best packing of groups to nodes (tried exhaustively) over a node's ranks."""
    loads = np.asarray(loads)
    mean = loads.sum() / ranks
    redundant = slots - len(loads)
    node_ranks = ranks // nodes
    bound = max(mean, loads.max() / min(node_ranks, 1 + redundant))
    if redundant == 0:
        per_rank = slots // ranks
        bound = max(bound, loads.max() + np.sort(loads)[: per_rank - 1].sum())
    if nodes > 1:
        group_loads = sorted(loads.reshape(groups, -1).sum(axis=1), reverse=True)
        bound = max(bound, best_node_peak(group_loads, nodes) / node_ranks)
    return bound / mean


def deepseek(eplb, loads, slots, groups, nodes, ranks):
    import torch
    weight = torch.tensor(loads, dtype=torch.float64)
    phy2log, _, logcnt = eplb.rebalance_experts(weight, slots, groups, nodes, ranks)
    scores = []
    for layer, row in enumerate(loads):
        p = phy2log[layer].tolist()
        cnt = logcnt[layer].tolist()
        scores.append(score(row, p, [1.0 / cnt[e] for e in p], ranks))
    return scores


def ours(cli, loads, slots, groups, nodes, ranks, work):
    src = os.path.join(work, "in.json")
    dst = os.path.join(work, "out.json")
    with open(src, "w") as f:
        json.dump({"loads": loads}, f)
    cmd = [cli, "eplb", "--loads", src, "--ranks", str(ranks), "--slots", str(slots),
           "--nodes", str(nodes), "--groups", str(groups), "--json", dst]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(dst) as f:
        plan = json.load(f)
    return [score(row, plan["placement"][i], plan["shares"][i], ranks) for i, row in enumerate(loads)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--deepseek", required=True)
    ap.add_argument("--moe-a2a", default=os.path.join(os.path.dirname(__file__), "..", "..", "bin", "moe-a2a"))
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--out", default=".")
    args = ap.parse_args()
    if not os.path.exists(os.path.join(args.deepseek, "eplb.py")):
        print(f"compare_eplb: no eplb.py in {args.deepseek}; skipped", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:  # DeepSeek's code then runs on numpy_torch/torch.py
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "numpy_torch"))
    sys.path.insert(0, args.deepseek)
    import eplb  # DeepSeek's, run beside ours

    rng = np.random.default_rng(42)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for experts in (64, 128, 256):
            for ranks in (8, 16, 32, 64):
                for redundant in (0, ranks, 2 * ranks):
                    for nodes, groups in ((1, 1), (4, 8)):
                        slots = experts + redundant
                        loads, labels = [], []
                        for name, sigma in DISTS:
                            loads += loads_for(name, sigma, experts, args.layers, rng)
                            labels += [name] * args.layers
                        theirs = deepseek(eplb, loads, slots, groups, nodes, ranks)
                        mine = ours(args.moe_a2a, loads, slots, groups, nodes, ranks, work)
                        for name, _ in DISTS:
                            idx = [i for i, l in enumerate(labels) if l == name]
                            t = float(np.mean([theirs[i] for i in idx]))
                            m = float(np.mean([mine[i] for i in idx]))
                            lb = float(np.mean([lower_bound(loads[i], slots, groups, nodes, ranks)
                                                for i in idx]))
                            rows.append({"dist": name, "E": experts, "N": ranks, "R": redundant,
                                         "nodes": nodes, "groups": groups, "deepseek": t, "moe_a2a": m,
                                         "lower_bound": lb, "gain": (t - m) / t,
                                         "headroom": (t - lb) / t})
                        print(f"E={experts} N={ranks} R={redundant} nodes={nodes}: done", file=sys.stderr)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "eplb_comparison.json"), "w") as f:
        json.dump(rows, f, indent=1)
    gains = [r["gain"] for r in rows]
    lines = ["| loads | nodes | R | cases | DeepSeek max/mean | moe-a2a max/mean | lower bound | lower by (mean) | at most possible | worst case |",
             "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, _ in DISTS:
        for nodes in (1, 4):
            for rclass, pick in (("0", lambda r: r["R"] == 0), ("N", lambda r: r["R"] == r["N"]),
                                 ("2N", lambda r: r["R"] == 2 * r["N"])):
                sel = [r for r in rows if r["dist"] == name and r["nodes"] == nodes and pick(r)]
                if not sel:
                    continue
                lines.append("| %s | %d | %s | %d | %.4f | %.4f | %.4f | %.2f %% | %.2f %% | %+.2f %% |" % (
                    name, nodes, rclass, len(sel), np.mean([r["deepseek"] for r in sel]),
                    np.mean([r["moe_a2a"] for r in sel]), np.mean([r["lower_bound"] for r in sel]),
                    100 * np.mean([r["gain"] for r in sel]), 100 * np.mean([r["headroom"] for r in sel]),
                    100 * min(r["gain"] for r in sel)))
    lines.append("")
    lines.append("All %d cases: max/mean lower than DeepSeek's by %.2f %% on average (at most %.2f %% is "
                 "possible: DeepSeek's distance to the lower bound); worst case %+.2f %% (negative: "
                 "moe-a2a's is higher)." % (len(rows), 100 * np.mean(gains),
                                            100 * np.mean([r["headroom"] for r in rows]), 100 * min(gains)))
    table = "\n".join(lines)
    with open(os.path.join(args.out, "eplb_comparison.md"), "w") as f:
        f.write(table + "\n")
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
