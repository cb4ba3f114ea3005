#!/usr/bin/env python3
"""Summarizes live_rebalance.sh's run directory as a Markdown table."""
import csv
import datetime
import re
import sys
from pathlib import Path


def metric(text, name, layer="0"):
    m = re.search(r'^%s\{layer="%s"[^}]*\} (\S+)' % (name, layer), text, re.M)
    return float(m.group(1)) if m else float("nan")


def steps(text):
    m = re.search(r'^moe_a2a_step_stage_seconds_count\{[^}]*stage="route"[^}]*\} (\S+)', text, re.M)
    return int(float(m.group(1))) if m else -1


def p99(values):
    if not values:
        return float("nan")
    v = sorted(values)
    return v[min(len(v) - 1, int(round(0.99 * (len(v) - 1))))]


def unix_ms(stamp):
    return datetime.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() * 1000


def main(out):
    out = Path(out)
    print("| run | steps | layer 0 rank max/mean (last 16 steps) | placement version | rebalances | moved MiB | answers checked |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for mode in ("plain", "rebalanced"):
        m = (out / f"{mode}.metrics.txt").read_text()
        client = (out / f"{mode}.client.txt").read_text()
        check = re.search(r"checked (\d+) answers against the reference: (\d+) mismatches", client)
        print(
            f"| {mode} | {steps(m)} | {metric(m, 'moe_a2a_rank_imbalance'):.3f} "
            f"| {metric(m, 'moe_a2a_placement_version'):.0f} "
            f"| {metric(m, 'moe_a2a_rebalances_total'):.0f} "
            f"| {metric(m, 'moe_a2a_rebalance_moved_bytes_total') / 2**20:.1f} "
            f"| {check.group(1) + ' checked, ' + check.group(2) + ' mismatches' if check else 'none'} |"
        )

    log = (out / "move.server.log").read_text()
    staging = [(unix_ms(t), v) for t, v in re.findall(r"^(\S+) INFO  \[[^]]+\] \S+ - layer 0: staging placement version (\d+)", log, re.M)]
    in_use = [(unix_ms(t), v) for t, v in re.findall(r"^(\S+) INFO  \[[^]]+\] \S+ - layer 0: placement version (\d+) in use", log, re.M)]
    rows = list(csv.DictReader((out / "move.latency.csv").open()))
    moves = []
    for start, version in staging:
        end = next((t for t, v in in_use if v == version), None)
        if end is not None:
            moves.append((start, end, version))
    print()
    print("| move | staged for ms | requests overlapping it | their p99 ms | steady p99 ms (1–11 s after) | failed requests |")
    print("|---|---:|---:|---:|---:|---:|")
    failed = sum(1 for r in rows if r["status"] != "OK")
    for start, end, version in moves:
        during, after = [], []
        for r in rows:
            s = float(r["start_unix_ms"])
            e = s + float(r["latency_ms"])
            lat = float(r["latency_ms"])
            if e >= start and s <= end:
                during.append(lat)
            elif s > end + 1_000 and s < end + 11_000:
                after.append(lat)
        print(
            f"| version {version} | {end - start:.0f} | {len(during)} | {p99(during):.1f} "
            f"| {p99(after):.1f} | {failed} |"
        )


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/live-rebalance")
