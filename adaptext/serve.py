"""A small HTTP service over a trained run (FastAPI; ``pip install adaptext[serve]``).

    adaptext serve RUN_DIR --port 8000
    curl -s localhost:8000/predict -H 'content-type: application/json' -d '{"inputs": ["Who wrote Hamlet ?"]}'

GET / (a page to try the run in a browser), GET /health, GET /info (run, model, task, labels, metrics),
POST /predict with ``{"inputs": [...]}``
(strings, or objects ``{"text", "pair"}`` / ``{"text", "contexts"}`` for pair / context models)
answers ``{"predictions": [{"label", "probs", ...}]}``. A body that is not UTF-8 JSON of that
shape (the pydantic models of ``serve_bodies``), too many or too long inputs, or a body over
``MAX_BODY`` bytes answers 422 with the problem. ``adaptext serve`` says on stderr where it listens, once it does; a port or host it
cannot listen on is one line before the model loads.

Concurrent requests are batched together, as inference servers do: the event loop reads and
checks each request's inputs (parsing and tagging a tree model's in a thread), and the model,
off the event loop, reads every request queued since its last call in one call of at most
``MAX_BATCH`` inputs. ``adaptext serve`` runs the model in a process of its own (``ProcessBatcher``),
``create_app`` by default in a thread (``DynamicBatcher``). A malformed input fails its own
request only; GET /health answers 503 once the model process has gone.
"""

import asyncio
import concurrent.futures
import itertools
import json
import multiprocessing
import os
import queue
import socket
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path

from .errors import MissingResource, UsageError

MAX_INPUTS = 1000
MAX_EXPLAIN = 32         # inputs of one /explain request (each costs 50 to 800 model calls)
MAX_CHARS = 100_000      # per input: a longer text is refused before it is tokenised
MAX_BODY = 10 * 2 ** 20  # bytes of one request: the whole body is capped, not only each text
MAX_DRAIN = 4 * MAX_BODY  # bytes of a refused body still read (and dropped) so that its client reads the 422
MAX_BATCH = 256          # inputs the model reads in one call
MAX_WAIT = 0.002         # seconds, at most, an idle model waits for requests on their way
PAGE = Path(__file__).resolve().parent / "resources" / "page.html"


class ModelUnavailable(RuntimeError):
    """The model process has gone: answered 503."""


def take_batch(first, more, max_batch: int, max_wait: float) -> list:
    """``first`` (a queued ``(examples, tag)``) and the requests ``more()`` hands over (None when
    none is queued), up to ``max_batch`` inputs, gathering for at most ``max_wait`` seconds."""
    waiting, size = [first], len(first[0])
    deadline = time.monotonic() + max_wait
    while size < max_batch and time.monotonic() < deadline:
        request = more()
        if request is None:
            break
        waiting.append(request)
        size += len(request[0])
    return waiting


def answer_batch(predict, waiting: list) -> list:
    """``[(tag, decisions of its examples)]`` from one ``predict`` call over the batch, or
    ``[(tag, the exception)]`` for every request of a batch that failed: none is lost."""
    try:
        decisions = predict([x for examples, _ in waiting for x in examples])
    except Exception as e:
        return [(tag, e) for _, tag in waiting]
    out, start = [], 0
    for examples, tag in waiting:
        out.append((tag, decisions[start:start + len(examples)]))
        start += len(examples)
    return out


def settle(future, answer) -> None:
    if future is None or future.done():          # a client that went away
        return
    if isinstance(answer, Exception):
        future.set_exception(answer)
    else:
        future.set_result(answer)


class DynamicBatcher:
    """Joins the inputs of concurrent requests into one model call, the model in a thread of
    this process. ``predict(examples)`` runs in that thread; ``submit(examples)`` answers with
    the decisions of those examples.

    The model thread takes its next batch itself as soon as it is free: every request queued
    while it read the last one (continuous batching), so it never waits for the event loop
    between batches. An idle model lets requests already on their way join the first one, for
    at most ``max_wait`` seconds."""

    def __init__(self, predict, max_batch: int = MAX_BATCH, max_wait: float = MAX_WAIT):
        self.predict, self.max_batch, self.max_wait = predict, max_batch, max_wait
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        self.thread: threading.Thread | None = None
        self.calls = self.inputs = 0             # model calls and the inputs they read (see /info)

    async def submit(self, examples: list) -> list:
        loop = asyncio.get_running_loop()
        if self.thread is None:
            self.thread = threading.Thread(target=self._serve, name="adaptext-model", daemon=True)
            self.thread.start()
        future = loop.create_future()
        self.queue.put((examples, (future, loop)))
        return await future

    def _serve(self) -> None:
        while True:
            waiting = take_batch(self.queue.get(), self._queued, self.max_batch, self.max_wait)
            self.calls, self.inputs = self.calls + 1, self.inputs + sum(len(e) for e, _ in waiting)
            for entry, answer in answer_batch(self.predict, waiting):
                _hand_over(entry, answer)

    def _queued(self):
        try:
            return self.queue.get_nowait()
        except queue.Empty:
            time.sleep(0)                        # lets the event loop hand over what it has read
            return None if self.queue.empty() else self.queue.get_nowait()

    def healthy(self) -> str | None:
        return None

    def close(self) -> None:
        pass


