"""Reading and writing node files: one canonical byte form, and errors that name the line.

The canonical form (two-space indent, sorted keys, one field per line, UTF-8,
trailing newline) is what makes ``git diff`` and ``git blame`` work field by
field, so every node file narr commits is in it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from typing import Any, TypedDict, cast

from narrative import safejson
from narrative.errors import InvalidWorldError
from narrative.ids import (
    LAYERS,
    LIFECYCLES,
    MAX_NAME,
    OPTIONAL_FIELDS,
    Layer,
    Layout,
    Lifecycle,
    id_problem,
    normalize_name,
    parse_node_path,
)


class NodeDict(TypedDict, total=False):
    """A node as JSON data: what a node file holds (see :class:`narrative.model.Node`)."""

    id: str
    name: str
    layer: Layer
    kind: str
    aliases: list[str]
    summary: str
    lifecycle: Lifecycle
    created_by_event: str | None
    traits: dict[str, Any]
    state: dict[str, Any]
    relations: dict[str, dict[str, dict[str, Any]]]
    tags: list[str]
    sections: dict[str, str]
    always_in_view: bool
    extensions: dict[str, Any]


def names_of(node: Mapping[str, Any]) -> set[str]:
    """A node's name and aliases, normalised (blank ones left out)."""
    aliases = node.get("aliases", [])
    raw = [node.get("name", ""), *(aliases if isinstance(aliases, list) else [])]
    return {normalize_name(n) for n in raw if isinstance(n, str) and n.strip()}


def edges_of(node: Mapping[str, Any] | None) -> Iterator[tuple[str, str]]:
    """``(type, target)`` of a node's relations, tolerating a malformed ``relations`` field."""
    if node is None:
        return
    relations = node.get("relations", {})
    if not isinstance(relations, Mapping):
        return
    for rtype, targets in relations.items():
        if isinstance(targets, Mapping):
            for dst in targets:
                yield rtype, dst


