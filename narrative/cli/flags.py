"""The grammar of the user's own changes on the command line: ``--set``, ``--unset``,
``--relate``, ``--create`` ...

These are parsed into the same :class:`~narrative.model.Delta` every diffuser
proposes, so they go through exactly the same validation.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from narrative import fields
from narrative.delta.parse import parse_input
from narrative.errors import InvalidInputError
from narrative.ids import check_id
from narrative.model import (
    CreateOp,
    Delta,
    ExpireOp,
    Node,
    Op,
    RelateOp,
    SetOp,
    UnrelateOp,
    UnsetOp,
)
from narrative.nodefile import MAX_DEPTH, json_problem

OpT = TypeVar("OpT", RelateOp, UnrelateOp)


def parse_value(text: str) -> Any:
    """JSON when it parses (``3``, ``true``, ``[1]``, ``"quoted"``), else the text itself."""
    try:
        value = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise InvalidInputError(f"value {text[:40]!r}...: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        return text
    problem = json_problem(value)
    if problem:
        raise InvalidInputError(f"value {text[:40]!r}: {problem}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(name)


def parse_target_field(spec: str, flag: str) -> tuple[str, str]:
    """``lin-yuan.state.location`` or ``lin-yuan/state/location`` -> (id, JSON pointer)."""
    slash, dot = spec.find("/"), spec.find(".")
    cut = min(i for i in (slash, dot, len(spec)) if i >= 0)
    node_id, rest = spec[:cut], spec[cut:]
    if not node_id:
        raise InvalidInputError(f"{flag} {spec!r}: expected ID.field.path: it must start with a "
                                "node id (e.g. lin-yuan.state.mood)")
    if not rest or rest in (".", "/"):
        raise InvalidInputError(f"{flag} {spec!r}: expected ID.field.path (e.g. lin-yuan.state.mood)")
    check_id(node_id, what=f"node id in {flag} {spec!r}")
    ptr = rest if rest.startswith("/") else fields.pointer(*rest[1:].split("."))
    if any(t == "" for t in fields.split(ptr)):
        raise InvalidInputError(f"{flag} {spec!r}: empty field name in the path")
    return node_id, ptr


def parse_set(spec: str) -> SetOp:
    left, eq, value = spec.partition("=")
    if not eq:
        raise InvalidInputError(f"--set {spec!r}: expected ID.field=VALUE")
    node_id, ptr = parse_target_field(left, "--set")
    return SetOp(op="set", target=node_id, field=ptr, value=parse_value(value))


def parse_unset(spec: str) -> UnsetOp:
    node_id, ptr = parse_target_field(spec, "--unset")
    return UnsetOp(op="unset", target=node_id, field=ptr)


def parse_edge(spec: str, flag: str) -> tuple[str, str, str, dict[str, Any] | None]:
    """``SRC:TYPE:DST`` (``--relate`` also takes ``=JSON-ATTRS``) -> parts."""
    body, eq, attrs_text = spec.partition("=")
    parts = body.split(":")
    if len(parts) != 3 or not all(parts):
        raise InvalidInputError(
            f"{flag} {spec!r}: expected SOURCE:TYPE:TARGET (e.g. su-qing:suspects:lin-yuan)")
    src, rtype, dst = parts
    check_id(src, what=f"source id in {flag} {spec!r}")
    check_id(dst, what=f"target id in {flag} {spec!r}")
    attrs = None
    if eq:
        attrs = parse_value(attrs_text)
        if not isinstance(attrs, dict):
            raise InvalidInputError(f"{flag} {spec!r}: attributes after '=' must be a JSON object")
    return src, rtype, dst, attrs


def _op(model: type[OpT], data: dict[str, Any], what: str) -> OpT:
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        loc = "/".join(str(p) for p in first["loc"])
        raise InvalidInputError(f"{what}: {loc}: {first['msg']}") from None


def parse_relate(spec: str) -> RelateOp:
    src, rtype, dst, attrs = parse_edge(spec, "--relate")
    return _op(RelateOp, {"op": "relate", "source": src, "type": rtype, "target": dst,
                          "attrs": attrs or {}}, f"--relate {spec!r}")


def parse_unrelate(spec: str) -> UnrelateOp:
    src, rtype, dst, attrs = parse_edge(spec, "--unrelate")
    if attrs is not None:
        raise InvalidInputError(f"--unrelate {spec!r}: takes no attributes")
    return _op(UnrelateOp, {"op": "unrelate", "source": src, "type": rtype, "target": dst},
               f"--unrelate {spec!r}")


def read_node_file(path: str, data: bytes | None = None) -> CreateOp:
    """A ``create`` operation from a whole node in a JSON file."""
    if data is None:
        try:
            data = Path(path).read_bytes()
        except OSError as exc:
            raise InvalidInputError(f"--create {path}: cannot read ({exc.strerror})") from None
    obj = parse_input(data, path)
    if isinstance(obj, dict):
        obj.setdefault("created_by_event", None)
    try:
        node = Node.model_validate(obj)
    except ValidationError as exc:
        lines = [f"{path}: field /{'/'.join(str(p) for p in e['loc'])}: {e['msg']}"
                 for e in exc.errors(include_url=False)]
        raise InvalidInputError(lines[0], details=lines) from None
    return CreateOp(op="create", node=node)


def build_delta(*, delta: Delta | None = None, creates: Iterable[CreateOp] = (),
                sets: Iterable[str] = (), unsets: Iterable[str] = (),
                relates: Iterable[str] = (), unrelates: Iterable[str] = (),
                expires: Iterable[str] = ()) -> Delta:
    """One delta from the command line's flags, in a fixed order: a ``--delta`` file's
    operations, creations, field changes, relation changes, expiries."""
    ops: list[Op] = list(delta.ops) if delta else []
    ops.extend(creates)
    ops.extend(parse_set(s) for s in sets)
    ops.extend(parse_unset(s) for s in unsets)
    ops.extend(parse_relate(s) for s in relates)
    ops.extend(parse_unrelate(s) for s in unrelates)
    ops.extend(ExpireOp(op="expire", target=check_id(i, what="--expire id")) for i in expires)
    base = delta or Delta()
    return base.model_copy(update={"ops": ops})
