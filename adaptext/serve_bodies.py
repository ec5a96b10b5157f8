"""The bodies of the service's requests, as pydantic models (FastAPI's; ``pip install
'adaptext[serve]'``).

An input is a string or an object whose fields the run's input reader checks, with messages that
name the input; the models check the rest of a body: its shape and its limits (how many inputs,
how many characters each, given by ``adaptext.serve``). A body that does not pass is a
``UsageError`` of one line saying why, which the service answers with 422.
"""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from .errors import UsageError

SHAPE = 'the body must be a JSON object {"inputs": [...]}'


class PredictBody(BaseModel):
    """POST /predict: ``{"inputs": [...]}``, each input a string or an object (``{"text", "pair"}``,
    ``{"text", "contexts"}``, ``{"tree"}``)."""
    model_config = ConfigDict(strict=True)          # a JSON list is read as itself, nothing converted
    inputs: list[Any]

    @field_validator("inputs")
    @classmethod
    def _within_limits(cls, inputs: list, info: ValidationInfo) -> list:
        assert info.context is not None, "a body is checked with its limits as the context (PredictBody.of)"
        most, chars = info.context["most"], info.context["chars"]
        if len(inputs) > most:
            raise PydanticCustomError("limit", "at most {most} inputs per request", {"most": most})
        for k, x in enumerate(inputs, 1):
            if _chars(x) > chars:
                raise PydanticCustomError("limit", "input {k} is longer than {chars} characters",
                                          {"k": k, "chars": f"{chars:,}"})
        return inputs

    @classmethod
    def of(cls, payload, most: int, chars: int):
        """The body of a parsed JSON ``payload``, with at most ``most`` inputs of at most ``chars``
        characters each."""
        try:
            return cls.model_validate(payload, context={"most": most, "chars": chars})
        except ValidationError as e:
            error = e.errors(include_url=False, include_input=False)[0]
            raise UsageError(error["msg"] if error["type"] == "limit" else SHAPE) from None

    @classmethod
    def openapi(cls) -> dict:
        """The request body of the route's OpenAPI entry: the service reads the body itself (to
        cap its size as it arrives), so FastAPI does not see the model."""
        return {"requestBody": {"required": True,
                                "content": {"application/json": {"schema": cls.model_json_schema()}}}}


class ExplainBody(PredictBody):
    """POST /explain: the inputs and the ``label`` to explain (default: each input's predicted
    one), which the explainer checks against the run's labels."""
    label: Any = None


def _chars(x) -> int:
    """The characters of an input's texts (a string, or the strings of an object, however deep:
    walked with a list of its own, as a recursion would fail on a deep one)."""
    total, waiting = 0, [x]
    while waiting:
        v = waiting.pop()
        if isinstance(v, str):
            total += len(v)
        elif isinstance(v, dict):
            waiting.extend(v.values())
        elif isinstance(v, list):
            waiting.extend(v)
    return total
