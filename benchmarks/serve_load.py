"""A bounded load on `adaptext serve` over loopback: N concurrent clients (keep-alive HTTP/1.1)
each send requests of K short texts until a fixed number of requests or a time limit; reports
requests/s, texts/s, p50 / p99 latency, the status codes and each process's CPU time per request,
beside the same run's offline `predict` throughput (batches of 64, measured first, before the server starts).

    python benchmarks/serve_load.py RUN_DIR --clients 8 --requests 4000 --texts 4 --time-limit 60 [-- SERVE OPTIONS]
    python benchmarks/serve_load.py RUN_DIR --cases 16x50,4x1000 --requests 200   # writes results/serve_cases.json

The load itself is ``processes.measure`` (benchmarks/processes.py), which benchmarks/scale.py
uses too; on its own this prints the rows as JSON. ``--cases CxT,...`` loads the
server with C clients of T texts a request for each case in turn (large requests and many clients:
every response should be a 200) and writes the rows as a result file."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from processes import measure  # noqa: E402


def cases(run_dir, specs: str, requests: int, time_limit: float, options: tuple, out=None) -> None:
    """One server load per ``CxT`` case of ``specs``, written as benchmarks/results/serve_cases."""
    from common import write
    rows = []
    for spec in specs.split(","):
        clients, texts = (int(v) for v in spec.lower().split("x"))
        m = measure(run_dir, clients, requests, texts, time_limit, warmup=clients, options=options)
        print(json.dumps(m), file=sys.stderr)
        rows.append({"model": "serve", "variant": f"{clients} clients x {texts} texts", "dataset": "trec-demo test",
                     "metric": "texts_per_s", "mean": m["texts_per_s"], "n": m["requests"],
                     "baseline": "offline predict", "ratio": m["ratio_to_offline"],
                     "statuses": m["statuses"], "p50_ms": m["p50_ms"], "p99_ms": m["p99_ms"]})
    ok = all(set(r["statuses"]) == {"200"} for r in rows)
    write("serve_cases", rows, out=out, notes=f"run {Path(run_dir).name}; every response 200: {ok}. "
          "Each case: its own server start, a warm-up of one request a client, then the load.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run_dir")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--requests", type=int, default=4000)
    ap.add_argument("--texts", type=int, default=4, help="texts per request")
    ap.add_argument("--time-limit", type=float, default=60.0, help="seconds, at most")
    ap.add_argument("--cases", help="CxT,...: C clients of T texts a request, each case in turn; writes a result file")
    ap.add_argument("--out", help="the result file of --cases (default benchmarks/results/serve_cases.json)")
    a, options = ap.parse_known_args()          # the rest (after --): options of adaptext serve
    options = tuple(o for o in options if o != "--")
    if a.cases:
        cases(a.run_dir, a.cases, a.requests, a.time_limit, options, a.out)
        return
    print(json.dumps(measure(a.run_dir, a.clients, a.requests, a.texts, a.time_limit, options=options), indent=1))


if __name__ == "__main__":
    main()
