"""Summarises benchmarks/overload/overload.sh's per-request CSVs (see that script)."""
import csv
import sys
from pathlib import Path

TOKENS = 128


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def pct(values, q):
    values = sorted(values)
    if not values:
        return float("nan")
    return values[min(len(values) - 1, int(q * len(values)))]


def throughput(rs):
    ok = [r for r in rs if r["status"] == "OK"]
    start = min(int(r["start_unix_ms"]) for r in rs)
    end = max(int(r["start_unix_ms"]) + float(r["latency_ms"]) for r in rs)
    return len(ok) * TOKENS / ((end - start) / 1000.0)


def server_refusals(out):
    """p50 and p99 of the server's own time on refused Forward calls, from its histogram."""
    buckets = []
    for line in (out / "metrics.txt").read_text().splitlines():
        if (line.startswith("grpc_server_processing_duration_seconds_bucket{")
                and 'method="Forward"' in line and 'status_code="RESOURCE_EXHAUSTED"' in line):
            le = line.split(',le="')[1].split('"')[0]
            buckets.append((float("inf") if le == "+Inf" else float(le), float(line.rsplit(" ", 1)[1])))
    buckets.sort()
    if not buckets or buckets[-1][1] == 0:
        return None
    total = buckets[-1][1]
    q = lambda p: next(le for le, n in buckets if n >= p * total) * 1000
    return total, q(0.5), q(0.99)


def main(out):
    out = Path(out)
    before, over, after = (rows(out / f"{n}.csv") for n in ("before", "overload", "after"))
    ok_lat = lambda rs: [float(r["latency_ms"]) for r in rs if r["status"] == "OK"]
    rejected = [float(r["latency_ms"]) for r in over if r["status"].startswith("RESOURCE_EXHAUSTED")]
    other = [r["status"] for r in over if r["status"] != "OK" and not r["status"].startswith("RESOURCE_EXHAUSTED")]
    t_before, t_over, t_after = throughput(before), throughput(over), throughput(after)
    print(f"| run | requests | OK | rejected | tokens/s (OK only) | OK p50 ms | OK p99 ms |")
    print(f"|---|---:|---:|---:|---:|---:|---:|")
    for name, rs, t in (("before (8 callers)", before, t_before), ("overload (64 callers)", over, t_over), ("after (8 callers)", after, t_after)):
        rej = sum(1 for r in rs if r["status"].startswith("RESOURCE_EXHAUSTED"))
        oks = ok_lat(rs)
        print(f"| {name} | {len(rs)} | {len(oks)} | {rej} | {t:.0f} | {pct(oks, 0.5):.1f} | {pct(oks, 0.99):.1f} |")
    print()
    print(f"rejections: {len(rejected)}, latency p50 {pct(rejected, 0.5):.2f} ms, p99 {pct(rejected, 0.99):.2f} ms, max {max(rejected) if rejected else float('nan'):.2f} ms")
    server = server_refusals(out)
    if server:
        print(f"the server's own time on refused calls ({server[0]:.0f}, histogram bucket bounds): p50 <= {server[1]:.2f} ms, p99 <= {server[2]:.2f} ms")
    print(f"other failures during overload: {len(other)} {sorted(set(other))}")
    print(f"admitted throughput under overload: {t_over / t_before:.2f}x the unloaded run")
    # recovery: the first second of 'after' against the whole of 'before'
    first = sorted(after, key=lambda r: int(r["start_unix_ms"]))
    t0 = int(first[0]["start_unix_ms"])
    first_second = [float(r["latency_ms"]) for r in first if int(r["start_unix_ms"]) - t0 < 1000 and r["status"] == "OK"]
    print(f"after the overload: p50 {pct(ok_lat(after), 0.5):.1f} ms (before: {pct(ok_lat(before), 0.5):.1f} ms); "
          f"first second after it: p50 {pct(first_second, 0.5):.1f} ms over {len(first_second)} requests")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/tmp/overload")
