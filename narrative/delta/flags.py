"""The grammar of the user's own changes: ``--set``, ``--unset``, ``--relate``, ``--create`` ...

``narr event``'s flags and the studio's composer send changes in these forms; both are
parsed here into the same :class:`~narrative.model.Delta` every diffuser proposes, so they
go through exactly the same validation. Nothing here reads a file: a transport reads what
the user named and hands over the bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Iterable
from typing import Any, Protocol, TypeVar

from pydantic import ValidationError

from narrative import fields, safejson
from narrative.delta.parse import parse_input
from narrative.errors import InvalidInputError, NotFoundError
from narrative.ids import check_id, id_problem
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
        value = safejson.loads(text, parse_constant=_no_constant)
    except safejson.JSONLimitError:
        raise InvalidInputError(f"value {text[:40]!r}...: nested more than {MAX_DEPTH} levels deep") from None
    except ValueError:
        return text
    problem = json_problem(value)
    if problem:
        raise InvalidInputError(f"value {text[:40]!r}: {problem}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(name)


class NodeNames(Protocol):
    """What the flags need to turn a typed node into an id (:class:`narrative.engine.naming.Names`)."""

    def candidates(self, text: str) -> list[str]: ...

    def resolve(self, text: str, *, must_exist: bool = True, context: str | None = None,
                ended: bool | None = None) -> str: ...


class _IdsOnly:
    """Without a world to ask, a node must be given by its id (the library's own callers)."""

    def candidates(self, text: str) -> list[str]:
        return [text] if id_problem(text) is None else []

    def resolve(self, text: str, *, must_exist: bool = True, context: str | None = None,
                ended: bool | None = None) -> str:
        return check_id(text, what=context or "node id")


def _resolver(names: NodeNames | None, created: Collection[str]) -> Callable[[str, str], str]:
    """``resolve(text, what)``; a node created by the same event is taken by its id as it is.

    A well-formed id that names nothing is passed on too: the event itself says what is
    missing and keeps the event for ``--retry`` (the node may be made before the retry).
    A name of a node that has ended is refused, naming the event that ended it.
    """
    chosen = names or _IdsOnly()

    def resolve(text: str, what: str) -> str:
        if text in created:
            return text
        return chosen.resolve(text, must_exist=False, context=what, ended=False)
    return resolve


def parse_target_field(spec: str, flag: str, names: NodeNames | None = None,
                       created: Collection[str] = ()) -> tuple[str, str]:
    """``NODE.state.location`` or ``NODE/state/location`` -> (id, JSON pointer).

    NODE is an id, a name or an alias. A name may itself hold dots or slashes
    ("Dr. Wu.state.mood"): the longest part before a ``.`` or ``/`` that names a
    node is the node, the rest is the field.
    """
    cuts = [i for i, ch in enumerate(spec) if ch in "./"]
    cut = cuts[0] if cuts else len(spec)
    if names is not None:
        for i in reversed(cuts):
            head = spec[:i].strip()
            if head and (head in created or names.candidates(head)):
                cut = i
                break
    node_text, rest = spec[:cut].strip(), spec[cut:]
    if not node_text:
        raise InvalidInputError(f"{flag} {spec!r}: expected NODE.field.path: it must start with a "
                                "node's id or name (e.g. lin-yuan.state.mood)")
    if not rest or rest in (".", "/"):
        raise InvalidInputError(f"{flag} {spec!r}: expected NODE.field.path (e.g. lin-yuan.state.mood)")
    if names is None and node_text not in created:
        check_id(node_text, what=f"node id in {flag} {spec!r}")
        node_id = node_text
    else:
        node_id = _resolver(names, created)(node_text, f"{flag} {spec!r}")
    return node_id, fields.parse_field(rest if rest.startswith("/") else rest[1:],
                                       what=f"{flag} {spec!r}")


def parse_set(spec: str, names: NodeNames | None = None, created: Collection[str] = (),
              references: Collection[str] = fields.REFERENCE_FIELDS) -> SetOp:
    """``NODE.field=VALUE``; in a reference field (:data:`narrative.fields.REFERENCE_FIELDS`
    and those the world declares, ``references``) a VALUE that names a node (id, name or
    alias) becomes its id, see :func:`reference`."""
    left, eq, value = spec.partition("=")
    if not eq:
        raise InvalidInputError(f"--set {spec!r}: expected NODE.field=VALUE")
    node_id, ptr = parse_target_field(left, "--set", names, created)
    parsed = parse_value(value)
    if names is not None and ptr in references and isinstance(parsed, str) \
            and not value.strip().startswith('"'):
        parsed = reference(parsed, ptr, spec, names, created)
    return SetOp(target=node_id, field=ptr, value=parsed)


def reference(text: str, ptr: str, spec: str, names: NodeNames, created: Collection[str]) -> str:
    """The id of the node ``text`` names, for a reference field: a node of the world or one
    the same event creates. A name two nodes carry is refused with both listed; a name no
    node carries is refused with the nearest, and text meant as text is given as a JSON
    string (``state.location='"unknown"'``), which is stored as it is."""
    text = text.strip()
    if text in created:
        return text
    field_name = ".".join(fields.split(ptr))
    try:
        return names.resolve(text, must_exist=True, context=f"--set {spec!r}")
    except NotFoundError as exc:
        quoted = json.dumps(text, ensure_ascii=False)
        refused = NotFoundError(f"{exc.message} ({field_name} holds a node's id)")
        refused.add_hint_of(exc)
        refused.add_hint(f"to store {text!r} as text, give it as a JSON string: --set "
                         f"'{spec.partition('=')[0]}={quoted}'")
        raise refused from None


def parse_unset(spec: str, names: NodeNames | None = None, created: Collection[str] = ()) -> UnsetOp:
    node_id, ptr = parse_target_field(spec, "--unset", names, created)
    return UnsetOp(target=node_id, field=ptr)


def parse_edge(spec: str, flag: str, names: NodeNames | None = None,
               created: Collection[str] = ()) -> tuple[str, str, str, dict[str, Any] | None]:
    """``SRC:TYPE:DST`` (``--relate`` also takes ``=JSON-ATTRS``) -> parts; SRC and DST are
    ids, names or aliases (a name holding ':' or '=' must be given by its id)."""
    body, eq, attrs_text = spec.partition("=")
    parts = [p.strip() for p in body.split(":")]
    if len(parts) != 3 or not all(parts):
        raise InvalidInputError(
            f"{flag} {spec!r}: expected SOURCE:TYPE:TARGET (e.g. su-qing:suspects:lin-yuan)")
    src, rtype, dst = parts
    if names is None:
        check_id(src, what=f"source id in {flag} {spec!r}")
        check_id(dst, what=f"target id in {flag} {spec!r}")
    else:
        resolve = _resolver(names, created)
        src = resolve(src, f"source of {flag} {spec!r}")
        dst = resolve(dst, f"target of {flag} {spec!r}")
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


def parse_relate(spec: str, names: NodeNames | None = None,
                 created: Collection[str] = ()) -> RelateOp:
    src, rtype, dst, attrs = parse_edge(spec, "--relate", names, created)
    return _op(RelateOp, {"op": "relate", "source": src, "type": rtype, "target": dst,
                          "attrs": attrs or {}}, f"--relate {spec!r}")


def parse_unrelate(spec: str, names: NodeNames | None = None,
                   created: Collection[str] = ()) -> UnrelateOp:
    src, rtype, dst, attrs = parse_edge(spec, "--unrelate", names, created)
    if attrs is not None:
        raise InvalidInputError(f"--unrelate {spec!r}: takes no attributes")
    return _op(UnrelateOp, {"op": "unrelate", "source": src, "type": rtype, "target": dst},
               f"--unrelate {spec!r}")


def node_file_op(path: str, data: bytes) -> CreateOp:
    """A ``create`` operation from a whole node in a JSON file (``path`` names it in errors)."""
    obj = parse_input(data, path)
    if isinstance(obj, dict):
        obj.setdefault("created_by_event", None)
    try:
        node = Node.model_validate(obj)
    except ValidationError as exc:
        lines = [f"{path}: field /{'/'.join(str(p) for p in e['loc'])}: {e['msg']}"
                 for e in exc.errors(include_url=False)]
        raise InvalidInputError(lines[0], details=lines) from None
    return CreateOp(node=node)


def build_delta(*, delta: Delta | None = None, creates: Iterable[CreateOp] = (),
                sets: Iterable[str] = (), unsets: Iterable[str] = (),
                relates: Iterable[str] = (), unrelates: Iterable[str] = (),
                expires: Iterable[str] = (), names: NodeNames | None = None,
                references: Collection[str] = fields.REFERENCE_FIELDS) -> Delta:
    """One delta from the command line's flags, in a fixed order: a ``--delta`` file's
    operations, creations, field changes, relation changes, expiries.

    With ``names`` the flags may name nodes by name or alias; a node the same event
    creates is named by its id.
    """
    ops: list[Op] = list(delta.ops) if delta else []
    ops.extend(creates)
    created = {op.node.id for op in ops if isinstance(op, CreateOp)}
    ops.extend(parse_set(s, names, created, references) for s in sets)
    ops.extend(parse_unset(s, names, created) for s in unsets)
    ops.extend(parse_relate(s, names, created) for s in relates)
    ops.extend(parse_unrelate(s, names, created) for s in unrelates)
    resolve = _resolver(names, created)
    ops.extend(ExpireOp(target=resolve(i.strip(), "--expire id" if names is None
                                                    else f"--expire {i!r}")) for i in expires)
    base = delta or Delta()
    return base.model_copy(update={"ops": ops})
