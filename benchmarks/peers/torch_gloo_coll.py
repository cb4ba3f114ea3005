#!/usr/bin/python3
"""torch.distributed gloo collectives over loopback TCP, timed as nccl-tests times them: the peer of
`moe-a2a bench --collective --transport tcp`.

usage: torch_gloo_coll.py --ranks N --collective allreduce|allgather|reducescatter|broadcast|alltoall
                          --bytes B [--warm W --iters I --label L]
B is nccl-tests' "size", cut as mpi_coll.c cuts it (float32, sum, broadcast root 0). Spawns its N ranks
and prints one line `RESULT {json}` with moe-a2a's row fields (time_us_p50 = median over the iterations
of the slowest rank; wrong = wrong elements of the last result, summed over ranks). gloo has no
reduce-scatter: it runs all-reduce and keeps the rank's block, as users of gloo do."""
import argparse
import json
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

BLOCKED = ("allgather", "reducescatter", "alltoall")


def worker(rank, a, port, q):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=a.ranks)
    n = a.ranks
    count = a.bytes // 4
    if a.collective in BLOCKED:
        count = max(n, count // n * n)
    count = max(1, count)
    chunk = count // n if a.collective in BLOCKED else count
    j = torch.arange(count, dtype=torch.float32)
    inp = (rank + 1) * ((j % 7) + 1)
    out = torch.zeros(count)
    factor = {"allreduce": 2 * (n - 1) / n, "broadcast": 1.0}.get(a.collective, (n - 1) / n)
    ts = []
    for it in range(-a.warm, a.iters):
        dist.barrier()
        t0 = time.perf_counter()
        if a.collective == "allreduce":
            out.copy_(inp)
            dist.all_reduce(out)
        elif a.collective == "allgather":
            dist.all_gather(list(out.split(chunk)), inp[:chunk].clone())
        elif a.collective == "reducescatter":
            tmp = inp.clone()
            dist.all_reduce(tmp)
            out[:chunk].copy_(tmp[rank * chunk:(rank + 1) * chunk])
        elif a.collective == "broadcast":
            if rank == 0:
                out.copy_(inp)
            dist.broadcast(out, 0)
        elif a.collective == "alltoall":
            dist.all_to_all_single(out, inp)
        else:
            raise SystemExit(f"torch_gloo_coll: unknown collective {a.collective}")
        dt = torch.tensor([time.perf_counter() - t0], dtype=torch.float64)
        dist.all_reduce(dt, op=dist.ReduceOp.MAX)
        if it >= 0:
            ts.append(dt.item())
    # the last result against the closed form: rank r's input j is (r + 1)(j mod 7 + 1)
    sumr = n * (n + 1) / 2
    if a.collective == "allreduce":
        expected = sumr * ((j % 7) + 1)
    elif a.collective == "allgather":
        expected = (j // chunk + 1) * (((j % chunk) % 7) + 1)
    elif a.collective == "reducescatter":
        expected = torch.cat([sumr * (((rank * chunk + torch.arange(chunk)) % 7) + 1), out[chunk:]])
    elif a.collective == "broadcast":
        expected = (j % 7) + 1
    else:
        expected = (j // chunk + 1) * (((rank * chunk + j % chunk) % 7) + 1)
    wrong = torch.tensor([int((out != expected.float()).sum())], dtype=torch.int64)
    dist.all_reduce(wrong)
    if rank == 0:
        med = statistics.median(ts)
        algbw = count * 4 / med / 1e9
        q.put(dict(collective=a.collective, transport=a.label, ranks=n, bytes=count * 4, dtype="fp32",
                   algo="gloo", time_us_p50=round(med * 1e6, 3), algbw_gbs=round(algbw, 3),
                   busbw_gbs=round(algbw * factor, 3), wrong=int(wrong.item())))
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=4)
    ap.add_argument("--collective", default="allreduce")
    ap.add_argument("--bytes", type=int, default=1 << 26)
    ap.add_argument("--warm", type=int, default=3)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--label", default="torch-gloo")
    a = ap.parse_args()
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=worker, args=(r, a, port, q)) for r in range(a.ranks)]
    for p in ps:
        p.start()
    res = q.get(timeout=600)
    for p in ps:
        p.join()
    print("RESULT " + json.dumps(res), flush=True)
