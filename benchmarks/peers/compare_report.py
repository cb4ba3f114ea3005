#!/usr/bin/python3
"""compare_report.py OUT: the comparison table (comparison.md), every row (comparison.json) and a
plot (comparison.png, when matplotlib imports) from the launches compare.sh left in OUT/logs.
Exits 1 when a launch failed, a fingerprint differs from BENCHMARKS.md or a validation failed."""
import glob
import importlib.metadata
import json
import os
import re
import statistics
import subprocess
import sys

# BENCHMARKS.md: identical routing is what makes these rows comparable.
PUBLISHED = {
    "decode": "2db17c1a8926b832",
    "prefill": "da24c122f2dd9b10",
    "prefill-skew": "5ab026f2f7226fed",
    "prefill-skew-perm": "eb71bebf78a117a6",
    "prefill-n2": "2ca54de00fb4645e",
    "prefill-n8": "556ad903063d5ae2",
}
COLUMNS = ["moe-a2a local", "moe-a2a local-fp8", "moe-a2a shm", "moe-a2a tcp", "moe-a2a tcp-fp8",
           "moe-a2a local-ll", "moe-a2a shm-ll", "moe-a2a tcp-ll", "mpi", "mpi-nocma", "torch-gloo"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def read(path, default=""):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def result_line(path):
    rows = [json.loads(l[len("RESULT "):]) for l in read(path).splitlines() if l.startswith("RESULT ")]
    return rows[-1] if rows else None


def load_launches(logs):
    """Rows (one per launch) and failures, in launch order."""
    rows, failures = [], []
    for log in sorted(glob.glob(os.path.join(logs, "*__*__*.log")), key=os.path.getmtime):
        label, workload, launch = re.match(r"(.+)__(.+)__(\d+)\.log$", os.path.basename(log)).groups()
        column = label.replace("moe-a2a-", "moe-a2a ")
        row = None
        if label.startswith("moe-a2a-"):
            try:
                with open(log[:-4] + ".json") as f:
                    row = next((r for r in json.load(f) if r["workload"] == workload), None)
            except (OSError, ValueError):
                pass
        else:
            row = result_line(log)
        if row is None:
            failures.append(dict(column=column, workload=workload, launch=int(launch), log=log,
                                 tail=read(log).splitlines()[-3:]))
            continue
        rows.append(dict(row, column=column, launch=int(launch), log=log))
    return rows, failures


def median(values):
    return statistics.median(values) if values else None


def fmt(x, digits=2, suffix=""):
    return "–" if x is None else f"{x:.{digits}f}{suffix}"


def version(cmd):
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout
        return out.splitlines()[0].strip() if out else None
    except (OSError, subprocess.SubprocessError):
        return None


def environment(logs, memcpy):
    try:
        torch = importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:
        torch = None
    jars = glob.glob(os.path.join(ROOT, "cli/target/moe-a2a-cli-*-all.jar"))
    return dict(started=read(os.path.join(logs, "started.txt")), cores=os.cpu_count(),
                loadavg_start=read(os.path.join(logs, "loadavg_start.txt")),
                loadavg_end=read(os.path.join(logs, "loadavg_end.txt")),
                memcpy=memcpy, openmpi=version(["mpirun", "--version"]), torch=torch,
                moe_a2a_jar=os.path.basename(jars[0]) if jars else None)


def ratio(total, column, baseline):
    return total[column] / baseline if column in total and baseline else None


def summarize(rows, memcpy_gbps):
    summary = []
    for workload in [w for w in PUBLISHED if any(r["workload"] == w for r in rows)]:
        wrows = [r for r in rows if r["workload"] == workload]
        cells = {}
        for col in COLUMNS:
            mine = [r for r in wrows if r["column"] == col]
            if mine:
                cells[col] = dict(
                    total_ms=median([r["total_us_p50"] for r in mine]) / 1e3,
                    dispatch_ms=median([r["dispatch_us_p50"] for r in mine]) / 1e3,
                    combine_ms=median([r["combine_us_p50"] for r in mine]) / 1e3,
                    total_p90_ms=median([r["total_us_p90"] for r in mine]) / 1e3,
                    launches_total_ms=[r["total_us_p50"] / 1e3 for r in mine],
                    algbw_gbps=median([r["algbw_gbps"] for r in mine]),
                    suspect=any(not r["ok"] or r["fingerprint"] != PUBLISHED[workload] for r in mine))
        first = wrows[0]
        # Every byte both exchanges send to other ranks, copied once at the measured memcpy rate.
        copy_bound = (2 * first["N"] * first["bytes_per_rank"] / (memcpy_gbps * 1e9) * 1e3
                      if memcpy_gbps else None)
        total = {c: v["total_ms"] for c, v in cells.items()}
        mpi = [total[c] for c in ("mpi", "mpi-nocma") if c in total]
        summary.append(dict(
            workload=workload, N=first["N"], T=first["T"], routing=first["routing"],
            bytes_per_rank=first["bytes_per_rank"], copy_bound_ms=copy_bound, columns=cells,
            local_over_faster_mpi=ratio(total, "moe-a2a local", min(mpi) if mpi else None),
            local_fp8_over_faster_mpi=ratio(total, "moe-a2a local-fp8", min(mpi) if mpi else None),
            shm_over_faster_mpi=ratio(total, "moe-a2a shm", min(mpi) if mpi else None),
            tcp_over_gloo=ratio(total, "moe-a2a tcp", total.get("torch-gloo")),
            tcp_fp8_over_gloo=ratio(total, "moe-a2a tcp-fp8", total.get("torch-gloo")),
            local_ll_over_faster_mpi=ratio(total, "moe-a2a local-ll", min(mpi) if mpi else None),
            shm_ll_over_faster_mpi=ratio(total, "moe-a2a shm-ll", min(mpi) if mpi else None),
            tcp_ll_over_gloo=ratio(total, "moe-a2a tcp-ll", total.get("torch-gloo"))))
    return summary


def markdown(summary, rows, failures, problems, env):
    failed = {(f["workload"], f["column"]) for f in failures}
    mem = env["memcpy"]
    lines = [
        "# moe-a2a next to Open MPI and torch.distributed (gloo): canonical MoE exchange workloads",
        "",
        f"Started {env['started']}; {env['cores']} cores; load average {env['loadavg_start'] or '?'} at the start, "
        f"{env['loadavg_end'] or '?'} at the end; {env['openmpi'] or 'no Open MPI'}; torch {env['torch'] or '–'}; "
        f"{env['moe_a2a_jar'] or 'no moe-a2a jar'}.",
        f"memcpy: {fmt(mem.get('memcpy_gbps'))} GB/s with {mem.get('threads', '?')} threads, "
        f"{fmt(mem.get('memcpy_gbps_1t'))} GB/s with 1 (the faster of the measurements before and after the launches).",
        "",
        "Cells: median over launches of each launch's total (dispatch + combine) p50, in ms. Copy bound: every byte "
        "both exchanges send to other ranks, copied once at the memcpy rate above. Ratios below 1: moe-a2a is faster.",
        "",
        "| workload | N | T | " + " | ".join(COLUMNS)
        + " | copy bound | local / faster MPI | local fp8 / faster MPI | shm / faster MPI | tcp / gloo"
        + " | tcp fp8 / gloo | local ll / faster MPI | shm ll / faster MPI | tcp ll / gloo |",
        "|---|---:|---:|" + "---:|" * (len(COLUMNS) + 9),
    ]
    if not summary:
        lines.append("| no launch produced a result |" + " |" * (len(COLUMNS) + 11))
    for s in summary:
        cells = []
        for col in COLUMNS:
            c = s["columns"].get(col)
            if c is None:
                cells.append("failed" if (s["workload"], col) in failed else "–")
            else:
                cells.append(fmt(c["total_ms"]) + (" (!)" if c["suspect"] else ""))
        lines.append(f"| {s['workload']} | {s['N']} | {s['T']} | " + " | ".join(cells)
                     + f" | {fmt(s['copy_bound_ms'])} | {fmt(s['local_over_faster_mpi'], 2, '×')}"
                     f" | {fmt(s['local_fp8_over_faster_mpi'], 2, '×')}"
                     f" | {fmt(s['shm_over_faster_mpi'], 2, '×')}"
                     f" | {fmt(s['tcp_over_gloo'], 2, '×')} | {fmt(s['tcp_fp8_over_gloo'], 2, '×')}"
                     f" | {fmt(s['local_ll_over_faster_mpi'], 2, '×')}"
                     f" | {fmt(s['shm_ll_over_faster_mpi'], 2, '×')} | {fmt(s['tcp_ll_over_gloo'], 2, '×')} |")
    lines += ["", "(!): a launch failed validation or its fingerprint differs from BENCHMARKS.md; failed: no launch gave a result (both: see Problems); –: not run.",
              "", "## Launches", "",
              "| workload | column | total p50 per launch (ms) | dispatch p50 | combine p50 | total p90 | algbw GB/s |",
              "|---|---|---|---:|---:|---:|---:|"]
    for s in summary:
        for col, c in s["columns"].items():
            lines.append(f"| {s['workload']} | {col} | {', '.join(f'{v:.2f}' for v in c['launches_total_ms'])} | "
                         f"{fmt(c['dispatch_ms'])} | {fmt(c['combine_ms'])} | {fmt(c['total_p90_ms'])} | "
                         f"{fmt(c['algbw_gbps'])} |")
    lines += ["", "## Problems", ""]
    lines += [f"- {p}" for p in problems] or [
        f"None: all {len(rows)} rows carry the published fingerprint and passed validation."]
    return "\n".join(lines) + "\n"


def plot(summary, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"compare: skipping the plot: {sys.executable} cannot import matplotlib (apt-get install python3-matplotlib)")
        return
    width = 0.8 / len(COLUMNS)
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(summary) + 2), 4.5))
    for i, col in enumerate(COLUMNS):
        xs = [x + (i - (len(COLUMNS) - 1) / 2) * width for x, s in enumerate(summary) if col in s["columns"]]
        ys = [s["columns"][col]["total_ms"] for s in summary if col in s["columns"]]
        if xs:
            ax.bar(xs, ys, width, label=col)
    bounds = [(x, s["copy_bound_ms"]) for x, s in enumerate(summary) if s["copy_bound_ms"]]
    for j, (x, y) in enumerate(bounds):
        ax.hlines(y, x - 0.45, x + 0.45, colors="black", linestyles="dashed", label="copy bound" if j == 0 else None)
    ax.set_yscale("log")
    ax.set_xticks(range(len(summary)), [s["workload"] for s in summary])
    ax.set_ylabel("dispatch + combine, ms (median of p50s; log scale)")
    ax.set_title("moe-a2a vs peers on the canonical workloads")
    ax.legend(fontsize="small", ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"compare: wrote {path}")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    logs = os.path.join(out, "logs")
    rows, failures = load_launches(logs)
    measured = [r for r in (result_line(p) for p in glob.glob(os.path.join(logs, "membw__*.log"))) if r]
    memcpy = max(measured, key=lambda m: m["memcpy_gbps"]) if measured else {}

    problems = [f"{f['workload']} {f['column']} launch {f['launch']}: no result (see {f['log']})" for f in failures]
    for r in rows:
        if r["fingerprint"] != PUBLISHED.get(r["workload"]):
            problems.append(f"{r['workload']} {r['column']} launch {r['launch']}: fingerprint {r['fingerprint']}, "
                            f"published {PUBLISHED.get(r['workload'])}")
        if not r["ok"]:
            problems.append(f"{r['workload']} {r['column']} launch {r['launch']}: validation failed (ok=false)")

    summary = summarize(rows, memcpy.get("memcpy_gbps"))
    env = environment(logs, memcpy)
    with open(os.path.join(out, "comparison.json"), "w") as f:
        json.dump(dict(environment=env, summary=summary, rows=rows, failures=failures, problems=problems), f, indent=1)
    md = markdown(summary, rows, failures, problems, env)
    with open(os.path.join(out, "comparison.md"), "w") as f:
        f.write(md)
    print(md, end="")
    if summary:
        plot(summary, os.path.join(out, "comparison.png"))
    print(f"compare: wrote {os.path.join(out, 'comparison.md')} and comparison.json")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
