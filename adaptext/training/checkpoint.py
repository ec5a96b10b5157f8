"""Lightning checkpoints without pickle: every tensor of the checkpoint goes into a
safetensors file, everything else into a JSON skeleton kept in that file's metadata.
One file per checkpoint, written to a temporary name and renamed (atomic)."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch
from lightning.pytorch.plugins.io import CheckpointIO
from safetensors import safe_open
from safetensors.torch import save_file

from ..atomic import written_atomically

_KEY = "adaptext.skeleton"


def _flatten(obj, tensors: dict, where: str):
    if isinstance(obj, torch.Tensor):
        key = f"t{len(tensors)}"
        tensors[key] = obj.detach().cpu().contiguous().clone()
        return {"__tensor__": key}
    if isinstance(obj, dict):
        return {"__dict__": [[_flatten(k, tensors, where), _flatten(v, tensors, f"{where}.{k}")] for k, v in obj.items()]}
    if isinstance(obj, tuple):
        return {"__tuple__": [_flatten(v, tensors, where) for v in obj]}
    if isinstance(obj, list):
        return [_flatten(v, tensors, f"{where}[]") for v in obj]
    if isinstance(obj, (np.integer, np.floating, np.bool_)):
        return obj.item()
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot store a {type(obj).__name__} (at {where}) in a checkpoint without pickle")


def _unflatten(obj, tensors):
    if isinstance(obj, list):
        return [_unflatten(v, tensors) for v in obj]
    if isinstance(obj, dict):
        if "__tensor__" in obj:
            return tensors[obj["__tensor__"]]
        if "__tuple__" in obj:
            return tuple(_unflatten(v, tensors) for v in obj["__tuple__"])
        if "__dict__" in obj:
            return {_unflatten(k, tensors): _unflatten(v, tensors) for k, v in obj["__dict__"]}
    return obj


def save_tree(obj, path) -> None:
    tensors: dict = {}
    skeleton = _flatten(obj, tensors, "checkpoint")
    with written_atomically(path, suffix=".ckpt") as tmp:
        save_file(tensors, str(tmp), metadata={_KEY: json.dumps(skeleton)})


def load_tree(path, map_location="cpu"):
    with safe_open(str(path), framework="pt", device=str(map_location) if map_location else "cpu") as f:
        meta = f.metadata() or {}
        if _KEY not in meta:
            raise ValueError(f"{path}: not an adaptext checkpoint")
        tensors = {k: f.get_tensor(k) for k in f.keys()}
    return _unflatten(json.loads(meta[_KEY]), tensors)


class SafetensorsCheckpointIO(CheckpointIO):
    def save_checkpoint(self, checkpoint, path, storage_options=None) -> None:
        save_tree(checkpoint, path)

    def load_checkpoint(self, path, map_location=None, weights_only=None):
        return load_tree(path, "cpu")

    def remove_checkpoint(self, path) -> None:
        Path(path).unlink(missing_ok=True)
