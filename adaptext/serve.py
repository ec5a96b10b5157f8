"""A small HTTP service over a trained run (FastAPI; ``pip install adaptext[serve]``).

    adaptext serve RUN_DIR --port 8000
    curl -s localhost:8000/predict -H 'content-type: application/json' -d '{"inputs": ["Who wrote Hamlet ?"]}'

GET /health, GET /info (model, task, labels, metrics), POST /predict with ``{"inputs": [...]}``
(strings, or objects ``{"text", "pair"}`` / ``{"text", "contexts"}`` for pair / context models)
answers ``{"predictions": [{"label", "probs", ...}]}``. A body that is not UTF-8 JSON of that
shape, too many or too long inputs, or a body over ``MAX_BODY`` bytes answers 422 with the
problem.

Concurrent requests are batched together, as inference servers do: a request's inputs are read
(parsed, checked, tagged) in a thread of their own, then wait at most ``MAX_WAIT`` seconds for
other requests' inputs to join them, up to ``MAX_BATCH`` inputs, and the model reads them in one
call, in a single worker thread off the event loop. A malformed input fails its own request only.
"""

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from .data.errors import MissingResource, UsageError

MAX_INPUTS = 1000
MAX_EXPLAIN = 32         # inputs of one /explain request (each costs 50 to 800 model calls)
MAX_CHARS = 100_000      # per input: a longer text is refused before it is tokenised
MAX_BODY = 10 * 2 ** 20  # bytes of one request: the whole body is capped, not only each text
MAX_BATCH = 256          # inputs the model reads in one call
MAX_WAIT = 0.002         # seconds, at most, an idle model waits for requests on their way


class DynamicBatcher:
    """Joins the inputs of concurrent requests into one model call. ``predict(examples)`` runs
    in one worker thread; ``submit(examples)`` answers with the decisions of those examples."""

    def __init__(self, predict, max_batch: int = MAX_BATCH, max_wait: float = MAX_WAIT):
        self.predict, self.max_batch, self.max_wait = predict, max_batch, max_wait
        self.worker = ThreadPoolExecutor(1, thread_name_prefix="adaptext-model")
        self.loop = self.queue = self.task = None
        self.calls = self.inputs = 0             # model calls and the inputs they read (see /info)

    async def submit(self, examples: list) -> list:
        loop = asyncio.get_running_loop()
        if loop is not self.loop:            # started with the loop that serves (a test client's may change)
            self.loop, self.queue = loop, asyncio.Queue()
            self.task = loop.create_task(self._run())
        future = loop.create_future()
        await self.queue.put((examples, future))
        return await future

    async def _run(self) -> None:
        """Continuous batching: while the model reads one batch, the requests that arrive queue up
        and form the next; an idle model starts at once, after one turn of the event loop (and at
        most ``max_wait``) for requests already on their way."""
        loop = asyncio.get_running_loop()
        while True:
            waiting = [await self.queue.get()]
            size, deadline = len(waiting[0][0]), loop.time() + self.max_wait
            while size < self.max_batch and loop.time() < deadline:
                if self.queue.empty():
                    await asyncio.sleep(0)
                    if self.queue.empty():
                        break
                waiting.append(self.queue.get_nowait())
                size += len(waiting[-1][0])
            await self._answer(loop, waiting)

    async def _answer(self, loop, waiting: list) -> None:
        inputs = [x for examples, _ in waiting for x in examples]
        self.calls, self.inputs = self.calls + 1, self.inputs + len(inputs)
        try:
            decisions = await loop.run_in_executor(self.worker, self.predict, inputs)
        except Exception as e:               # answered to every request of the batch, never lost
            for _, future in waiting:
                if not future.done():
                    future.set_exception(e)
            return
        start = 0
        for examples, future in waiting:
            if not future.done():            # a client that went away
                future.set_result(decisions[start:start + len(examples)])
            start += len(examples)


