"""Deltas handed in as JSON (a ``--delta`` file, a model's reply, a program's answer).

A mistake in such JSON is the sender's, so it is invalid input naming the field,
never a broken world; values are held to what a node file can store.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from narrative.errors import InvalidInputError, InvalidWorldError
from narrative.model import Delta
from narrative.nodefile import MAX_DEPTH, WRAPPER_DEPTH, json_problem, parse_json


def read_delta(source: str, data: bytes) -> Delta:
    """A delta from JSON text, with errors naming ``source`` and the field."""
    return validate_delta(parse_input(data, source), source)


def parse_input(data: bytes, source: str) -> Any:
    """JSON the user handed in: a mistake in it is invalid input, not a broken world."""
    try:
        return parse_json(data, source, MAX_DEPTH + WRAPPER_DEPTH)  # nodes are checked whole later
    except InvalidWorldError as exc:
        raise InvalidInputError(exc.message, details=exc.details) from None


def validate_delta(obj: Any, source: str) -> Delta:
    """A delta from parsed JSON, refused whole with every problem named."""
    problem = json_problem(obj, MAX_DEPTH + WRAPPER_DEPTH)
    if problem:
        raise InvalidInputError(f"{source}: {problem}")
    try:
        return Delta.model_validate(obj)
    except ValidationError as exc:
        lines = []
        for e in exc.errors(include_url=False):
            loc = "/".join(str(p) for p in e["loc"])
            lines.append(f"{source}: /{loc}: {e['msg']}")
        raise InvalidInputError(lines[0] + (f" (and {len(lines) - 1} more)" if len(lines) > 1 else ""),
                                details=lines) from None
