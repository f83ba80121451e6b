"""Node ids, names, event ids, layers and the one function that maps an id to its file.

Ids become file names, so they are checked here before anything touches the
disk: a hostile id (``../x``, ``a/b``, empty, absurdly long, a Windows device
name) never reaches a path join.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
import unicodedata
from typing import Final, Literal

from narrative.errors import InvalidInputError

Layer = Literal["character", "item", "ambient", "background"]
LAYERS: Final[tuple[Layer, ...]] = ("character", "item", "ambient", "background")

Lifecycle = Literal["permanent", "scene", "event"]
LIFECYCLES: Final[tuple[Lifecycle, ...]] = ("permanent", "scene", "event")

Layout = Literal["flat", "sharded"]
LAYOUTS: Final[tuple[Layout, ...]] = ("flat", "sharded")

WORLD_DIR: Final = "world"
NODE_SUFFIX: Final = ".json"
MAX_ID_LENGTH: Final = 80
# Node file keys written only when they hold something (:mod:`narrative.nodefile`), so the
# files of worlds made before these fields keep their bytes and their history its meaning.
OPTIONAL_FIELDS: Final = ("tags", "sections", "always_in_view", "extensions")
MAX_NAME: Final = 200
"""Characters in a node's name or one of its aliases, wherever it is written (a node file, a
form, the API): a name is a label the graph, the lists and the prose show; longer text belongs
in the summary."""

ID_PATTERN: Final = r"^[a-z0-9][a-z0-9_-]*$"
_ID_RE: Final = re.compile(ID_PATTERN)
# Names some file systems refuse whatever the extension; a world must clone anywhere.
_RESERVED: Final = frozenset(
    ["con", "prn", "aux", "nul"] + [f"com{i}" for i in range(10)] + [f"lpt{i}" for i in range(10)]
)


def short_event_id(event_id: str | None) -> str:
    """The part of an event id that tells it apart: its last eight hex digits (the leading
    ones are a timestamp its neighbours share); ``narr`` takes them wherever it takes an id."""
    return (event_id or "").replace("-", "")[-8:]


def normalize_name(text: str) -> str:
    """How names are compared everywhere: Unicode-normalised, case-folded, inner spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def name_problem(name: str, what: str = "name") -> str | None:
    """Why ``name`` is too long to be a node's name or alias, or None."""
    if len(name) > MAX_NAME:
        return (f"a {what} has at most {MAX_NAME} characters, not {len(name):,} "
                "(say more in the summary)")
    return None


def id_problem(node_id: object) -> str | None:
    """Why ``node_id`` is not a safe node id, or None when it is."""
    if not isinstance(node_id, str):
        return f"a node id must be a string, not {type(node_id).__name__}"
    if not node_id:
        return "a node id cannot be empty"
    if len(node_id) > MAX_ID_LENGTH:
        return f"node id is {len(node_id)} characters long; at most {MAX_ID_LENGTH} are allowed"
    if not _ID_RE.fullmatch(node_id):  # not match(): '$' would let a trailing newline through
        return (
            f"node id {node_id!r} is not a safe slug: use lowercase ASCII letters, digits, "
            "'-' and '_', starting with a letter or digit"
        )
    if node_id in _RESERVED:
        return f"node id {node_id!r} is a reserved device name on some file systems"
    return None


def check_id(node_id: object, *, what: str = "node id") -> str:
    """Return ``node_id`` if it is safe, else raise :class:`InvalidInputError` naming it."""
    problem = id_problem(node_id)
    if problem is not None:
        raise InvalidInputError(f"unsafe {what}: {problem}")
    assert isinstance(node_id, str)
    return node_id


def bucket(node_id: str) -> str:
    """The sharded layout's directory for an id: two hex digits of a stable hash."""
    return hashlib.sha1(node_id.encode("utf-8")).hexdigest()[:2]


def node_path(node_id: str, layer: Layer, layout: Layout) -> str:
    """The repository-relative path of a node's file: the only id-to-path mapping in narr."""
    check_id(node_id)
    if layout == "sharded":
        return f"{WORLD_DIR}/{layer}/{bucket(node_id)}/{node_id}{NODE_SUFFIX}"
    return f"{WORLD_DIR}/{layer}/{node_id}{NODE_SUFFIX}"


def parse_node_path(path: str, layout: Layout) -> tuple[Layer, str] | None:
    """``(layer, id)`` for a path that is a well-placed node file in ``layout``, else None."""
    parts = path.split("/")
    if len(parts) < 3 or parts[0] != WORLD_DIR or parts[1] not in LAYERS:
        return None
    name = parts[-1]
    if not name.endswith(NODE_SUFFIX):
        return None
    node_id = name[: -len(NODE_SUFFIX)]
    if id_problem(node_id) is not None:
        return None
    layer = next(lay for lay in LAYERS if lay == parts[1])
    if node_path(node_id, layer, layout) != path:
        return None
    return layer, node_id


def is_world_path(path: str) -> bool:
    return path == WORLD_DIR or path.startswith(WORLD_DIR + "/")


class _UUID7:
    """Time-ordered ids (UUIDv7 layout) that stay monotonic within one process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last_ms = -1
        self._counter = 0

    def __call__(self, now_ms: int | None = None) -> str:
        with self._lock:
            ms = int(time.time() * 1000) if now_ms is None else now_ms
            if ms <= self._last_ms:
                ms = self._last_ms
                self._counter += 1
                if self._counter >= 0x1000:
                    ms += 1
                    self._counter = 0
            else:
                self._counter = int.from_bytes(os.urandom(2), "big") & 0x7FF
            self._last_ms = ms
            rand_b = int.from_bytes(os.urandom(8), "big") & ((1 << 62) - 1)
            value = (ms & ((1 << 48) - 1)) << 80
            value |= 0x7 << 76
            value |= (self._counter & 0xFFF) << 64
            value |= 0b10 << 62
            value |= rand_b
            h = f"{value:032x}"
            return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


new_event_id = _UUID7()

EVENT_ID_RE: Final = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}\Z")


def escape(token: str) -> str:
    """One JSON pointer token, escaped (``~`` and ``/``)."""
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str) -> str:
    """The JSON pointer of ``tokens`` (``pointer("state", "mood")`` is ``/state/mood``): here,
    below the model and the field logic, as both name fields this way."""
    return "".join("/" + escape(t) for t in tokens)
