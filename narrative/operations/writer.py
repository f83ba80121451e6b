"""The library's function of each row, written as Python source (:mod:`narrative.calls`).

A function made at run time from a row would work, but no type checker or editor could see
its arguments or its answer; so each row's function is written out once, as plain typed
source, from the row: its name, its :class:`~narrative.operations.Params` fields as its
arguments (those the row calls ``positional`` by position, the rest by keyword), the row's
summary and the fields' descriptions as its docstring, the row's answer class as its return
type. ``python tools/names_table.py`` writes it; a test fails when it is stale, so a row and
its function cannot drift apart.

Rows whose function is written by hand (:data:`HAND_WRITTEN`) take more than the row does
(``event``'s ops by position, ``replay``'s chain as a :class:`~narrative.engine.chains.Chain`);
the test holds them to every field of the row all the same.
"""

from __future__ import annotations

import json
import textwrap
import types
import typing
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo

    from narrative.operations import Operation

PATH = "narrative/calls.py"
"""Where the written functions live, from the project's root."""
HAND_WRITTEN = {"event": "narrative.library", "replay": "narrative.library"}
"""Rows whose library function is written by hand, and the module that holds it."""

_HEAD = '''"""The library's functions of the operations' rows: one per row, with its name and arguments.

Written from the table (:mod:`narrative.operations`) by ``python tools/names_table.py``; do not
edit. Each function checks its arguments as every other door does (one
:class:`~narrative.errors.InvalidInputError` naming the field), runs the row on the open world
and returns the row's answer, a model whose fields a type checker sees. A node is named by its
id, its name or an alias; a list argument may be any sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Literal, cast

from narrative.fields import ABSENT
from narrative.library import run_row

if TYPE_CHECKING:
'''


def source(rows: tuple[Operation[Any], ...]) -> str:
    """The module :data:`PATH` holds, for ``rows``."""
    imports: set[tuple[str, str]] = {("narrative.store", "WorldRepo")}
    functions = [_function(row, imports) for row in rows if row.name not in HAND_WRITTEN]
    return _HEAD + "".join(_imports(imports)) + "".join(functions)


def _imports(imports: set[tuple[str, str]]) -> list[str]:
    """The imports under ``TYPE_CHECKING``, one statement a module, as ruff sorts them."""
    from narrative.lazy import _isort

    lines = []
    modules = sorted({module for module, _ in imports})
    standard = [m for m in modules if m.partition(".")[0] != "narrative"]  # pathlib: first, apart
    for module in [*standard, *(m for m in modules if m not in standard)]:
        names = sorted((name for m, name in imports if m == module), key=_isort)
        line = f"    from {module} import {', '.join(names)}\n"
        if len(line) > 111:
            line = f"    from {module} import (\n" + "".join(f"        {n},\n" for n in names) + "    )\n"
        lines.append(line)
        if standard and module == standard[-1]:
            lines.append("\n")
    return lines


def _function(row: Operation[Any], imports: set[tuple[str, str]]) -> str:
    fields = row.params.model_fields
    assert set(row.positional) <= set(fields), row.name
    keywords = [name for name in fields if name not in row.positional]
    order = [*row.positional, *keywords]
    first = "world"
    if not row.needs_world:  # a row that needs none: a directory too
        imports.add(("pathlib", "Path"))
    params = [f"{first}: WorldRepo" + ("" if row.needs_world else " | Path"),
              *(_parameter(name, fields[name], imports) for name in row.positional)]
    if keywords:
        params += ["*", *(_parameter(name, fields[name], imports) for name in keywords)]
    answer = " | ".join(_answer_class(spec, imports) for spec in row.answer_of.split("|"))
    head = f"def {row.name}({', '.join(params)}) -> {answer}:"
    if len(head) > 106:
        head = f"def {row.name}(\n" + "".join(f"    {p},\n" for p in params) + f") -> {answer}:"
    doc = _docstring(row, order)
    call = ", ".join([first, f'"{row.name}"', *(f"{n}={n}" for n in order)])
    body = f"return cast(\"{answer}\", run_row({call}))"
    if len(body) > 102:
        args = "".join(f"\n        {n}={n}," for n in order)
        body = f"return cast(\"{answer}\", run_row(\n        {first}, \"{row.name}\",{args}\n    ))"
    return f"\n\n{head}\n{doc}    {body}\n"


def _parameter(name: str, info: FieldInfo, imports: set[tuple[str, str]]) -> str:
    annotation = info.annotation
    text = f"{name}: {_render(annotation, imports)}"
    if info.is_required():
        return text
    if info.default_factory is not None:
        return f"{text} = ()"
    if annotation is Any:  # any JSON, null too: left out is told apart from null
        return f"{text} = ABSENT"
    default = info.default
    return f"{text} = {json.dumps(default) if isinstance(default, str) else repr(default)}"


def _render(tp: Any, imports: set[tuple[str, str]]) -> str:
    """``tp`` as a type checker reads it: a list as any sequence, any JSON as ``JSON``."""
    from narrative.model import Op

    if tp is Op:
        imports.add(("narrative.model", "Op"))
        return "Op"
    if tp is type(None) or tp is None:
        return "None"
    if tp is Any:
        imports.add(("narrative.model", "JSON"))
        return "JSON"
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Annotated:
        return _render(args[0], imports)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(_render(arg, imports) for arg in args)
    if origin is typing.Literal:
        return f"Literal[{', '.join(json.dumps(arg) for arg in args)}]"
    if origin is list:
        return f"Sequence[{_render(args[0], imports)}]"
    if origin is dict:
        return f"dict[{_render(args[0], imports)}, {_render(args[1], imports)}]"
    assert isinstance(tp, type) and origin is None, tp
    if tp.__module__ != "builtins":
        imports.add((tp.__module__, tp.__qualname__))
    return tp.__qualname__


def _answer_class(spec: str, imports: set[tuple[str, str]]) -> str:
    module, _, name = spec.strip().partition(":")
    imports.add((module, name))
    return name


def _docstring(row: Operation[Any], order: list[str]) -> str:
    """The row's summary, then what each argument is (from its field's description)."""
    fields = row.params.model_fields
    said = [f"``{name}``: {fields[name].description}" for name in order if fields[name].description]
    text = row.summary
    if said:
        text += "\n\n" + "; ".join(said) + "."
    paragraphs = [textwrap.fill(p, 100, initial_indent="    ", subsequent_indent="    ",
                                break_on_hyphens=False)
                  for p in text.split("\n\n")]
    body = "\n\n".join(paragraphs).replace('"""', "'''").lstrip()
    return f'    """{body}\n    """\n' if "\n" in body or len(body) > 96 else f'    """{body}"""\n'