class ProcessBatcher:
    """``DynamicBatcher`` with the model in a process of its own: this process reads HTTP and
    checks inputs while the model process, whenever it is free, takes every request queued so
    far as its next batch. Python's lock serialises a thread's Python with the event loop's; two
    processes do not, which is what makes the service answer at batch speed on a CPU.

    Answers are read by a thread of their own with blocking reads: an answer can be far larger
    than a pipe's buffer (1,000 inputs with their probabilities), and a reader woken by the event
    loop would have to read it in pieces. Each answer is handed to the loop of the request that
    asked for it."""

    def __init__(self, run_dir, device: str = "cpu", threads: int = 1, max_batch: int = MAX_BATCH,
                 max_wait: float = MAX_WAIT):
        ctx = multiprocessing.get_context("spawn")        # a fork would copy torch's threads
        child_requests, self.requests = ctx.Pipe(duplex=False)
        self.answers, child_answers = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=_model_process, name="adaptext-model", daemon=True,
                                   args=(child_requests, child_answers, str(run_dir), device, threads, max_batch, max_wait))
        self.process.start()
        child_requests.close()                   # so that each side sees the end of the other
        child_answers.close()
        self._ready()
        self.pending: dict = {}                  # request id -> (future, its loop)
        self.lock = threading.Lock()             # pending and failure: the event loop and the reader
        self.ids = itertools.count()
        self.failure: str | None = None
        self.calls = self.inputs = 0
        self.sender = concurrent.futures.ThreadPoolExecutor(1, "adaptext-requests")   # one writer at a time
        self.reader = threading.Thread(target=self._read, name="adaptext-answers", daemon=True)
        self.reader.start()

    def _ready(self) -> None:
        try:
            status, message = self.answers.recv()
        except EOFError:
            status, message = "error", f"the model process stopped (exit code {self.process.exitcode})"
        if status != "ready":
            self.process.kill()
            raise MissingResource(f"the model could not start: {message}")

    async def submit(self, examples: list) -> list:
        loop = asyncio.get_running_loop()
        rid, future = next(self.ids), loop.create_future()
        with self.lock:
            if self.failure:
                raise ModelUnavailable(self.failure)
            self.pending[rid] = (future, loop)
        try:     # in a thread of its own: a large request fills the pipe while the model reads
            await loop.run_in_executor(self.sender, self.requests.send, (examples, rid))
        except OSError:
            self._stopped()
        return await future

    def _read(self) -> None:
        while True:
            try:
                inputs, answers = self.answers.recv()
            except (EOFError, OSError):
                self._stopped()
                return
            self.calls, self.inputs = self.calls + 1, self.inputs + inputs
            with self.lock:
                waiting = [(self.pending.pop(rid, None), answer) for rid, answer in answers]
            for entry, answer in waiting:
                if entry is not None:
                    _hand_over(entry, answer)

    def _stopped(self) -> None:
        """The model process has gone (killed, out of memory): every waiting request and every
        later one is answered with that, and /health says it."""
        self.process.join(1)
        with self.lock:
            self.failure = f"the model process stopped (exit code {self.process.exitcode})"
            waiting, self.pending = list(self.pending.values()), {}
        for entry in waiting:
            _hand_over(entry, ModelUnavailable(self.failure))

    def healthy(self) -> str | None:
        return self.failure

    def close(self) -> None:
        self.sender.shutdown(wait=True)
        self.requests.close()                    # the model process reads the end and leaves
        self.process.join(5)
        if self.process.is_alive():
            self.process.kill()


def _hand_over(entry, answer) -> None:
    """Settles a request's future on its own event loop, from another thread."""
    future, loop = entry
    try:
        loop.call_soon_threadsafe(settle, future, answer)
    except RuntimeError:                         # its event loop has closed: the client is gone
        pass


def _model_process(requests, answers, run_dir: str, device: str, threads: int, max_batch: int, max_wait: float):
    """The model's side of ``ProcessBatcher``: load the run, then answer batch after batch until
    the server closes its end."""
    import torch
    torch.set_num_threads(threads)
    from .api import Classifier
    try:
        clf = Classifier.load(run_dir, device=device)
    except Exception as e:
        answers.send(("error", f"{type(e).__name__}: {e}"))
        return
    answers.send(("ready", None))
    queued = lambda: requests.recv() if requests.poll() else None  # noqa: E731
    while True:
        try:
            waiting = take_batch(requests.recv(), queued, max_batch, max_wait)
        except EOFError:                         # the server has gone
            return
        out = [(rid, RuntimeError(f"{type(a).__name__}: {a}") if isinstance(a, Exception) else a)
               for rid, a in answer_batch(clf.predict, waiting)]
        answers.send((sum(len(e) for e, _ in waiting), out))


