"""Each door's words for a step (:class:`~narrative.errors.Step`): the command line names a
command, MCP a tool, HTTP a route, each made from the step's row and its arguments."""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from narrative.errors import Door, Step


def word(step: Step, door: Door) -> str:
    from narrative.operations import operation

    row = operation(step.operation)
    given = {k: v for k, v in step.arguments.items() if v is not None and v is not False}
    if not row.served:  # only the command line runs it, whichever door the step is told at
        door = "cli"
    if door == "mcp":
        return f"the {row.name} tool" + (f" with {_json(given)}" if given else "")
    if door == "http":
        path = _path(row.path, given)
        if row.method == "GET":
            return f"GET {path}" + (f"?{urlencode(given, doseq=True)}" if given else "")
        return f"{row.method} {path}" + (f" with {_json(given)}" if given else "")
    return _command(row, given)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _path(path: str, given: dict[str, Any]) -> str:
    """The route with its path's arguments filled in (and taken out of ``given``)."""
    for name in list(given):
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", quote(str(given.pop(name)), safe=""))
    return path


def _command(row: Any, given: Mapping[str, Any]) -> str:
    """``narr CMD POSITIONAL --option VALUE``: the row's command with the arguments given."""
    words = ["narr", *row.cli.split()]
    words += [str(given[name]) for name in row.positional if name in given]
    for name, value in given.items():
        if name in row.positional:
            continue
        flag = "--" + name.replace("_", "-")
        values = value if isinstance(value, list) else [value]
        for item in values:
            words += [flag] if item is True else [flag, str(item)]
    return " ".join(shlex.quote(w) if any(c in w for c in " \t\n'\"\\$`;&|<>()*?") else w
                    for w in words)