def create_app(run_dir, device: str = "cpu"):
    try:
        from fastapi import FastAPI, HTTPException, Request, Response
        from starlette.concurrency import run_in_threadpool
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise MissingResource("serving needs FastAPI: pip install 'adaptext[serve]'") from e
    from . import load
    from .runs.files import read_json

    clf = load(run_dir, device=device)
    metrics_path = Path(run_dir) / "metrics.json"
    metrics = read_json(metrics_path) if metrics_path.is_file() else {}
    data = Path(clf.config["data"]).name if clf.config.get("data") else "trec-demo"   # no paths of the host
    batcher = DynamicBatcher(clf.predict)
    read_apart = clf.kind in ("tree", "tree_pair")    # parsing and tagging take a while: off the event loop
    app = FastAPI(title="adaptext", description=f"{clf.config['model']} trained on {data}")

    @app.get("/health")
    def health():
        return {"status": "ok"}

    @app.get("/info")
    def info():
        return {"model": clf.config["model"], "task": clf.kind, "labels": clf.labels.labels,
                "multilabel": clf.labels.multilabel, "data": data,
                "test": {k: metrics.get("test", {}).get(k) for k in ("accuracy", "macro_f1", "micro_f1")},
                "batching": {"model_calls": batcher.calls, "inputs": batcher.inputs,
                             "mean_batch": round(batcher.inputs / max(batcher.calls, 1), 2)}}

    @app.post("/predict")
    async def predict(request: Request):
        try:
            inputs = checked_inputs(await read_body(request))
            examples = await run_in_threadpool(clf.as_examples, inputs) if read_apart else clf.as_examples(inputs)
            predictions = await batcher.submit(examples)
        except (UsageError, TypeError) as e:
            raise HTTPException(422, str(e)) from None
        return Response(json.dumps({"predictions": predictions}), media_type="application/json")

    @app.post("/explain")
    async def explain(request: Request):
        """{"inputs": [...], "label": optional} -> {"explanations": [...]}: integrated gradients,
        dozens of model calls per input, so at most MAX_EXPLAIN inputs, off the event loop."""
        try:
            body = await read_body(request)
            inputs = checked_inputs(body, MAX_EXPLAIN)
            label = json.loads(body).get("label")
            records = await run_in_threadpool(clf.explain, inputs, label)
        except (UsageError, TypeError) as e:
            raise HTTPException(422, str(e)) from None
        return Response(json.dumps({"explanations": records}), media_type="application/json")

    return app


async def read_body(request) -> bytes:
    """The request's body, refused as soon as it grows past ``MAX_BODY``."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY:
        raise UsageError(f"the request body is larger than {MAX_BODY:,} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            raise UsageError(f"the request body is larger than {MAX_BODY:,} bytes")
    return bytes(body)


def checked_inputs(body: bytes, most: int = MAX_INPUTS) -> list:
    """The ``inputs`` list of a JSON body (whatever its content type), within the limits."""
    try:
        payload = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UsageError(f"the body is not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"the body is not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    if not isinstance(payload, dict) or not isinstance(payload.get("inputs"), list):
        raise UsageError('the body must be a JSON object {"inputs": [...]}')
    inputs = payload["inputs"]
    if len(inputs) > most:
        raise UsageError(f"at most {most} inputs per request")
    for k, x in enumerate(inputs, 1):
        if _chars(x) > MAX_CHARS:
            raise UsageError(f"input {k} is longer than {MAX_CHARS:,} characters")
    return inputs


def _chars(x) -> int:
    """The characters of an input's texts (a string, or the strings of an object)."""
    if isinstance(x, str):
        return len(x)
    if isinstance(x, dict):
        return sum(_chars(v) for v in x.values())
    if isinstance(x, list):
        return sum(_chars(v) for v in x)
    return 0


def serve(run_dir, host: str = "127.0.0.1", port: int = 8000, device: str = "cpu", threads: int = 1,
          workers: int = 1) -> None:
    """``threads``: torch's threads per process; ``workers``: server processes, each with the model
    and its own batcher, sharing the port (one process answers on one core: Python's lock holds
    its event loop and its model's Python to one at a time)."""
    try:
        import uvicorn
    except ImportError as e:
        raise MissingResource("serving needs uvicorn: pip install 'adaptext[serve]'") from e
    os.environ.update(ADAPTEXT_SERVE_RUN=str(Path(run_dir).resolve()), ADAPTEXT_SERVE_DEVICE=device,
                      ADAPTEXT_SERVE_THREADS=str(threads))
    if workers == 1:
        uvicorn.run(app_from_environment(), host=host, port=port, log_level="warning")
    else:
        create_app(run_dir, device)            # a damaged run is one error here, not one per worker
        uvicorn.run("adaptext.serve:app_from_environment", factory=True, host=host, port=port, workers=workers,
                    log_level="warning")


def app_from_environment():
    """The app of ``serve``'s run, made in each worker process."""
    import torch
    torch.set_num_threads(int(os.environ["ADAPTEXT_SERVE_THREADS"]))
    return create_app(os.environ["ADAPTEXT_SERVE_RUN"], os.environ["ADAPTEXT_SERVE_DEVICE"])
