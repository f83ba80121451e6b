"""The catalog: a derived index of the committed world and its history, so no operation re-reads
ten thousand nodes or a thousand records.

It answers what the engine needs without scanning. By duty, one module each:

- :mod:`.nodes`: which nodes are transient, which relations and reference fields point at a
  node, which node carries a name (``catalog.incoming(...)``, ``catalog.references_to(...)``,
  ``catalog.names_in_layer(...)``...);
- :mod:`.events`: which commit holds an event id, what a listing shows of a commit, and
  the story line ``narr check`` last verified (``catalog.remember_event(...)``,
  ``catalog.summaries(...)``, ``catalog.verified()``);
- :mod:`.story`: the event graph the query commands read, ``why``, ``history``, ``brief``,
  with the nodes each commit ended and the story time in force (``catalog.graph``);
- :mod:`.chapters`: the chapters of a story line and where each event stands in its chapter
  (``catalog.chapters``);
- :mod:`.search`: full-text search (``catalog.text``);
- :mod:`.completion`: the names a shell completes (``catalog.completion``).

The last four are loaded when first used, so an event, a reset or a status, which never
read them, never import them. It is a cache: deleting it loses nothing, it is rebuilt from
the history. Every query returns named rows (``NamedTuple``), never bare tuples, and every
change is one transaction, :meth:`~.connection.Connection.atomic`.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from narrative.store.catalog.connection import SCHEMA_VERSION
from narrative.store.catalog.events import EventIndex, EventRef, Verified
from narrative.store.catalog.nodes import (
    Edge,
    NameRow,
    NodeId,
    NodeIndex,
    NodeRow,
    Reference,
    searchable_text,
)

if TYPE_CHECKING:
    from narrative.store.catalog.chapters import ChapterIndex
    from narrative.store.catalog.completion import CompletionIndex
    from narrative.store.catalog.search import TextIndex
    from narrative.store.catalog.story import StoryIndex

__all__ = ["SCHEMA_VERSION", "Catalog", "Edge", "EventRef", "NameRow", "NodeId", "NodeRow",
           "Reference", "Verified", "searchable_text"]


class Catalog(NodeIndex, EventIndex):
    """One world's catalog (``.git/narr/catalog.sqlite``), opened on first use."""

    @cached_property
    def graph(self) -> StoryIndex:
        """The event graph: chains, the changes each event recorded, causes."""
        from narrative.store.catalog.story import StoryIndex

        return StoryIndex(self)

    @cached_property
    def chapters(self) -> ChapterIndex:
        """The chapters of the story lines and the events told in them."""
        from narrative.store.catalog.chapters import ChapterIndex

        return ChapterIndex(self)

    @cached_property
    def text(self) -> TextIndex:
        """Full-text search over nodes and events."""
        from narrative.store.catalog.search import TextIndex

        return TextIndex(self)

    @cached_property
    def completion(self) -> CompletionIndex:
        from narrative.store.catalog.completion import CompletionIndex

        return CompletionIndex(self)
