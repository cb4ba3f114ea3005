#!/usr/bin/python3
"""compare_coll_report.py OUT: the collectives comparison (coll_comparison.md, coll_comparison.json)
from the launches compare_coll.sh left in OUT/logs. Per collective and size: the median over
launches of each peer's busbw and time; the ratios in-process moe-a2a / the faster Open MPI mode and
moe-a2a tcp / gloo (busbw: above 1, moe-a2a moves more); the 8-byte all-reduce latency of each.
Exits 1 when a launch left no row or a row has wrong elements."""
import glob
import json
import os
import re
import statistics
import sys

PEERS = ["moe-a2a local", "mpi", "mpi-nocma", "moe-a2a tcp", "torch-gloo"]


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def rows_of(logs):
    rows, failures = [], []
    for log in sorted(glob.glob(os.path.join(logs, "*__*__*__*.log"))):
        label, coll, size, launch = re.match(r"(.+)__(.+)__(\d+)__(\d+)\.log$", os.path.basename(log)).groups()
        row = None
        if label.startswith("moe-a2a-"):
            try:
                row = json.loads(read(log[:-4] + ".json"))[0]
            except (ValueError, IndexError):
                row = None
        else:
            found = [json.loads(l[len("RESULT "):]) for l in read(log).splitlines() if l.startswith("RESULT ")]
            row = found[-1] if found else None
        peer = label.replace("moe-a2a-", "moe-a2a ")
        if row is None:
            failures.append(dict(peer=peer, collective=coll, size=int(size), launch=int(launch), log=log))
            continue
        rows.append(dict(row, peer=peer, size=int(size), launch=int(launch)))
    return rows, failures


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def main(out):
    rows, failures = rows_of(os.path.join(out, "logs"))
    summary = {}
    for r in rows:
        key = (r["collective"], r["size"])
        summary.setdefault(key, {}).setdefault(r["peer"], []).append(r)
    table = []
    for (coll, size), peers in sorted(summary.items()):
        entry = dict(collective=coll, size=size)
        for p, rs in peers.items():
            entry[p] = dict(busbw_gbs=statistics.median(x["busbw_gbs"] for x in rs),
                            time_us_p50=statistics.median(x["time_us_p50"] for x in rs),
                            bytes=rs[0]["bytes"], launches=len(rs), wrong=sum(x["wrong"] for x in rs))
        bw = {p: entry[p]["busbw_gbs"] for p in PEERS if p in entry}
        mpi_best = max([bw[p] for p in ("mpi", "mpi-nocma") if p in bw], default=None)
        entry["local_over_mpi_busbw"] = ratio(bw.get("moe-a2a local"), mpi_best)
        entry["tcp_over_gloo_busbw"] = ratio(bw.get("moe-a2a tcp"), bw.get("torch-gloo"))
        table.append(entry)
    latency = {}
    for e in table:
        if e["collective"] == "allreduce" and e["size"] == 8:
            latency = {p: e[p]["time_us_p50"] for p in PEERS if p in e}
    wrong = [r for r in rows if r["wrong"]]

    md = ["# Collectives: moe-a2a next to Open MPI and gloo", "",
          f"started {read(os.path.join(out, 'logs', 'started.txt')).strip()}, load at start "
          f"{read(os.path.join(out, 'logs', 'loadavg_start.txt')).strip()}; median over launches; busbw in GB/s "
          "(nccl-tests' bus bandwidth), time in µs (median over iterations of the slowest rank).", "",
          "| collective | size (B) | " + " | ".join(f"{p} busbw" for p in PEERS)
          + " | local / best MPI | tcp / gloo |",
          "|---|---:|" + "---:|" * len(PEERS) + "---:|---:|"]
    for e in table:
        cells = [f"{e[p]['busbw_gbs']:.3f}" if p in e else "—" for p in PEERS]
        md.append(f"| {e['collective']} | {e['size']} | " + " | ".join(cells)
                  + f" | {e['local_over_mpi_busbw'] or '—'} | {e['tcp_over_gloo_busbw'] or '—'} |")
    md += ["", "8-byte all-reduce latency (µs): " + (", ".join(f"{p} {v:.1f}" for p, v in latency.items()) or "not run"), ""]
    md += ["| collective | size (B) | " + " | ".join(f"{p} µs" for p in PEERS) + " |", "|---|---:|" + "---:|" * len(PEERS)]
    for e in table:
        md.append(f"| {e['collective']} | {e['size']} | "
                  + " | ".join(f"{e[p]['time_us_p50']:.1f}" if p in e else "—" for p in PEERS) + " |")
    if failures or wrong:
        md += ["", "## Problems", ""]
        md += [f"- {f['peer']} {f['collective']} {f['size']} #{f['launch']}: no result (see {f['log']})" for f in failures]
        md += [f"- {r['peer']} {r['collective']} {r['size']} #{r['launch']}: {r['wrong']} wrong elements" for r in wrong]
    with open(os.path.join(out, "coll_comparison.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    with open(os.path.join(out, "coll_comparison.json"), "w") as f:
        json.dump(dict(summary=table, allreduce_8b_latency_us=latency, rows=rows, failures=failures), f, indent=1)
    print("\n".join(md))
    return 1 if failures or wrong else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
