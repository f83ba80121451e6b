"""What the event pipeline and the diffusers may ask of a world, and a world made of dicts.

The pipeline never needs the whole world: a few nodes by id, who points at a
node, which names a layer holds, which transient nodes end now. :class:`World`
is exactly that, so an event costs what it touches. The store implements it
over git and its derived catalog (:class:`narrative.store.view.WorldView`);
:class:`DictWorld` implements it over dicts, so the draft, the screening and
the arbiter are tested without a repository.

"The edited world" below is the committed world with the user's hand edits
(and edits a replayed event brings along) laid over it: what the user sees.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from narrative.ids import Layout, node_path
from narrative.nodefile import NodeDict, edges_of, names_of


class EditedNode(Protocol):
    """A node the user changed since the last event (None: it did not / does not exist)."""

    @property
    def old(self) -> NodeDict | None: ...
    @property
    def new(self) -> NodeDict | None: ...
    @property
    def old_path(self) -> str | None: ...
    @property
    def new_path(self) -> str | None: ...


class World(Protocol):
    """The world as one event finds it."""

    @property
    def layout(self) -> Layout: ...

    @property
    def name(self) -> str:
        """The world's name, as a model or a program may be told it."""
        ...

    @property
    def language(self) -> str: ...

    @property
    def root(self) -> Path:
        """Where the world lives on disk, for programs a diffuser runs."""
        ...

    @property
    def edits(self) -> Mapping[str, EditedNode]:
        """Hand edits by node id."""
        ...

    def get(self, node_id: str) -> NodeDict | None:
        """The node in the edited world (callers copy before changing it), or None."""
        ...

    def exists(self, node_id: str) -> bool:
        """Whether the node is in the edited world, without parsing its file where possible."""
        ...

    def committed(self, node_id: str) -> NodeDict | None:
        """The node as the last event left it (no hand edits), or None."""
        ...

    def committed_path(self, node_id: str) -> str | None:
        """Where the last event left the node's file, or None."""
        ...

    def path(self, node: NodeDict) -> str:
        """Where ``node``'s file belongs."""
        ...

    def transient(self, lifecycles: Collection[str]) -> Mapping[str, str]:
        """Id -> lifecycle of committed nodes whose lifecycle is one of ``lifecycles``."""
        ...

    def incoming(self, ids: Collection[str]) -> list[tuple[str, str, str]]:
        """``(source, type, target)`` of relations in the edited world pointing into ``ids``."""
        ...

    def names_in_layer(self, layer: str) -> list[tuple[str, str]]:
        """``(normalised name or alias, id)`` of every node of ``layer`` in the edited world."""
        ...

    def ids_by_name(self, norms: Collection[str]) -> dict[str, set[str]]:
        """Normalised name -> ids of the nodes carrying it in the edited world (misses left out)."""
        ...

    def name_reach(self, first: str) -> int:
        """The length of the longest normalised name starting with character ``first`` (0: none).

        It bounds the spans of a text worth looking up; a longer answer only costs time.
        """
        ...

    def known_events(self, event_ids: Collection[str]) -> set[str]:
        """Those of ``event_ids`` (full ids) that are events of this world."""
        ...

    def recent_events(self, limit: int, *, changes: bool = True) -> list[dict[str, Any]]:
        """The last ``limit`` events of the story line, newest first, as JSON-ready dicts
        (``id``, ``content``, ``timestamp``; ``diffusions`` too unless ``changes`` is False,
        which spares reading the records: one may be a bulk event of megabytes)."""
        ...

    def lay(self, node_id: str, node: NodeDict | None) -> None:
        """Lay a hand edit over the world in memory (a replayed event's own edits)."""
        ...


@dataclass
class DictEdit:
    old: NodeDict | None
    new: NodeDict | None
    old_path: str | None
    new_path: str | None


class DictWorld:
    """A :class:`World` over plain dicts: for tests, and for programs that hold a world in memory.

    Every question is answered by scanning the dicts, which is right for the
    few dozen nodes of a test and wrong for a real world (the store indexes).
    """

    def __init__(self, nodes: Iterable[NodeDict] = (), *, edits: Mapping[str, NodeDict | None] | None = None,
                 events: Iterable[str] = (), recent: Iterable[dict[str, Any]] = (),
                 layout: Layout = "flat", name: str = "", language: str = "",
                 root: Path | None = None) -> None:
        self._layout: Layout = layout
        self._name, self._language, self._root = name, language, root or Path()
        self.nodes: dict[str, NodeDict] = {n["id"]: copy.deepcopy(n) for n in nodes}
        self._edits: dict[str, DictEdit] = {}
        for node_id, new in (edits or {}).items():
            self.lay(node_id, new)
        self.events = set(events)
        self.recent = list(recent)

    @property
    def layout(self) -> Layout:
        return self._layout

    @property
    def name(self) -> str:
        return self._name

    @property
    def language(self) -> str:
        return self._language

    @property
    def root(self) -> Path:
        return self._root

    @property
    def edits(self) -> Mapping[str, DictEdit]:
        return self._edits

    def get(self, node_id: str) -> NodeDict | None:
        if node_id in self._edits:
            return self._edits[node_id].new
        return self.nodes.get(node_id)

    def exists(self, node_id: str) -> bool:
        return self.get(node_id) is not None

    def committed(self, node_id: str) -> NodeDict | None:
        return self.nodes.get(node_id)

    def committed_path(self, node_id: str) -> str | None:
        node = self.nodes.get(node_id)
        return self.path(node) if node is not None else None

    def path(self, node: NodeDict) -> str:
        return node_path(node["id"], node["layer"], self.layout)

    def transient(self, lifecycles: Collection[str]) -> dict[str, str]:
        return {i: n["lifecycle"] for i, n in self.nodes.items() if n.get("lifecycle") in lifecycles
                and n.get("lifecycle") != "permanent"}

    def _edited(self) -> dict[str, NodeDict]:
        out = {i: n for i, n in self.nodes.items() if i not in self._edits}
        out.update({i: e.new for i, e in self._edits.items() if e.new is not None})
        return out

    def incoming(self, ids: Collection[str]) -> list[tuple[str, str, str]]:
        return sorted((src, rtype, dst) for src, node in self._edited().items()
                      for rtype, dst in edges_of(node) if dst in ids)

    def names_in_layer(self, layer: str) -> list[tuple[str, str]]:
        return sorted((norm, i) for i, n in self._edited().items() if n.get("layer") == layer
                      for norm in names_of(n))

    def ids_by_name(self, norms: Collection[str]) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for i, n in self._edited().items():
            for norm in names_of(n) & set(norms):
                out.setdefault(norm, set()).add(i)
        return out

    def name_reach(self, first: str) -> int:
        return max((len(norm) for n in self._edited().values() for norm in names_of(n)
                    if norm.startswith(first)), default=0)

    def known_events(self, event_ids: Collection[str]) -> set[str]:
        return {e for e in event_ids if e in self.events}

    def recent_events(self, limit: int, *, changes: bool = True) -> list[dict[str, Any]]:
        if changes:
            return self.recent[:limit]
        return [{k: v for k, v in e.items() if k != "diffusions"} for e in self.recent[:limit]]

    def lay(self, node_id: str, node: NodeDict | None) -> None:
        old = self.nodes.get(node_id)
        self._edits[node_id] = DictEdit(
            old, copy.deepcopy(node), self.path(old) if old is not None else None,
            self.path(node) if node is not None else None)
