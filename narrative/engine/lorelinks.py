"""The ``[[links]]`` of an import's notes, resolved as Obsidian resolves them, to its notes and the world's.

Every note of the import, and every node an earlier vault import made (its
``extensions.obsidian.path``), is a note of one vault for the links
(:class:`narrative.lore.wikilinks.NoteIndex`): ``[[Places/Mercy]]`` is the note at that path,
``[[Mercy]]`` the note of that file name (the one beside the linking note when several have
it, as Obsidian picks; the import warns which it took). A link to a note of the import becomes
``[[its path]]``; to a node of the world, that node's id behind :data:`WORLD`; any other stays
as written, for the import to look up by name (a node of that exact name or alias, when just
one has it) or to list as a link to a note that is not there. A note's link to itself is no
relation, and is said so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from narrative.ids import LAYERS, normalize_name
from narrative.lore.entry import Entry
from narrative.lore.wikilinks import NoteIndex, target_of
from narrative.store import WorldView

WORLD: Final = "\x00"  # before a node id the link resolved to: no name starts with it


@dataclass
class Links:
    """What resolving found: warnings (ambiguous links, links to the note itself)."""

    warnings: list[str] = field(default_factory=list)


@dataclass
class WorldNotes:
    """The nodes an earlier vault import made: by note path (no ``.md``) and by the ids their
    notes gave themselves (``id:7``), with each node's layer."""

    paths: dict[str, str] = field(default_factory=dict)
    ids: dict[str, str] = field(default_factory=dict)
    layers: dict[str, str] = field(default_factory=dict)


def world_notes(view: WorldView) -> WorldNotes:
    """The world's notes (the world as edited): one read of every node, so only for a vault."""
    ids = sorted({node_id for layer in LAYERS for _, node_id in view.names_in_layer(layer)})
    out = WorldNotes()
    for node_id, node in view.get_many(ids).items():
        obsidian = (node.get("extensions") or {}).get("obsidian") or {}
        path = obsidian.get("path")
        if not isinstance(path, str) or not path:
            continue
        out.paths.setdefault(target_of(path), node_id)
        out.layers[node_id] = str(node.get("layer", ""))
        props = obsidian.get("properties") or {}
        for key in ("id", "uid"):
            value = props.get(key) if isinstance(props, dict) else None
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value).strip():
                out.ids.setdefault(f"{key}:{str(value).strip()}", node_id)
    return out


def same_notes(entries: list[Entry], world: WorldNotes) -> dict[int, str]:
    """Entry index -> the world's node of the same note (its path, else an id it gives itself):
    the source says they are one, whatever their names."""
    by_path = {normalize_name(p): i for p, i in world.paths.items()}
    out: dict[int, str] = {}
    taken: set[str] = set()
    for k, entry in enumerate(entries):
        if not entry.note_path or entry.exact:
            continue
        node_id = by_path.get(normalize_name(entry.note_path))
        if node_id is None:
            node_id = next((world.ids[s] for s in entry.source_ids if s in world.ids), None)
        if node_id is not None and node_id not in taken:
            taken.add(node_id)
            out[k] = node_id
    return out


def resolve(entries: list[Entry], world: dict[str, str]) -> Links:
    """Rewrite the link targets of ``entries`` in place (module docstring)."""
    links = Links()
    mine = {normalize_name(e.note_path) for e in entries if e.note_path}
    theirs = {normalize_name(p): i for p, i in world.items() if normalize_name(p) not in mine}
    index = NoteIndex([*(e.note_path for e in entries if e.note_path),
                       *(p for p in world if normalize_name(p) in theirs)])

    def where(entry: Entry, target: str, written: str) -> str | None:
        """The target to import ``target`` by (None: the note itself)."""
        source = entry.note_path or entry.source
        found = index.resolve(target, source)
        if found.path is None:
            return f"[[{target}]]"
        if found.others:
            links.warnings.append(
                f"{entry.source}: {written} may mean {', '.join([found.path, *found.others])}: taken "
                f"as {found.path}, the note Obsidian takes; a link with the folder says which")
        if entry.note_path and normalize_name(found.path) == normalize_name(entry.note_path):
            links.warnings.append(f"{entry.source}: {written} links the note to itself; no relation")
            return None
        key = normalize_name(found.path)
        return WORLD + theirs[key] if key in theirs else f"[[{found.path}]]"

    for entry in entries:
        if entry.mentions:
            kept = []
            for target, written in entry.mentions:
                got = where(entry, target, written)
                if got is not None:
                    kept.append((got, written))
            entry.mentions = kept
        if any(_is_link(t) for _, t, _ in entry.relations):
            relations = []
            for rtype, target, attrs in entry.relations:
                if _is_link(target):
                    got = where(entry, target[2:-2], target)
                    if got is None:
                        continue
                    target = got
                relations.append((rtype, target, attrs))
            entry.relations = relations
        if entry.value_links:
            entry.value_links = [(f, k, got) for f, k, t in entry.value_links
                                 if (got := where(entry, t, f"[[{t}]]")) is not None]
    return links


def _is_link(target: str) -> bool:
    return target.startswith("[[") and target.endswith("]]")
