#!/usr/bin/env python3
"""Replays a routing trace, or a skewed routing, through a moe-a2a server and shows how evenly
the ranks share the work: per step, the tokens and the (token, expert) pairs each rank received,
max over mean.

  replay_imbalance.py TARGET --trace FILE [--layer L]     # a trace from serve --record-routing
  replay_imbalance.py TARGET --skew 1.2 [--steps 50]       # experts drawn by a Zipf law
  ... [--plot imbalance.png]                               # needs matplotlib

Hidden states are random: the routing is the trace's (or the draw's), weights 1/K.
"""
import argparse

import numpy as np

from moe_a2a import Client, read_routing_trace


def skewed(rng, tokens, experts, k, s):
    p = 1.0 / np.arange(1, experts + 1) ** s
    p /= p.sum()
    return np.stack([rng.choice(experts, size=k, replace=False, p=p) for _ in range(tokens)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("--trace")
    ap.add_argument("--layer", type=int, default=None)
    ap.add_argument("--skew", type=float, default=1.2)
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--plot")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    with Client(args.target, timeout=120) as c:
        info = c.describe_model()
        if args.trace:
            trace = read_routing_trace(args.trace)
            layer = args.layer if args.layer is not None else min(s.layer for s in trace.steps)
            routings = [(s.layer, s.expert_ids) for s in trace.steps if s.layer == layer]
        else:
            routings = [(0, skewed(rng, args.tokens, info["experts"], info["top_k"], args.skew))
                        for _ in range(args.steps)]
        tokens_ratio, pairs_ratio = [], []
        for layer, ids in routings:
            weights = np.full(ids.shape, 1.0 / ids.shape[1], dtype=np.float32)
            x = rng.standard_normal((ids.shape[0], info["hidden"])).astype(np.float32)
            stats = c.forward(x, layer=layer, topk=(ids, weights)).stats
            t, p = np.asarray(stats["tokens_per_rank"]), np.asarray(stats["pairs_per_rank"])
            tokens_ratio.append(t.max() / t.mean())
            pairs_ratio.append(p.max() / p.mean())
            print(f"step {stats['step_id']}: tokens per rank {t.tolist()} (max/mean {tokens_ratio[-1]:.3f}),"
                  f" pairs max/mean {pairs_ratio[-1]:.3f}")
    print(f"{len(routings)} steps: tokens max/mean {np.mean(tokens_ratio):.3f},"
          f" pairs max/mean {np.mean(pairs_ratio):.3f} on average")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        plt.plot(tokens_ratio, label="tokens per rank")
        plt.plot(pairs_ratio, label="pairs per rank")
        plt.xlabel("step")
        plt.ylabel("max / mean over ranks")
        plt.legend()
        plt.savefig(args.plot)
        print(f"wrote {args.plot}")


if __name__ == "__main__":
    main()
