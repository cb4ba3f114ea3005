#!/usr/bin/python3
"""torch.distributed (gloo) peer for the canonical MoE exchange workloads (docs: README.md here).

Same routing, payload, validation, timing and RESULT line as mpi_a2a.c. Dispatch = counts +
pack + all_to_all_single(counts) + all_to_all_single(rows, split sizes); combine =
all_to_all_single(rows back) + weighted fp32 reduce. Rows travel as uint8 (2H bytes each)
because gloo in Debian's torch rejects bfloat16. Spawns its N rank processes itself; gloo
talks TCP over loopback.

usage: /usr/bin/python3 torch_gloo_a2a.py -N 4 -T 2048 -H 7168 -K 8 -E 256 -s 0 -P 0 -S 42 -w 2 -i 10 -n prefill
"""
import argparse
import bisect
import json
import math
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

MASK = (1 << 64) - 1


def splitmix64(state):
    state[0] = (state[0] + 0x9E3779B97F4A7C15) & MASK
    z = state[0]
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def route(a, r, cdf, perm):
    """(T, K) expert ids of source rank r."""
    tmp = [a.S ^ ((0xA0761D6478BD642F * (r + 1)) & MASK)]
    st = [splitmix64(tmp)]
    experts = np.empty((a.T, a.K), dtype=np.int64)
    for t in range(a.T):
        chosen = []
        while len(chosen) < a.K:
            if a.s == 0:
                e = splitmix64(st) % a.E
            else:
                u = (splitmix64(st) >> 11) * 2.0**-53
                e = perm[bisect.bisect_right(cdf, u)]  # smallest i with cdf[i] > u
            if e not in chosen:
                chosen.append(e)
        experts[t] = chosen
    return experts


def routing_of_all(a):
    """Every source's routing: validation needs the rows each rank expects."""
    w = [math.pow(i + 1, -a.s) for i in range(a.E)]
    total, run, cdf = sum(w), 0.0, []
    for x in w:
        run += x
        cdf.append(run / total)
    cdf[-1] = 1.0
    perm = list(range(a.E))
    if a.P:
        st = [a.S ^ 0xD1B54A32D192ED03]
        for i in range(a.E - 1, 0, -1):
            j = splitmix64(st) % (i + 1)
            perm[i], perm[j] = perm[j], perm[i]
    return [route(a, r, cdf, perm) for r in range(a.N)]


