#!/usr/bin/env python3
"""Summarizes rows_before_after.sh's scrapes: layer 0 before and after its first move."""
import re
import sys
from pathlib import Path


def per_rank(text, name):
    """{rank: value} of a counter's layer-0 series."""
    out = {}
    for labels, value in re.findall(r"^%s\{([^}]*)\} (\S+)" % name, text, re.M):
        fields = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        if fields.get("layer") == "0":
            out[int(fields["rank"])] = float(value)
    return out


def version(text):
    m = re.search(r'^moe_a2a_placement_version\{[^}]*layer="0"[^}]*\} (\S+)', text, re.M)
    return int(float(m.group(1))) if m else 0


def counts(text):
    return (
        per_rank(text, "moe_a2a_rank_routed_tokens_total"),
        per_rank(text, "moe_a2a_rank_routed_remote_tokens_total"),
        per_rank(text, "moe_a2a_rank_pairs_assignments_total"),
    )


def window(first, last):
    """Rows per pair, remote rows per pair and pair max/mean between two scrapes."""
    (rows0, remote0, pairs0), (rows1, remote1, pairs1) = counts(first), counts(last)
    pairs = {r: pairs1[r] - pairs0.get(r, 0) for r in pairs1}
    total = sum(pairs.values())
    if total == 0:
        return None
    rows = sum(rows1.values()) - sum(rows0.values())
    remote = sum(remote1.values()) - sum(remote0.values())
    balance = max(pairs.values()) * len(pairs) / total
    return rows / total, remote / total, balance, int(total)


def main(out):
    scrapes = [p.read_text() for p in sorted(Path(out, "scrapes").glob("*.txt"))]
    scrapes = [s for s in scrapes if "moe_a2a_rank_pairs_assignments_total" in s]
    versions = [version(s) for s in scrapes]
    # the version gauge reads 0 until layer 0's first step; the move is the first change after
    first = next(v for v in versions if v > 0)
    moved = next((i for i, v in enumerate(versions) if v > first), None)
    print("| layer 0 | placement versions | pairs | rows per pair | remote rows per pair | pairs max/mean |")
    print("|---|---|---:|---:|---:|---:|")
    spans = [("before the first move", 0, moved - 1 if moved else len(scrapes) - 1)]
    if moved:
        spans.append(("after it", moved, len(scrapes) - 1))
    for name, a, b in spans:
        w = window(scrapes[a], scrapes[b])
        if w is None:
            print(f"| {name} | {versions[a]}–{versions[b]} | 0 | – | – | – |")
            continue
        per_pair, remote, balance, pairs = w
        print(f"| {name} | {versions[a]}–{versions[b]} | {pairs} | {per_pair:.3f} | {remote:.3f} | {balance:.3f} |")


if __name__ == "__main__":
    main(sys.argv[1])