def dump(node: NodeDict) -> bytes:
    return (json.dumps(node, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode("utf-8")


def load_trusted(data: bytes, path: str | None = None) -> NodeDict:
    """Parse a node blob narr itself committed (already validated when it was written).

    A commit may still come from a stranger (a clone, a pull): one that is not a node, or is
    beyond the reader's bounds, is an :class:`UnreadableNode` naming ``path``, which is a
    ``ValueError`` too for the readers that skip such a blob.
    """
    try:
        value = safejson.loads(data)
    except ValueError as exc:
        raise UnreadableNode(f"{path or 'a node blob'}: {exc}",
                             hint="narr check names the commit that wrote it") from None
    if not isinstance(value, dict):
        raise UnreadableNode(f"{path or 'a node blob'}: not a JSON object",
                             hint="narr check names the commit that wrote it")
    return cast(NodeDict, value)


class UnreadableNode(InvalidWorldError, ValueError):
    """A committed node blob that is not JSON narr can read."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


_NOT_UNICODE = "bytes that are not UTF-8, or a lone surrogate"
MAX_DEPTH = 64  # objects and arrays inside each other; a story's state never needs more
MAX_NODE_BYTES = 16 * 1024 * 1024  # one node file: a node is a few KB; a whole book of notes fits
MAX_INT_BITS = 64  # an integer a node holds (JavaScript reads 53 bits exactly, SQLite 64)


def json_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What makes a parsed value unfit to store, or None.

    JSON parsers accept more than narr can write back: ``1e999`` becomes
    infinity (stored as null), ``"\\ud800"`` a string UTF-8 cannot encode, and
    thousands of nested arrays overflow the stack of every later step.
    """
    stack: list[tuple[Any, int, str]] = [(value, 1, "")]
    while stack:
        item, depth, where = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            return "a number too large for JSON (it would be stored as null)"
        if isinstance(item, int) and not isinstance(item, bool) and item.bit_length() > MAX_INT_BITS:
            return (f"an integer beyond {MAX_INT_BITS} bits ({item.bit_length():,} bits); "
                    "a story's numbers fit in 64")
        if isinstance(item, str):
            if not encodable(item):
                return f"text {item[:20]!r}... is not valid Unicode ({_NOT_UNICODE})"
            continue
        if isinstance(item, dict | list | tuple):
            if depth > max_depth:
                return f"values nested more than {MAX_DEPTH} levels deep"
            if isinstance(item, dict):
                for key in item:
                    if not isinstance(key, str):
                        return (f"{where or '/'}: key {key!r} is not text, and JSON's keys are")
                    if not encodable(key):
                        return f"key {key[:20]!r}... is not valid Unicode ({_NOT_UNICODE})"
                stack.extend((v, depth + 1, f"{where}/{k}") for k, v in item.items())
            else:
                stack.extend((v, depth + 1, f"{where}/{i}") for i, v in enumerate(item))
            continue
        if hasattr(type(item), "__pydantic_fields__"):  # an op a program built: what it holds
            stack.extend((v, depth + 1, f"{where}/{k}") for k, v in item.__dict__.items())
            continue
        if item is not None and not isinstance(item, bool | int | float):
            return (f"{where or '/'}: a value of type {type(item).__name__}, which JSON has no form of (give "
                    "text, a number, true or false, null, a list or an object)")
    return None


def encodable(text: str) -> bool:
    """Whether UTF-8 can hold ``text`` (a lone surrogate, from a JSON escape, it cannot)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


WRAPPER_DEPTH = 8  # a delta or a request holds node values this many levels down, at most


def parse_json(data: bytes, path: str, max_depth: int = MAX_DEPTH) -> Any:
    """Strict JSON (no duplicate keys, no NaN), with errors naming file, line and column."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidWorldError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        value = safejson.loads(text, object_pairs_hook=_no_duplicates,
                               parse_constant=_reject_constant)
    except safejson.TooDeepError:  # far too deep to parse: the node's own bound is the one to name
        raise InvalidWorldError(f"{path}: values nested more than {MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as exc:
        raise InvalidWorldError(
            f"{path}: line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except _DuplicateKey as exc:
        line = _line_of(text, [exc.key], nth=2)
        where = f"line {line}: " if line else ""
        raise InvalidWorldError(f"{path}: {where}key {exc.key!r} appears twice") from None
    except ValueError as exc:
        raise InvalidWorldError(f"{path}: {exc}") from None
    problem = json_problem(value, max_depth)
    if problem:
        raise InvalidWorldError(f"{path}: {problem}")
    return value


def validate(obj: Any, path: str, text: str | None = None) -> NodeDict:
    """Validate a parsed node and return its canonical dict, or raise naming the field."""
    from pydantic import ValidationError

    from narrative.model import Node

    try:
        node = Node.model_validate(obj)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False):
            loc = [str(p) for p in err["loc"]]
            field = "/" + "/".join(loc) if loc else "(whole node)"
            line = _line_of(text, loc) if text and loc else None
            where = f"line {line}, " if line else ""
            problems.append(f"{path}: {where}field {field}: {err['msg']}")
        raise InvalidWorldError(problems[0], details=problems) from None
    return as_node_dict(node.model_dump(mode="json"))


# A relation type the plain reading accepts: printable ASCII but ' ', ':', '/' and '~'. Beyond
# ASCII the model's two checks of a type (Python's and pydantic's own pattern) may disagree on
# what is whitespace, so such a type is left to the model.
PLAIN_REL_TYPE = re.compile(r"[!-.0-9;-}]{1,64}")
_NODE_FIELDS = ("id", "name", "layer", "kind", "aliases", "summary", "lifecycle",
                "created_by_event", "traits", "state", "relations", "tags", "sections",
                "always_in_view", "extensions")
_STR_FIELDS = ("kind", "summary")
_PRONOUNS = frozenset({"she", "he", "they", "it"})  # narrative.model.PRONOUNS
_OBJECT_FIELDS = ("traits", "state", "extensions")
_LIST_FIELDS = ("aliases", "tags")


def _plain_text(value: object, *, empty: bool = True) -> bool:
    return type(value) is str and (empty or value != "")


def _plain_object(value: object) -> bool:
    return type(value) is dict and all(type(k) is str for k in value)


def plain_node(obj: Any) -> NodeDict | None:
    """A parsed node file that is plainly a valid node, in the form the model would give it
    (every field, the model's order, optional fields only when they hold something); None
    when the model (:func:`validate`) must decide: something is wrong, or would be coerced.

    Reading a hand-edited file is what ``status``, ``get`` and ``nodes`` do most; building
    the model costs such a command more than all its other work, and nearly every file is
    plainly valid. Only JSON's own types are accepted (``obj`` comes from a parser).
    """
    if type(obj) is not dict or not obj.keys() <= set(_NODE_FIELDS):
        return None
    node_id, name, layer = obj.get("id"), obj.get("name"), obj.get("layer")
    if id_problem(node_id) is not None or not _plain_text(name, empty=False) \
            or layer not in LAYERS or type(layer) is not str or len(str(name)) > MAX_NAME:
        return None
    lifecycle = obj.get("lifecycle", "permanent")
    created = obj.get("created_by_event")
    in_view = obj.get("always_in_view", False)
    if type(lifecycle) is not str or lifecycle not in LIFECYCLES \
            or not (created is None or type(created) is str) or type(in_view) is not bool:
        return None
    if not all(_plain_text(obj.get(f, "")) for f in _STR_FIELDS):
        return None
    if not all(_plain_object(obj.get(f, {})) for f in _OBJECT_FIELDS):
        return None
    pronouns = obj.get("traits", {}).get("pronouns")
    if pronouns is not None and not (type(pronouns) is str
                                     and pronouns.lower().split("/")[0].strip() in _PRONOUNS):
        return None  # the model names what is wrong
    for f in _LIST_FIELDS:
        items = obj.get(f, [])
        if type(items) is not list or not all(_plain_text(i, empty=False) for i in items) \
                or (f == "aliases" and any(len(i) > MAX_NAME for i in items)):
            return None
    sections = obj.get("sections", {})
    if not _plain_object(sections) or not all(k and type(v) is str for k, v in sections.items()):
        return None
    relations = obj.get("relations", {})
    if type(relations) is not dict:
        return None
    for rtype, targets in relations.items():
        if type(rtype) is not str or not PLAIN_REL_TYPE.fullmatch(rtype) \
                or type(targets) is not dict:
            return None
        for target, attrs in targets.items():
            if id_problem(target) is not None or not _plain_object(attrs):
                return None
    node: dict[str, Any] = {
        "id": node_id, "name": name, "layer": layer, "kind": obj.get("kind", ""),
        "aliases": obj.get("aliases", []), "summary": obj.get("summary", ""),
        "lifecycle": lifecycle, "created_by_event": created, "traits": obj.get("traits", {}),
        "state": obj.get("state", {}),
        "relations": {rtype: targets for rtype, targets in relations.items() if targets},
    }
    for f in OPTIONAL_FIELDS:
        if obj.get(f):
            node[f] = obj[f]
    return cast(NodeDict, node)


def as_node_dict(data: dict[str, Any]) -> NodeDict:
    """A validated node's JSON as :class:`NodeDict` (the model guarantees the shape)."""
    return cast(NodeDict, data)


def parse_node_file(data: bytes, path: str, layout: Layout) -> NodeDict:
    """A node from a working-tree file: strict JSON, a valid node, and in the right place."""
    obj = parse_json(data, path)
    node = plain_node(obj)
    if node is None:
        node = validate(obj, path, data.decode("utf-8-sig"))
    placed = parse_node_path(path, layout)
    if placed is None:
        raise InvalidWorldError(f"{path}: not a node file path (expected world/<layer>/...<id>.json)")
    layer, file_id = placed
    if node["id"] != file_id:
        raise InvalidWorldError(
            f"{path}: field /id is {node['id']!r} but the file is named for {file_id!r}",
            hint="a node's id is its file name; rename the file or fix the id",
        )
    if node["layer"] != layer:
        raise InvalidWorldError(
            f"{path}: field /layer is {node['layer']!r} but the file is under world/{layer}/",
            hint="move the file to the layer's directory (narr path ID shows where)",
        )
    return node


def _line_of(text: str | None, keys: list[str], nth: int = 1) -> int | None:
    """Best-effort line of a key path in pretty-printed JSON (for messages only)."""
    if not text:
        return None
    pos = 0
    keys = [k for k in keys if k != "[key]"]  # pydantic's mark for a bad dict key: the key's own line
    for i, key in enumerate(keys):
        if key.isdigit():
            continue
        needle = json.dumps(key, ensure_ascii=False) + ":"
        alt = json.dumps(key) + ":"
        count = nth if i == len(keys) - 1 else 1
        found = -1
        for _ in range(count):
            a = text.find(needle, pos)
            b = text.find(alt, pos) if alt != needle else -1
            candidates = [x for x in (a, b) if x >= 0]
            found = min(candidates) if candidates else -1
            if found < 0:
                break
            pos = found + 1
        if found < 0:
            return None
    return text.count("\n", 0, pos) + 1 if pos else None
