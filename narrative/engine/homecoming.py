"""A book or a card narr exported, read back after SillyTavern: its changes as hand edits.

:mod:`narrative.lore.homecoming` says what SillyTavern changed in each node narr exported,
relative to the node as exported. Here those edits meet the world as it stands now:

- a node the world still has takes each edit as a hand edit of the import's event (recorded
  under ``edits``, as any edit made by hand is): only when the field is still what narr
  exported; a field changed in narr since the export keeps narr's value, and the import says
  so (SillyTavern's is still in the file). Nothing else of the record is taken: the world is
  newer than the export;
- a node the world no longer has (or never had: another world, a new one) is made from the
  record with the edits in it.

A name SillyTavern wrote where narr wrote a node's id as its name (``Now: location: Old
Ferry Landing.``) is that node's id again when exactly one node carries the name.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from narrative import fields
from narrative.engine.naming import Names
from narrative.ids import normalize_name
from narrative.lore.entry import Edit, Entry
from narrative.model import Change


@dataclass
class Homecoming:
    """The changes of the entries whose nodes the world has, and what the import says of them."""

    changes: list[Change] = field(default_factory=list)
    existing: list[dict[str, Any]] = field(default_factory=list)  # as ImportResult.existing
    entries: list[dict[str, Any]] = field(default_factory=list)  # as ImportResult.entries


def _id_for(names: Names, words: str, nodes: dict[str, Any]) -> str | None:
    norm = normalize_name(words)
    ids = set(names.view.ids_by_name([norm]).get(norm, set())) if norm else set()
    ids |= {i for i, n in nodes.items() if norm in {normalize_name(x) for x in [n.name, *n.aliases]}}
    return next(iter(ids)) if len(ids) == 1 else None


def _value(edit: Edit, names: Names, made: dict[str, Any]) -> Any:
    if edit.by_name and isinstance(edit.new, str):
        return _id_for(names, edit.new, made) or edit.new
    return edit.new


def take_home(names: Names, entries: list[Entry]) -> tuple[list[Entry], Homecoming]:
    """The entries still to import, and the homecoming of those narr exported whose nodes the
    world has (module docstring). An entry whose node is not in the world is made as edited."""
    home = Homecoming()
    rest: list[Entry] = []
    made = {e.ref: e for e in entries if e.ref}
    wanted = [e.ref for e in entries if e.homecoming and e.ref]
    there = names.view.get_many(wanted) if wanted else {}
    for entry in entries:
        node = there.get(entry.ref or "") if entry.homecoming else None
        if node is not None and node.get("layer") != entry.layer:
            node = None  # another node of that id (another world's export): not this one's home
        if node is None:
            if entry.homecoming:
                _apply(entry, names, made)
            rest.append(entry)
            continue
        current = json.loads(json.dumps(node))
        added: list[str] = []
        notes: list[str] = []
        for edit in entry.edits:
            new = _value(edit, names, made)
            now = fields.get(current, edit.field)
            if fields.same(now, new):
                continue
            if not fields.same(now, edit.old):
                notes.append(f"{edit.what}: changed in narr too since the export, so narr's "
                             f"{fields.show(now)} is kept (SillyTavern has {fields.show(new)})")
                continue
            change = fields.make_change(str(node["id"]), edit.field, now, new)
            home.changes.append(change)
            if new is fields.ABSENT:
                fields.drop(current, edit.field)
            else:
                fields.put(current, edit.field, copy.deepcopy(new))
            added.append(f"{edit.field} ({edit.what})")
        home.existing.append({"name": entry.name, "source": entry.source, "id": node["id"],
                              "how": "narr's own export", "added": added,
                              "notes": [*notes, *entry.edit_notes]})
        home.entries.append({"source": entry.source, "title": entry.title, "name": entry.name,
                             "named_by": entry.named_by, "node": node["id"], "section": None})
    return rest, home


def _apply(entry: Entry, names: Names, made: dict[str, Any]) -> None:
    """A node the world does not have: made from its record as SillyTavern left it."""
    if not entry.edits:
        return
    node: dict[str, Any] = {"summary": entry.summary, "sections": dict(entry.sections),
                            "traits": dict(entry.traits), "state": dict(entry.state),
                            "aliases": list(entry.aliases), "tags": list(entry.tags),
                            "always_in_view": entry.always_in_view,
                            "extensions": copy.deepcopy(entry.extensions)}
    for edit in entry.edits:
        new = _value(edit, names, made)
        if new is fields.ABSENT:
            fields.drop(node, edit.field)
        elif fields.split(edit.field)[0] in node:
            fields.put(node, edit.field, copy.deepcopy(new))
    entry.summary, entry.sections = node["summary"], node["sections"]
    entry.traits, entry.state = node["traits"], node["state"]
    entry.aliases, entry.tags = node["aliases"], node["tags"]
    entry.always_in_view = node["always_in_view"] is True
    entry.extensions = node["extensions"]
