"""A small HTTP service over a trained run (FastAPI; ``pip install adaptext[serve]``).

    adaptext serve RUN_DIR --port 8000
    curl -s localhost:8000/predict -H 'content-type: application/json' -d '{"inputs": ["Who wrote Hamlet ?"]}'

GET /health, GET /info (model, task, labels, metrics), POST /predict with ``{"inputs": [...]}``
(strings, or objects ``{"text", "pair"}`` / ``{"text", "contexts"}`` for pair / context models)
answers ``{"predictions": [{"label", "probs", ...}]}``. Bad input answers 422 with the problem.
"""

from pathlib import Path
from typing import Any

from .data.errors import MissingResource

MAX_INPUTS = 1000
MAX_CHARS = 100_000      # per input: a longer text is refused before it is tokenised


def create_app(run_dir, device: str = "cpu"):
    try:
        from fastapi import FastAPI, HTTPException
        from pydantic import BaseModel
    except ImportError as e:  # pragma: no cover - depends on the optional extra
        raise MissingResource("serving needs FastAPI: pip install 'adaptext[serve]'") from e
    from . import load
    from .data.errors import DataError
    from .training.rundir import read_json

    clf = load(run_dir, device=device)
    metrics = read_json(Path(run_dir) / "metrics.json")

    class PredictRequest(BaseModel):
        inputs: list[Any]

    app = FastAPI(title="adaptext", description=f"{clf.config['model']} trained on {clf.config.get('data') or 'trec-demo'}")

    @app.get("/health")
    def health():
        return {"status": "ok"}

    @app.get("/info")
    def info():
        return {"model": clf.config["model"], "task": clf.kind, "labels": clf.labels.labels,
                "multilabel": clf.labels.multilabel, "data": clf.config.get("data"),
                "test": {k: metrics.get("test", {}).get(k) for k in ("accuracy", "macro_f1", "micro_f1")}}

    @app.post("/predict")
    def predict(req: PredictRequest):
        if len(req.inputs) > MAX_INPUTS:
            raise HTTPException(422, f"at most {MAX_INPUTS} inputs per request")
        for k, x in enumerate(req.inputs, 1):
            if _chars(x) > MAX_CHARS:
                raise HTTPException(422, f"input {k} is longer than {MAX_CHARS:,} characters")
        try:
            return {"predictions": clf.predict(req.inputs)}
        except (DataError, KeyError, TypeError, ValueError) as e:
            raise HTTPException(422, str(e)) from None

    return app


def _chars(x) -> int:
    """The characters of an input's texts (a string, or the strings of an object)."""
    if isinstance(x, str):
        return len(x)
    if isinstance(x, dict):
        return sum(_chars(v) for v in x.values())
    if isinstance(x, list):
        return sum(_chars(v) for v in x)
    return 0


def serve(run_dir, host: str = "127.0.0.1", port: int = 8000, device: str = "cpu") -> None:
    try:
        import uvicorn
    except ImportError as e:
        raise MissingResource("serving needs uvicorn: pip install 'adaptext[serve]'") from e
    uvicorn.run(create_app(run_dir, device), host=host, port=port)
