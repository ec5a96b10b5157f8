"""Measuring other processes, shared by the benchmark scripts: a command run and its memory sampled
(proportional set size summed over it and its children, every 0.2 s: ``run_measured``; scale.py,
qrnn_imdb.py), and a bounded load on `adaptext serve` over loopback (``measure``: N concurrent
keep-alive clients sending requests of K short texts, beside the same run's offline `predict`
throughput; serve_load.py, scale.py)."""
from __future__ import annotations

import asyncio
import csv
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np

ADAPTEXT = [sys.executable, "-m", "adaptext.cli"]
ROOT = Path(__file__).resolve().parent.parent
TEXTS = ROOT / "adaptext" / "resources" / "trec" / "test.txt.gz"


# ------------------------------------------------------------------ a command, its memory measured
def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (from each task's children list: cheap enough to sample often)."""
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        for task in Path(f"/proc/{p}/task").glob("*/children"):
            try:
                todo += [int(c) for c in task.read_text().split()]
            except OSError:
                continue
    return found


def _memory_mb(pids: list[int]) -> float:
    """Proportional set size summed over ``pids``: a page shared by a parent and its forked
    workers counts once in all, not once in each."""
    total = 0
    for p in pids:
        try:
            for line in Path(f"/proc/{p}/smaps_rollup").read_text().splitlines():
                if line.startswith("Pss:"):
                    total += int(line.split()[1])
        except (OSError, IndexError, ValueError):
            pass
    return total / 1024


def run_measured(cmd: list, env: dict, until=None, limit: float = 3600, stdout=subprocess.PIPE) -> dict:
    """Run ``cmd``; sample its memory until it ends, ``until()`` says stop (it is then killed) or
    ``limit`` seconds pass. seconds, peak and samples [(second, MB)] of memory."""
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True)
    peak, samples, stopped = 0.0, [], None
    while proc.poll() is None:
        now = time.perf_counter() - started
        mb = _memory_mb(_tree(proc.pid))
        peak = max(peak, mb)
        samples.append((round(now, 1), round(mb, 1)))
        if (until and until()) or now > limit:
            stopped = "condition met" if until and until() else "time limit"
            proc.kill()
            break
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode not in (0, -9) or (proc.returncode == -9 and stopped is None):
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({proc.returncode}):\n{err[-3000:]}")
    return {"seconds": time.perf_counter() - started, "peak_mb": round(peak, 1), "samples": samples,
            "stdout": out or "", "stderr": err, "stopped": stopped}


def steps(run: Path) -> list[dict]:
    path = run / "steps.csv"
    return list(csv.DictReader(open(path))) if path.exists() else []


# ------------------------------------------------------------------ a load on `adaptext serve`
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
