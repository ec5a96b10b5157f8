"""A bounded load on `adaptext serve` over loopback: N concurrent clients (keep-alive HTTP/1.1)
each send requests of K short texts until a fixed number of requests or a time limit; reports
requests/s, texts/s, p50 / p99 latency, the status codes and each process's CPU time per request,
beside the same run's offline `predict` throughput (batches of 64, measured first, before the server starts).

    python benchmarks/serve_load.py RUN_DIR --clients 8 --requests 4000 --texts 4 --time-limit 60 [-- SERVE OPTIONS]
    python benchmarks/serve_load.py RUN_DIR --cases 16x50,4x1000 --requests 200   # writes results/serve_cases.json

Used by benchmarks/scale.py; on its own it prints the rows as JSON. ``--cases CxT,...`` loads the
server with C clients of T texts a request for each case in turn (large requests and many clients:
every response should be a 200) and writes the rows as a result file."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
TEXTS = ROOT / "adaptext" / "resources" / "trec" / "test.txt.gz"


def short_texts() -> list[str]:
    from adaptext.data.readers import read_trec_raw
    return [ex.text for ex in read_trec_raw(TEXTS)]


def offline_texts_per_s(run_dir, texts: list[str], batch_size: int = 64, passes: int = 7) -> float:
    """The run's own `predict` throughput in batches of ``batch_size``: the median of ``passes``
    passes of 10 x the texts each (the warm-up pass not counted)."""
    import adaptext
    clf = adaptext.load(run_dir)
    clf.predict(texts, batch_size)
    rates = []
    for _ in range(passes):
        started = time.perf_counter()
        for _ in range(10):
            clf.predict(texts, batch_size)
        rates.append(10 * len(texts) / (time.perf_counter() - started))
    return float(np.median(rates))


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    return [int(c) for c in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def server_processes(pid: int, options: tuple) -> dict:
    """{name: pids} of the server: its "front" and its "model" process (none with ``--in-process``);
    under ``--workers N`` all its processes together as "workers"."""
    if "--workers" in options:
        kids = children(pid)
        return {"workers": [pid] + kids + [g for k in kids for g in children(k)]}
    model = [k for k in children(pid) if b"spawn_main" in Path(f"/proc/{k}/cmdline").read_bytes()]
    return {"front": [pid], **({"model": model} if model else {})}


def cpu_of(processes: dict) -> dict:
    return {name: sum(cpu_seconds(p) for p in pids) for name, pids in processes.items()} | {"client": time.process_time()}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(run_dir, port: int, options: tuple = ()) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-m", "adaptext.cli", "serve", str(run_dir), "--port", str(port), *options],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=1).read()
            return proc
        except OSError:
            if proc.poll() is not None:
                raise SystemExit(f"the server stopped: {proc.stderr.read().decode()[-2000:]}")
            time.sleep(0.2)
    proc.kill()
    raise SystemExit("the server did not answer /health within 60 s")


async def _client(port: int, bodies: list[bytes], budget: dict, out: list) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    k = 0
    try:
        while budget["left"] > 0 and time.perf_counter() < budget["until"]:
            budget["left"] -= 1
            body = bodies[k % len(bodies)]
            k += 1
            started = time.perf_counter()
            writer.write(b"POST /predict HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head.split(b" ", 2)[1])
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            await reader.readexactly(length)
            out.append((time.perf_counter() - started, status))
    finally:
        writer.close()


async def _load(port: int, clients: int, requests: int, texts_per_request: int, time_limit: float,
                texts: list[str]) -> tuple[list, float]:
    cycled = texts * (texts_per_request // len(texts) + 2)    # a request may hold more texts than the file
    starts = [(k * texts_per_request) % len(texts) for k in range(max(len(texts) // texts_per_request, clients))]
    bodies = [json.dumps({"inputs": cycled[i:i + texts_per_request]}).encode() for i in starts]
    budget = {"left": requests, "until": time.perf_counter() + time_limit}
    out: list = []
    started = time.perf_counter()
    await asyncio.gather(*(_client(port, bodies[c::clients], budget, out) for c in range(clients)))
    return out, time.perf_counter() - started


def measure(run_dir, clients: int = 8, requests: int = 4000, texts_per_request: int = 4,
            time_limit: float = 60.0, warmup: int = 1000, options: tuple = ()) -> dict:
    """The load's figures for a server started with ``options`` (``adaptext serve`` options)."""
    texts = short_texts()
    offline = offline_texts_per_s(run_dir, texts)
    port = free_port()
    server = start_server(run_dir, port, options)
    try:
        asyncio.run(_load(port, clients, warmup, texts_per_request, time_limit, texts))
        processes = server_processes(server.pid, options)
        before = cpu_of(processes)
        results, seconds = asyncio.run(_load(port, clients, requests, texts_per_request, time_limit, texts))
        after = cpu_of(processes)
        batching = json.loads(urllib.request.urlopen(f"http://127.0.0.1:{port}/info", timeout=5).read())["batching"]
    finally:
        server.terminate()
        server.wait(10)
    latency = np.asarray([r[0] for r in results]) * 1000
    statuses: dict = {}
    for _, s in results:
        statuses[str(s)] = statuses.get(str(s), 0) + 1
    n = len(results)
    return {"clients": clients, "options": " ".join(options), "mean_batch": batching["mean_batch"], "texts_per_request": texts_per_request, "requests": n, "seconds": round(seconds, 2),
            "requests_per_s": round(n / seconds, 1), "texts_per_s": round(n * texts_per_request / seconds, 1),
            "p50_ms": round(float(np.percentile(latency, 50)), 1), "p99_ms": round(float(np.percentile(latency, 99)), 1),
            "statuses": statuses, "offline_texts_per_s": round(offline, 1),
            # where the CPU goes: each process's CPU time during the load, per request answered
            "cpu_us_per_request": {name: round(1e6 * (after[name] - before[name]) / n) for name in after},
            "ratio_to_offline": round(n * texts_per_request / seconds / offline, 3)}


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
