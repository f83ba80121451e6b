"""``narr export vault DIR``: the world as an Obsidian vault, one note per node.

Each node is a note (:func:`narrative.lore.vaultnote.render_note`): flat properties in the
front matter, ``narr-id`` first; its summary and sections in the body, as Markdown; its
relations as ``[[links]]`` in a ``## Relations`` section, so that Obsidian's graph and
backlinks show the world; what properties cannot hold in a ``narr`` block at the end. A node
an import brought from a vault goes back to the path it came from (two notes of one file name
in different folders stay so, and links to them carry the folder); the others go to
``Characters/``, ``Items/``, ``Ambient/`` and ``Background/`` under their names (the
characters a file name cannot hold as ``-``; a path two nodes would share gets the node's id
too). ``narr import DIR`` reads the vault back with no change. The folder must be new or
empty, or hold a vault this command wrote before: a note changed there since is never
overwritten, and the folder is replaced whole, never left half written. The folder is never
inside the world (``world/``, ``.git/``, ``rules/``) nor reached through a symbolic link
(:mod:`narrative.store.outfiles`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from narrative.engine.lorebook import world_at
from narrative.lore.vaultnote import default_paths, render_note, safe_stem
from narrative.nodefile import NodeDict
from narrative.store import WorldRepo, export_places, export_target, write_folder


@dataclass
class VaultExport:
    folder: str
    at: dict[str, Any] | None
    notes: dict[str, str]  # node id -> the note's path in the vault
    removed: list[str] = field(default_factory=list)  # notes of the last export no node has now

    def to_json(self) -> dict[str, Any]:
        return {"folder": self.folder, "at": self.at,
                "notes": [{"id": node, "path": path} for node, path in sorted(self.notes.items())],
                "removed": self.removed}


def _own_path(node: NodeDict) -> PurePosixPath | None:
    """The path a vault import found the node's note at, when a vault can hold it again."""
    came = ((node.get("extensions") or {}).get("obsidian") or {}).get("path")
    if not isinstance(came, str) or not came.lower().endswith(".md"):
        return None
    p = PurePosixPath(came)
    if p.is_absolute() or any(part in ("", ".", "..") or part.startswith(".") for part in p.parts):
        return None
    if any(safe_stem(part) != part for part in (*p.parts[:-1], p.stem)):
        return None  # a character a link cannot hold
    return p


def note_paths(nodes: dict[str, NodeDict]) -> dict[str, str]:
    """Node id -> a vault path, one note per path (case aside, as a disk may ignore it)."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for node_id in sorted(nodes):
        node = nodes[node_id]
        path = _own_path(node)
        if path is None or path.as_posix().casefold() in taken:
            first, second = default_paths(str(node.get("name", "")), str(node.get("layer")), node_id)
            path = PurePosixPath(first if first.casefold() not in taken else second)
        taken.add(path.as_posix().casefold())
        out[node_id] = path.as_posix()
    return out


def link_targets(paths: dict[str, str]) -> dict[str, str]:
    """Node id -> what a ``[[link]]`` to its note says: its file name, or its path (without
    ``.md``) where another note has the same file name, as Obsidian writes such links."""
    stems: dict[str, int] = {}
    for path in paths.values():
        stem = PurePosixPath(path).stem.casefold()
        stems[stem] = stems.get(stem, 0) + 1
    out = {}
    for node_id, path in paths.items():
        p = PurePosixPath(path)
        out[node_id] = p.stem if stems[p.stem.casefold()] == 1 else p.with_suffix("").as_posix()
    return out


def vault_files(nodes: dict[str, NodeDict]) -> tuple[dict[str, str], dict[str, bytes]]:
    """``(node id -> path, path -> note bytes)`` of the world's vault."""
    paths = note_paths(nodes)
    link_of = link_targets(paths)
    files = {}
    for node_id, path in paths.items():
        text = render_note(dict(nodes[node_id]), path=path, link_of=link_of)
        files[path] = text.encode("utf-8")
    return paths, files


@dataclass
class VaultNotes:
    """The vault of the world (now, or as committed at ``at``), not written anywhere: what a
    program with no folder on this machine is given (``export_vault``'s row)."""

    at: dict[str, Any] | None
    paths: dict[str, str]  # node id -> the note's path in the vault
    files: dict[str, bytes]  # path -> the note


def vault_notes(wr: WorldRepo, at: str | None = None) -> VaultNotes:
    world = world_at(wr, at)
    paths, files = vault_files(world.nodes)
    return VaultNotes(world.at, paths, files)


def export_vault(wr: WorldRepo, folder: str | Path, at: str | None = None, *,
                 base: str | Path | None = None) -> VaultExport:
    """Write the world (now, or as committed at ``at``) as a vault into ``folder`` (relative to
    ``base``, by default the command's directory)."""
    where = export_target(folder, export_places(wr), base=base, folder=True)
    made = vault_notes(wr, at)
    removed = write_folder(where, made.files, {"world": wr.config.name, "at": made.at},
                           suffixes=(".md",))
    return VaultExport(str(where), made.at, made.paths, removed)