def hits_of(experts, a):
    """(T, N) int64: experts of each token on each rank (m_td)."""
    m = np.zeros((a.T, a.N), dtype=np.int64)
    np.add.at(m, (np.arange(a.T)[:, None], experts // (a.E // a.N)), 1)
    return m


def fingerprint(rows):
    h = 0xCBF29CE484222325
    for b in np.asarray(rows, dtype="<u4").tobytes():
        h = ((h ^ b) * 0x100000001B3) & MASK
    return f"{h:016x}"


def payload(src, T, H):
    """(T, H) bf16 bits of float((src*131 + t*7 + col*3) % 32); exact, the values are below 32."""
    v = ((src * 131 + np.arange(T)[:, None] * 7 + np.arange(H)[None, :] * 3) % 32).astype(np.float32)
    return (v.view(np.uint32) >> 16).astype(np.uint16)


def p50_p90(v):
    v = sorted(v)
    n = len(v)
    p50 = v[n // 2] if n % 2 else 0.5 * (v[n // 2 - 1] + v[n // 2])
    return p50, v[max(math.ceil(0.9 * n) - 1, 0)]


def rank_main(me, a, port, routing, rows):
    N, T, H, K = a.N, a.T, a.H, a.K
    torch.set_num_threads(a.threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
    dist.init_process_group("gloo", rank=me, world_size=N)

    experts = torch.from_numpy(routing[me])
    x = torch.from_numpy(payload(me, T, H).view(np.uint8))  # (T, 2H)
    ones = torch.ones(T, K, dtype=torch.int64)
    # Routing is fixed, so every buffer has its exact size; allocated and touched once, untimed.
    send_rows, recv_rows = int(rows[me].sum()), int(rows[:, me].sum())
    sbuf = torch.zeros(send_rows, 2 * H, dtype=torch.uint8)
    rbuf = torch.zeros(recv_rows, 2 * H, dtype=torch.uint8)
    cbuf = torch.zeros(send_rows, 2 * H, dtype=torch.uint8)
    scratch = torch.zeros(T, H, dtype=torch.float32)
    out = torch.zeros(T, H, dtype=torch.float32)
    rcnt = torch.zeros(N, dtype=torch.int64)
    rounds = 1 + a.w + a.i  # round 0 validates
    times = torch.zeros(rounds, 2, dtype=torch.float64)
    ok = True

    for it in range(rounds):
        validate = it == 0
        dist.barrier()
        t0 = time.perf_counter()
        hits = torch.zeros(T, N, dtype=torch.int64).scatter_add_(1, experts // (a.E // N), ones)
        to_rank = hits.t() > 0                      # (N, T)
        tokens = to_rank.nonzero()[:, 1]            # destination-major, token order within
        scnt = to_rank.sum(1)
        torch.index_select(x, 0, tokens, out=sbuf)
        dist.all_to_all_single(rcnt, scnt)
        sl, rl = scnt.tolist(), rcnt.tolist()
        dist.all_to_all_single(rbuf, sbuf, rl, sl)
        t1 = time.perf_counter()

        if validate:
            got, off = rbuf.numpy().view(np.uint16), 0
            for s in range(N):
                want = payload(s, T, H)[((routing[s] // (a.E // N)) == me).any(1)]
                ok &= rl[s] == len(want) and np.array_equal(got[off:off + rl[s]], want)
                off += rl[s]
            as_bf16 = rbuf.view(torch.bfloat16)  # the "expert": rows times (rank + 1), exact in bf16
            as_bf16.copy_(as_bf16.float() * (me + 1))

        dist.barrier()
        t2 = time.perf_counter()
        dist.all_to_all_single(cbuf, rbuf, sl, rl)
        weights = hits.t()[to_rank].float() / K   # one per returned row, in cbuf order
        out.zero_()
        off = 0
        for d in range(N):
            n = sl[d]
            if n:
                seg = scratch[:n]
                seg.copy_(cbuf[off:off + n].view(torch.bfloat16)).mul_(weights[off:off + n, None])
                out.index_add_(0, tokens[off:off + n], seg)
            off += n
        t3 = time.perf_counter()

        if validate:
            factor = (hits.double() * torch.arange(1, N + 1, dtype=torch.float64)).sum(1, keepdim=True) / K
            want = torch.from_numpy((payload(me, T, H).astype(np.uint32) << 16).view(np.float32)).double() * factor
            ok &= bool(torch.allclose(out.double(), want, rtol=1e-4, atol=1e-4))
        times[it, 0], times[it, 1] = t1 - t0, t3 - t2

    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    all_ok = torch.tensor([int(ok)])
    dist.all_reduce(all_ok, op=dist.ReduceOp.MIN)
    dist.destroy_process_group()
    all_ok = bool(all_ok.item())

    if me == 0:
        us = times[1 + a.w:] * 1e6
        (d50, d90), (c50, c90), (t50, t90) = (p50_p90(v.tolist()) for v in (us[:, 0], us[:, 1], us.sum(1)))
        bytes_per_rank = int((rows.sum() - np.trace(rows)) * 2 * H // N)
        algbw = 2 * bytes_per_rank / (t50 * 1e3)
        routing_name = "uniform" if a.s == 0 else f"zipf s={a.s:.1f}" + (" perm" if a.P else "")
        res = dict(workload=a.n, transport=a.p, N=N, T=T, H=H, K=K, E=a.E, routing=routing_name,
                   fingerprint=fingerprint(rows), bytes_per_rank=bytes_per_rank,
                   dispatch_us_p50=round(d50, 1), dispatch_us_p90=round(d90, 1),
                   combine_us_p50=round(c50, 1), combine_us_p90=round(c90, 1),
                   total_us_p50=round(t50, 1), total_us_p90=round(t90, 1),
                   algbw_gbps=round(algbw, 3), agg_gbps=round(N * algbw, 3), warmup=a.w, iters=a.i, ok=all_ok)
        print("RESULT " + json.dumps(res, separators=(",", ":")), flush=True)
    sys.exit(0 if all_ok else 1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag, default, what in (("-N", 4, "ranks"), ("-T", 2048, "tokens per rank"), ("-H", 7168, "hidden"),
                                ("-K", 8, "experts per token"), ("-E", 256, "experts"), ("-P", 0, "1: scatter hot experts"),
                                ("-S", 42, "seed"), ("-w", 2, "warm-up rounds"), ("-i", 10, "measured rounds"),
                                ("--threads", 1, "torch threads per rank")):
        p.add_argument(flag, type=int, default=default, help=what)
    p.add_argument("-s", type=float, default=0.0, help="Zipf exponent (0: uniform)")
    p.add_argument("-n", default="custom", help="workload name")
    p.add_argument("-p", default="torch-gloo", help="peer label (the transport field)")
    a = p.parse_args()
    if a.E % a.N or a.K > a.E or a.w < 0 or a.i < 1:
        p.error("need E % N == 0, K <= E, w >= 0, i >= 1")

    routing = routing_of_all(a)
    rows = np.array([(hits_of(r, a) > 0).sum(0) for r in routing], dtype=np.int64)  # rows[src][dst]
    with socket.socket() as s:  # a free port for gloo's rendezvous store
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=rank_main, args=(r, a, port, routing, rows)) for r in range(a.N)]
    for pr in procs:
        pr.start()
    for pr in procs:
        pr.join()
    sys.exit(max(abs(pr.exitcode) for pr in procs))


if __name__ == "__main__":
    main()
