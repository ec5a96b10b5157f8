"""Run benchmark slices side by side: one GPU is mostly idle under one small text model, so
several table slices (``--seed S --models M --datasets D --out X.json``) share it. Less so for
long texts: six IMDB slices (QRNN / LSTM, 400 tokens, 4 epochs: about 740 s one after another)
on one H200 had none finished after 430 s of training side by side. Reads one
shell command per line (blank lines and ``#`` comments skipped), keeps ``--jobs`` running, in
file order, each with its output in ``--logs``/NNN.log; stops starting new ones at
``--deadline`` seconds and kills what still runs at ``--kill`` seconds, so a time-limited
machine returns every finished slice. Exit status: the number of commands that failed.

    python benchmarks/parallel.py slices.txt --jobs 6 --logs /tmp/logs --deadline 500 --kill 560
"""
import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("commands", help="file of shell commands, one per line")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--logs", default="parallel-logs")
    ap.add_argument("--deadline", type=float, default=float("inf"), help="seconds after which none is started")
    ap.add_argument("--kill", type=float, default=float("inf"), help="seconds after which running ones are killed")
    a = ap.parse_args()
    if not Path(a.commands).is_file():
        ap.error(f"{a.commands}: no such file of commands")
    lines = [ln.strip() for ln in Path(a.commands).read_text().splitlines()]
    todo = [ln for ln in lines if ln and not ln.startswith("#")]
    logs = Path(a.logs)
    logs.mkdir(parents=True, exist_ok=True)
    t0, running, results = time.monotonic(), {}, {}
    queue = list(enumerate(todo, 1))

    def report(k, code):
        results[k] = code
        cmd = todo[k - 1]
        print(f"[{time.monotonic() - t0:6.0f}s] {'ok  ' if code == 0 else f'FAIL {code}'} {k:03d} {cmd}", flush=True)

    while queue or running:
        now = time.monotonic() - t0
        while queue and len(running) < a.jobs and now < a.deadline:
            k, cmd = queue.pop(0)
            log = open(logs / f"{k:03d}.log", "w")
            log.write(f"$ {cmd}\n")
            log.flush()
            running[k] = (subprocess.Popen(cmd, shell=True, stdout=log, stderr=subprocess.STDOUT,
                                           start_new_session=True), log)
        if now >= a.deadline:
            queue.clear()
        for k, (p, log) in list(running.items()):
            if p.poll() is not None:
                log.close()
                del running[k]
                report(k, p.returncode)
            elif now >= a.kill:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
                log.close()
                del running[k]
                report(k, "killed")
        time.sleep(1)
    skipped = len(todo) - len(results)
    failed = sum(1 for c in results.values() if c != 0)
    print(f"{len(results) - failed} ok, {failed} failed or killed, {skipped} not started, "
          f"{time.monotonic() - t0:.0f}s", flush=True)
    return failed


if __name__ == "__main__":
    sys.exit(main())
