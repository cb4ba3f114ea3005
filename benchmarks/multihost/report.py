#!/usr/bin/python3
"""report.py OUT: the table (multihost.md) and rows (multihost.json) of the launches run.sh left
in OUT. Step time: per iteration the slowest rank's dispatch + combine, median over iterations,
then median over launches. Inter-host bytes per step: the dispatcher's count (rows and combine rows
sent to the other host, all ranks) and the kernel's (both ends' veth tx bytes over the whole launch,
joining and barriers included, divided by its steps). Exits 1 when a launch failed or a validation
failed."""
import glob
import json
import os
import statistics
import sys


def launch(dir_):
    ranks = []
    for path in sorted(glob.glob(os.path.join(dir_, "rank-*.json"))):
        with open(path) as f:
            ranks.append(json.load(f))
    if not ranks or len(ranks) != len(glob.glob(os.path.join(dir_, "rank-*.log"))):
        return None
    iters = len(ranks[0]["dispatch_ns"])
    total = [max(r["dispatch_ns"][i] + r["combine_ns"][i] for r in ranks) for i in range(iters)]
    with open(os.path.join(dir_, "link_bytes")) as f:
        link = int(f.read())
    with open(os.path.join(dir_, "steps")) as f:
        steps = int(f.read())
    return {
        "ok": all(r["ok"] for r in ranks),
        "step_us_p50": statistics.median(total) / 1e3,
        "dispatcher_bytes": sum(r["inter_host_bytes_per_step"] for r in ranks),
        "link_bytes": link / steps,
    }


def main(out):
    runs, failed = {}, False
    for dir_ in sorted(glob.glob(os.path.join(out, "*-*-*"))):
        if not os.path.isdir(dir_):
            continue
        mode, rest = os.path.basename(dir_).split("-", 1)
        workload = rest.rsplit("-", 1)[0]
        row = launch(dir_)
        if row is None or not row["ok"]:
            print(f"report: {dir_}: failed or wrong", file=sys.stderr)
            failed = True
            continue
        runs.setdefault((workload, mode), []).append(row)
    rows = []
    for (workload, mode), launches in sorted(runs.items()):
        rows.append({
            "workload": workload, "mode": mode, "launches": len(launches),
            "step_us_p50": round(statistics.median(r["step_us_p50"] for r in launches), 1),
            "inter_host_bytes_per_step": launches[0]["dispatcher_bytes"],
            "link_bytes_per_step": round(statistics.median(r["link_bytes"] for r in launches)),
        })
    with open(os.path.join(out, "link.txt")) as f:
        link = f.read().strip()
    lines = [f"link: {link}", "",
             "| workload | mode | launches | step p50 (us) | inter-host bytes/step (dispatcher)"
             " | inter-host bytes/step (veth) | bytes vs flat | step vs flat |",
             "|---|---|---|---|---|---|---|---|"]
    by = {(r["workload"], r["mode"]): r for r in rows}
    for r in rows:
        flat = by.get((r["workload"], "flat"))
        ratio_b = r["inter_host_bytes_per_step"] / flat["inter_host_bytes_per_step"] if flat else 0
        ratio_t = r["step_us_p50"] / flat["step_us_p50"] if flat else 0
        lines.append(f"| {r['workload']} | {r['mode']} | {r['launches']} | {r['step_us_p50']:.1f} |"
                     f" {r['inter_host_bytes_per_step']} | {r['link_bytes_per_step']} |"
                     f" {ratio_b:.3f} | {ratio_t:.3f} |")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(out, "multihost.md"), "w") as f:
        f.write(table + "\n")
    with open(os.path.join(out, "multihost.json"), "w") as f:
        json.dump(rows, f, indent=1)
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: report.py OUT", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