def create_app(run_dir, device: str = "cpu", model_process: bool = False, threads: int = 1):
    """The FastAPI app of a run; ``model_process``: the model in a process of its own with
    ``threads`` torch threads (see ``ProcessBatcher``), else in a thread of this one. This
    process keeps a copy on the CPU for reading inputs and for /explain."""
    try:
        from fastapi import FastAPI, HTTPException, Request, Response
        from fastapi.responses import JSONResponse
        from starlette.concurrency import run_in_threadpool
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise MissingResource("serving needs FastAPI: pip install 'adaptext[serve]'") from e
    from .api import Classifier
    from .serve_bodies import ExplainBody, PredictBody

    clf = Classifier.load(run_dir, device="cpu" if model_process else device)   # the accelerator is the model process's
    about = describe(clf, run_dir)
    batcher = ProcessBatcher(run_dir, device, threads) if model_process else DynamicBatcher(clf.predict)
    read_apart = clf.kind.is_tree                     # parsing and tagging take a while: off the event loop

    @asynccontextmanager
    async def lifespan(app):              # the model process ends with the server
        yield
        batcher.close()

    app = FastAPI(title="adaptext", description=f"{about['model']} trained on {about['data']}", lifespan=lifespan)
    add_page(app)

    @app.get("/health")
    def health():
        failure = batcher.healthy()
        return JSONResponse({"status": "error", "detail": failure}, 503) if failure else {"status": "ok"}

    @app.get("/info")
    def info():
        return {**about, "batching": {"model_calls": batcher.calls, "inputs": batcher.inputs,
                                      "mean_batch": round(batcher.inputs / max(batcher.calls, 1), 2)}}

    @app.post("/predict", openapi_extra=PredictBody.openapi())
    async def predict(request: Request):
        try:
            inputs = (await read_request(request, PredictBody, MAX_INPUTS)).inputs
            examples = await run_in_threadpool(clf.as_examples, inputs) if read_apart else clf.as_examples(inputs)
            predictions = await batcher.submit(examples)
        except (UsageError, TypeError) as e:
            raise HTTPException(422, str(e)) from None
        except ModelUnavailable as e:
            raise HTTPException(503, str(e)) from None
        return Response(json.dumps({"predictions": predictions}), media_type="application/json")

    @app.post("/explain", openapi_extra=ExplainBody.openapi())
    async def explain(request: Request):
        """{"inputs": [...], "label": optional} -> {"explanations": [...]}: integrated gradients,
        dozens of model calls per input, so at most MAX_EXPLAIN inputs, off the event loop."""
        try:
            body = await read_request(request, ExplainBody, MAX_EXPLAIN)
            records = await run_in_threadpool(explained, clf, body.inputs, body.label)
        except (UsageError, TypeError, MissingResource) as e:      # missing: Captum, the explain extra
            raise HTTPException(501 if isinstance(e, MissingResource) else 422, str(e)) from None
        return Response(json.dumps({"explanations": records}), media_type="application/json")

    return app


def add_page(app) -> None:
    """GET /: a page to try the run in a browser, which asks /info, /predict and /explain as any
    client does (``resources/page.html``, one file with its style and script: it works offline)."""
    from fastapi.responses import HTMLResponse
    page = PAGE.read_text(encoding="utf-8")
    app.get("/", response_class=HTMLResponse, include_in_schema=False)(lambda: HTMLResponse(page))


def explained(clf, inputs, label) -> list[dict]:
    """``clf.explain``'s records, each with its words coloured as HTML ("html"): the page shows
    them as they come, so words.html and the page colour words with one renderer."""
    from .explain.highlight import explanation_html
    return [{**r, "html": explanation_html(r)} for r in clf.explain(inputs, label)]


def describe(clf, run_dir) -> dict:
    """What /info says of a run: its folder's name, model, task, labels, the data's file name (no
    paths of the host) and its test metrics."""
    from .runs.files import read_json
    from .runs.rundir import RunDir
    metrics_path = RunDir(run_dir).metrics
    metrics = read_json(metrics_path) if metrics_path.is_file() else {}
    return {"run": Path(run_dir).resolve().name, "model": clf.config.model, "task": clf.kind,
            "labels": clf.labels.labels, "multilabel": clf.labels.multilabel,
            "data": Path(clf.config.data).name if clf.config.data else "trec-demo",
            "test": {k: metrics.get("test", {}).get(k) for k in ("accuracy", "macro_f1", "micro_f1")}}


