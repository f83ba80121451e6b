"""What a shell's completion asks of the catalog: the nodes whose id or name starts with a prefix.

Two indexed range queries (ids, normalised names and aliases), so a TAB costs the
same in a world of ten nodes or a hundred thousand (:mod:`narrative.store.completion`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from narrative import safejson

if TYPE_CHECKING:
    from narrative.store.catalog.connection import Connection


class NameEntry(NamedTuple):
    """A node's id, layer, name and aliases, as written."""

    id: str
    layer: str
    name: str
    aliases: list[str]


class CompletionIndex:
    """The completion's queries, on the catalog's connection (``catalog.completion``)."""

    def __init__(self, catalog: Connection) -> None:
        self._c = catalog

    def name_rows(self, prefix: str = "", limit: int = -1) -> list[NameEntry]:
        """The nodes whose id or normalised name or alias starts with ``prefix`` (normalised),
        by id."""
        if prefix:
            hi = prefix[:-1] + chr(min(ord(prefix[-1]) + 1, 0x10FFFF))
            rows = self._c.db.execute(
                "SELECT id, layer, name, aliases FROM nodes WHERE id IN ("
                "SELECT id FROM nodes WHERE id >= ?1 AND id < ?2 "
                "UNION SELECT id FROM names WHERE norm >= ?1 AND norm < ?2) ORDER BY id LIMIT ?3",
                (prefix, hi, limit))
        else:
            rows = self._c.db.execute(
                "SELECT id, layer, name, aliases FROM nodes ORDER BY id LIMIT ?", (limit,))
        out = []
        for node_id, layer, name, aliases in rows:
            try:
                listed = safejson.loads(aliases)
            except ValueError:
                listed = []
            out.append(NameEntry(node_id, layer, name, [a for a in listed if isinstance(a, str)]
                                 if isinstance(listed, list) else []))
        return out
