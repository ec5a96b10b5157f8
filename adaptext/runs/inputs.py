"""Raw input -> examples, as a trained run reads it: strings, JSON objects (``{"text", "pair"}``,
``{"text", "contexts"}``, ``{"tree"}`` or the run's own field names), and the lines of a file or
of standard input. The Python API, ``adaptext predict`` and the service read input here."""
from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

from ..errors import DataError
from ..data.examples import (ContextsExample, Example, ExampleKind, Location, PairExample, TextExample, TreeExample,
                              TreePairExample)
from ..data.readers import COLUMNS, file_format, format_by_name, read_table
from ..data.trees import Tree, tree_from_brackets
from ..config import RunConfig

# the run's columns of a text, pair and contexts, by the field of an input each fills
ROLES = tuple((c, c.removesuffix("_col")) for c in COLUMNS if c != "label_col")


def as_input_list(inputs: Iterable[Any]) -> list[Any]:
    if isinstance(inputs, (str, bytes, dict)):     # list("great") would be five one-letter texts
        raise TypeError(f"give a list of inputs, not one {type(inputs).__name__} (e.g. predict([text]))")
    return list(inputs)


class InputReader:
    """Examples of the run's input kind from what a user hands over. ``config``: the run's
    options (its column names, its parser); ``tokens`` and ``max_length``: how the run tokenises
    and cuts a text (a plain text given to a tree model is parsed with the run's ``--parser``)."""

    def __init__(self, kind: ExampleKind, config: RunConfig, tokens: Callable[[str], list[str]],
                 max_length: int) -> None:
        self.kind, self.config, self.tokens, self.max_length = kind, config, tokens, max_length

    def examples(self, inputs: Iterable[Any], source: str = "<input>", start: int = 0) -> list[Example]:
        """``start``: how many inputs came before these (a stream read in chunks names its k-th)."""
        out: list[Example] = []
        for k, x in enumerate(as_input_list(inputs), start):
            if hasattr(x, "kind"):                            # already an example
                out.append(x)
                continue
            try:
                out.append(self.example(x, Location(source, k + 1)))
            except ValueError as e:                           # a tree that does not parse, a wrong type
                raise DataError(source, k + 1, str(e)) from None
        return self._parsed(out)

    def _parsed(self, examples: list[Example]) -> list[Example]:
        """Plain texts of tree inputs (held as token lists until now) parsed in one batch."""
        if not any(kind.is_tree for kind in {ex.kind for ex in examples}):     # a request's common case
            return examples
        texts: list[list[str]] = [t for ex in examples if isinstance(ex, (TreeExample, TreePairExample))
                                  for t in ex.trees() if isinstance(t, list)]
        if not texts:
            return examples
        from ..parse import DEFAULT, parse_token_lists
        trees = dict(zip(map(id, texts), parse_token_lists(texts, self.config.parser or DEFAULT)))

        def fill(t: Tree | list[str]) -> Tree:
            return trees[id(t)] if isinstance(t, list) else t

        return [dataclasses.replace(ex, tree=fill(ex.tree)) if isinstance(ex, TreeExample) else
                dataclasses.replace(ex, tree=fill(ex.tree), pair=fill(ex.pair)) if isinstance(ex, TreePairExample) else
                ex for ex in examples]

    def example(self, x: object, where: Location) -> Example:
        if isinstance(x, str):
            if self.kind == ExampleKind.TREE:             # a string is a plain text, whatever it starts with
                return self._tree_example(x, where, bracketed=False)
            if self.kind != ExampleKind.TEXT:
                raise ValueError(f"this model reads {self.kind} input; give a JSON object, not a string")
            return TextExample(x, None, where)
        if not isinstance(x, dict):
            raise ValueError(f"cannot read a {type(x).__name__} as input")
        x = self._renamed(x)
        if self.kind == ExampleKind.PAIR:
            if "pair" not in x and "context" not in x:
                raise ValueError('a pair model needs {"text": ..., "pair": ...}' + self._fields_hint())
            return PairExample(_text(x, "text"), _text(x, "pair" if "pair" in x else "context"), None, where)
        if self.kind == ExampleKind.CONTEXTS:
            ctx = x.get("contexts")
            ctx = [ctx] if isinstance(ctx, str) else ctx
            if not isinstance(ctx, list) or not ctx or not all(isinstance(c, str) and c.strip() for c in ctx):
                raise ValueError('"contexts" must be a non-empty list of non-empty texts')
            return ContextsExample(_text(x, "text"), tuple(ctx), None, where)
        if self.kind == ExampleKind.TREE:                 # "tree": a bracketed parse; "text": a plain text
            return self._tree_example(_text(x, _one_of(x, "tree", "text")), where, "tree" in x)
        if self.kind == ExampleKind.TREE_PAIR:
            first, second = _one_of(x, "tree", "text"), _one_of(x, "pair_tree", "pair")
            (tree, cut), (pair, pair_cut) = (self._tree(_text(x, first), first == "tree"),
                                             self._tree(_text(x, second), second == "pair_tree"))
            return TreePairExample(tree, pair, where=where, truncated=cut or pair_cut)
        return TextExample(_text(x, "text"), None, where)

    def _renamed(self, x: dict[str, Any]) -> dict[str, Any]:
        """The run's own field names (--text-col hypothesis --pair-col premise) read as text / pair /
        contexts; the generic names work too."""
        cols = {getattr(self.config, k): role for k, role in ROLES if getattr(self.config, k)}
        return {**x, **{role: x[col] for col, role in cols.items() if col in x and role not in x}}

    def _fields_hint(self) -> str:
        cols = [getattr(self.config, c) for c, role in ROLES if getattr(self.config, c) not in (None, role)]
        return f" (or the run's fields: {', '.join(repr(c) for c in cols)})" if cols else ""

    def _tree_example(self, s: str, where: Location, bracketed: bool) -> TreeExample:
        tree, cut = self._tree(s, bracketed)
        return TreeExample(tree, where=where, truncated=cut)

    def _tree(self, s: str, bracketed: bool) -> tuple[Any, bool]:
        """(tree, truncated): a bracketed parse as it is, or a plain text's tokens (cut at the
        run's max_length as texts are), which ``examples`` parses with the others. Which of the two
        is said by where the string came from (a "tree" field, a file of trees), never by its first
        character: "(not bad at all)" is a text. The token list stands in for the example's tree
        until then, hence Any."""
        s = s.strip()
        if bracketed:
            return tree_from_brackets(s, labels_are="labels"), False
        tokens, limit = self.tokens(s) or ["<unk>"], self.max_length
        cut = bool(limit) and len(tokens) > limit
        return (tokens[:limit] if cut else tokens), cut

    # ------------------------------------------------------------------ files
    def read(self, file: str | None, encoding: str | None = None) -> list[Any]:
        return list(self.stream(file, encoding))

    def stream(self, file: str | None, encoding: str | None = None) -> Iterator[Any]:
        """Inputs from ``file`` (standard input when None), one by one as the file is read: a .csv /
        .tsv by the run's columns; otherwise one text per line, or a JSON object per line (which
        models other than text models require). Problems with the file itself are said at once."""
        if file and Path(file).is_dir():
            raise DataError(file, None, "a directory, not a file of inputs")
        named = format_by_name(file) if file else None          # the readers' rules for a file's name
        if file and named in ("csv", "tsv"):
            return self._table(file, encoding)
        return self._lines(file, encoding, jsonl=named in ("jsonl", "nli"))

    def _lines(self, file: str | None, encoding: str | None, jsonl: bool) -> Iterator[Any]:
        from ..data.lines import decode_line, iter_lines
        if file and not Path(file).is_file():
            raise DataError(file, None, "no such file")
        name, enc = file or "<stdin>", encoding or self.config.encoding or "utf-8"
        raw = getattr(sys.stdin, "buffer", None)          # bytes, so a line that is not UTF-8 is named
        if file:
            lines = iter_lines(file, enc)
        elif raw is not None:
            lines = ((i, decode_line(b.rstrip(b"\r\n"), name, i, enc)) for i, b in enumerate(raw, 1))
        else:                                             # a text stream (sys.stdin replaced)
            lines = enumerate((l.rstrip("\r\n") for l in sys.stdin), 1)
        if file and self.kind == ExampleKind.TREE and not jsonl and _a_file_of_trees(file):
            return ({"tree": line} for _, line in lines if line.strip())     # SST's PTB files: a parse a line
        return (self._line(line, name, i, jsonl) for i, line in lines)

    def _line(self, line: str, name: str, i: int, jsonl: bool) -> str | dict[str, Any]:
        """A line as a JSON object or as a text. In a .jsonl file every line must be an object;
        elsewhere a text or tree model also reads a line that is no JSON object as its text."""
        strings_ok = not jsonl and self.kind in (ExampleKind.TEXT, ExampleKind.TREE)
        if strings_ok and not line.lstrip().startswith("{"):
            return line
        try:
            value = json.loads(line)
        except json.JSONDecodeError as e:
            if strings_ok:
                return line
            raise DataError(name, i, f"invalid JSON ({e.msg})") from None
        if not isinstance(value, dict):
            if strings_ok:
                return line
            raise DataError(name, i, f"a JSON line must be an object, found {type(value).__name__}")
        return value

    def _table(self, file: str, encoding: str | None) -> Iterator[Any]:
        if not Path(file).is_file():
            raise DataError(file, None, "no such file")
        if self.kind not in (ExampleKind.TEXT, ExampleKind.PAIR):
            raise DataError(file, None, f"a .csv / .tsv file feeds text or pair models; this {self.kind} model "
                                        "reads JSON lines")
        own = {c: getattr(self.config, c) or role for c, role in ROLES}     # the run's columns, else the fields' names
        pair = self.kind == ExampleKind.PAIR
        rows = read_table.stream(file, delimiter="\t" if ".tsv" in Path(file).name.lower() else ",",
                                 text_col=own["text_col"], pair_col=own["pair_col"] if pair else None,
                                 label_col=None, encoding=encoding or self.config.encoding or "utf-8")
        return (ex.as_input() for ex in rows)


def _a_file_of_trees(file: str) -> bool:
    """A file the readers take for parses as a whole (every line bracketed, as SST's PTB files)."""
    return file_format(file).trees


def _one_of(x: dict[str, Any], parsed: str, plain: str) -> str:
    """The field of a tree input: a bracketed parse or a plain text, never both (which one the
    model should read would be a guess)."""
    if parsed in x and plain in x:
        raise ValueError(f"give {plain!r} or {parsed!r}, not both")
    return parsed if parsed in x else plain


def _text(x: dict[str, Any], key: str) -> str:
    if key not in x:
        raise ValueError(f"no {key!r} field")
    value = x[key]
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be a string, found {type(value).__name__}")
    return value
