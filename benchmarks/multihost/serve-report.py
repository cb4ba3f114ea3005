#!/usr/bin/python3
"""serve-report.py OUT: the table (serve.md) and rows (serve.json) of the launches serve.sh left in
OUT. Per launch: the client's tokens/s over the measured requests, the step meters' bytes between
ranks on different hosts (moe_a2a_transport_sent_bytes_total, after minus before the measured
requests; rank r runs on host r % 2), and the kernel's bytes on the link over the same requests
(both veth ends' tx bytes: the rows, and the control plane's traffic with host 1's workers).
Medians over launches, and the ratio of auto (across hosts) to tcp (flat). Exits 1 when a launch
failed or a checked answer was wrong."""
import glob
import json
import os
import re
import statistics
import sys

SENT = re.compile(r'^moe_a2a_transport_sent_bytes_total\{([^}]*)\} (\S+)$', re.M)
LABEL = re.compile(r'(\w+)="([^"]*)"')


def inter_host_bytes(path):
    with open(path) as f:
        text = f.read()
    total = 0.0
    for labels, value in SENT.findall(text):
        tags = dict(LABEL.findall(labels))
        if int(tags["rank"]) % 2 != int(tags["peer"]) % 2:
            total += float(value)
    return total


def launch(dir_):
    with open(os.path.join(dir_, "client.log")) as f:
        client = f.read()
    rate = re.search(r"([0-9.]+) tokens/s", client)
    if rate is None or "0 mismatches" not in client:
        return None
    with open(os.path.join(dir_, "link_bytes")) as f:
        link = int(f.read())
    with open(os.path.join(dir_, "group.txt")) as f:
        group = f.read().strip()
    return {
        "tokens_per_s": float(rate.group(1)),
        "inter_host_bytes": inter_host_bytes(os.path.join(dir_, "metrics-after.txt"))
        - inter_host_bytes(os.path.join(dir_, "metrics-before.txt")),
        "link_bytes": link,
        "group": group,
    }


def main(out):
    runs, failed = {}, False
    for dir_ in sorted(glob.glob(os.path.join(out, "*-*"))):
        if not os.path.isdir(dir_):
            continue
        transport = os.path.basename(dir_).rsplit("-", 1)[0]
        row = launch(dir_)
        if row is None:
            print(f"serve-report: {dir_}: failed or wrong", file=sys.stderr)
            failed = True
            continue
        runs.setdefault(transport, []).append(row)
    rows = []
    for transport in ("tcp", "auto"):
        launches = runs.get(transport, [])
        if not launches:
            continue
        rows.append({
            "transport": transport,
            "launches": len(launches),
            "group": launches[0]["group"].split("transport=", 1)[-1],
            "tokens_per_s": [round(r["tokens_per_s"]) for r in launches],
            "tokens_per_s_median": round(statistics.median(r["tokens_per_s"] for r in launches)),
            "inter_host_bytes_median": round(
                statistics.median(r["inter_host_bytes"] for r in launches)),
            "link_bytes_median": round(statistics.median(r["link_bytes"] for r in launches)),
        })
    with open(os.path.join(out, "link.txt")) as f:
        link = f.read().strip()
    lines = [f"link: {link}", "",
             "| control plane | launches | tokens/s | median | inter-host bytes (meters) |"
             " link bytes (kernel) |",
             "|---|---:|---|---:|---:|---:|"]
    for r in rows:
        lines.append(
            f"| --transport {r['transport']} | {r['launches']} |"
            f" {', '.join(str(v) for v in r['tokens_per_s'])} | {r['tokens_per_s_median']} |"
            f" {r['inter_host_bytes_median']:,} | {r['link_bytes_median']:,} |")
    if len(rows) == 2 and rows[0]["tokens_per_s_median"] and rows[0]["inter_host_bytes_median"]:
        flat, across = rows
        lines += ["",
                  "auto / tcp: tokens/s %.2f×, inter-host bytes %.3f, link bytes %.3f" % (
                      across["tokens_per_s_median"] / flat["tokens_per_s_median"],
                      across["inter_host_bytes_median"] / flat["inter_host_bytes_median"],
                      across["link_bytes_median"] / flat["link_bytes_median"])]
    lines += [""] + [f"{r['transport']}: {r['group']}" for r in rows]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "serve.md"), "w") as f:
        f.write(text)
    with open(os.path.join(out, "serve.json"), "w") as f:
        json.dump(rows, f, indent=2)
    print(text, end="")
    return 1 if failed else 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: serve-report.py OUT", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