async def read_body(request) -> bytes:
    """The request's body, refused as soon as it grows past ``MAX_BODY``."""
    declared = request.headers.get("content-length")
    if declared and declared.isdigit() and int(declared) > MAX_BODY:
        if int(declared) <= MAX_DRAIN:
            await _drain(request)
        raise UsageError(f"the request body is larger than {MAX_BODY:,} bytes")
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_BODY:
            await _drain(request)
            raise UsageError(f"the request body is larger than {MAX_BODY:,} bytes")
    return bytes(body)


async def _drain(request, most: int = MAX_DRAIN) -> None:
    """Reads and drops the rest of a refused body (at most ``most`` bytes). A server that
    answers while its client is still sending, and then closes, resets the connection: the
    client fails on its send and never reads the answer."""
    dropped = 0
    while dropped <= most:
        message = await request.receive()
        if message["type"] != "http.request":            # the client has gone
            return
        dropped += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def parsed_body(body: bytes):
    """A request body as JSON (whatever its content type); what does not parse is a ``UsageError``."""
    try:
        return json.loads(body.decode("utf-8"))
    except UnicodeDecodeError as e:
        raise UsageError(f"the body is not UTF-8 (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise UsageError(f"the body is not JSON ({e.msg} at line {e.lineno}, column {e.colno})") from None
    except RecursionError:                   # the parser recurses once per bracket
        raise UsageError("the body nests lists or objects too deeply") from None


async def read_request(request, model, most: int):
    """A request's body as ``model`` (a model of ``serve_bodies``): at most ``MAX_BODY`` bytes of
    UTF-8 JSON of the model's shape, with at most ``most`` inputs of ``MAX_CHARS`` characters each."""
    return model.of(parsed_body(await read_body(request)), most, MAX_CHARS)


def serve(run_dir, host: str = "127.0.0.1", port: int = 8000, device: str = "cpu", threads: int = 1,
          workers: int = 1, model_process: bool = True) -> None:
    """``threads``: torch's threads of the model; ``workers``: server processes sharing the port,
    each with its own model and batcher; ``model_process``: each model in a process of its own
    (two cores for one server: the HTTP side and the model), else in a thread of the server's."""
    try:
        import uvicorn
    except ImportError as e:
        raise MissingResource("serving needs uvicorn: pip install 'adaptext[serve]'") from e
    sock = listening_socket(host, port)       # a bad address is said before the model loads
    os.environ.update(ADAPTEXT_SERVE_RUN=str(Path(run_dir).resolve()), ADAPTEXT_SERVE_DEVICE=device,
                      ADAPTEXT_SERVE_THREADS=str(threads), ADAPTEXT_SERVE_MODEL_PROCESS=str(int(model_process)))
    where = f"serving {run_dir} on {_url(sock)} (GET / a page to try it; POST /predict, /explain; GET /health, /info)"
    if workers == 1:
        config = uvicorn.Config(app_from_environment(), host=host, port=port, log_level="warning")
        print(where, file=sys.stderr, flush=True)       # the socket listens: a client may connect now
        server = uvicorn.Server(config)
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:             # Ctrl-C once the server has shut down, as uvicorn.run takes it
            pass
        if not server.started:
            raise SystemExit(3)                # uvicorn's own code for a server that did not start
        return
    sock.close()                              # the workers' supervisor binds the port itself
    create_app(run_dir, device)               # a damaged run is one error here, not one per worker
    print(where + f", {workers} workers", file=sys.stderr, flush=True)
    uvicorn.run("adaptext.serve:app_from_environment", factory=True, host=host, port=port, workers=workers,
                log_level="warning")


def listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound to ``host``:``port`` and listening; a port out of range, a host that does
    not resolve or an address this machine cannot listen on is a ``UsageError``. (uvicorn takes
    port 99999 modulo 65536, and answers the others with a traceback.)"""
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise UsageError(f"--port must be a whole number from 1 to 65535, not {port!r}")
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    except (socket.gaierror, UnicodeError) as e:
        raise UsageError(f"--host {host!r} is not an address nor a name this machine resolves "
                         f"({getattr(e, 'strerror', None) or e})") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(2048)
    except OSError as e:
        sock.close()
        raise UsageError(f"cannot listen on {host} port {port}: {e.strerror or e}") from None
    sock.set_inheritable(True)
    return sock


def _url(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def app_from_environment():
    """The app of ``serve``'s run, made in each worker process."""
    import torch
    threads = int(os.environ["ADAPTEXT_SERVE_THREADS"])
    torch.set_num_threads(threads)
    return create_app(os.environ["ADAPTEXT_SERVE_RUN"], os.environ["ADAPTEXT_SERVE_DEVICE"],
                      os.environ.get("ADAPTEXT_SERVE_MODEL_PROCESS") == "1", threads)
