"""The catalog: a derived index of the committed world and its history, so no operation re-reads
ten thousand nodes or a thousand records.

It answers what the engine needs without scanning: which nodes are transient, which
relations point at a node, which node carries a name (:mod:`.nodes`); which commit holds
an event id and what a listing shows of it (:mod:`.events`); the event graph the query
commands read, ``why``, ``history``, ``brief`` (:mod:`.story`); full-text search
(:mod:`.search`); the names a shell completes (:mod:`.completion`). It is a cache:
deleting it loses nothing, it is rebuilt from the history.

Every method returns named rows (a ``NamedTuple`` or a frozen dataclass), never bare
tuples, and every change is one transaction, :meth:`~.connection.Connection.atomic`.
"""

from __future__ import annotations

from narrative.store.catalog.completion import CompletionIndex, NameEntry
from narrative.store.catalog.connection import SCHEMA_VERSION
from narrative.store.catalog.events import EventIndex, EventRef
from narrative.store.catalog.nodes import Edge, NameRow, NodeId, NodeIndex, NodeRow
from narrative.store.catalog.search import Hit, TextIndex, searchable_text
from narrative.store.catalog.story import (
    AncestryEdge,
    CausalEdge,
    EventInfo,
    LastWrite,
    Write,
)

__all__ = ["SCHEMA_VERSION", "AncestryEdge", "Catalog", "CausalEdge", "Edge", "EventInfo",
           "EventRef", "Hit", "LastWrite", "NameEntry", "NameRow", "NodeId", "NodeRow", "Write",
           "searchable_text"]


class Catalog(NodeIndex, EventIndex, TextIndex, CompletionIndex):
    """One world's catalog (``.git/narr/catalog.sqlite``), opened on first use."""


