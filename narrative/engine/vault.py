"""``narr export vault DIR``: the world as an Obsidian vault, one note per node.

Each node is a note (:func:`narrative.lore.obsidian.render_note`): its fields in the front
matter, ``narr-id`` first, relations as ``[[links]]`` to the other notes, its summary and
sections in the body where Markdown keeps them as they are. A node an import brought from a
vault goes back to the path it came from; the others go to ``Characters/``, ``Items/``,
``Ambient/`` and ``Background/`` under their names (the characters a file name cannot hold as
``-``; a name two nodes would share in one vault gets the node's id too). ``narr import DIR``
reads the vault back with no change. The folder must be new or empty, or hold a vault this
command wrote before: a note changed there since is never overwritten, and the folder is
replaced whole, never left half written. The folder is never inside the world (``world/``,
``.git/``, ``rules/``) nor reached through a symbolic link (:mod:`narrative.store.outfiles`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from narrative.engine.lorebook import world_at
from narrative.lore.codexmd import LAYER_TITLES
from narrative.lore.obsidian import render_note, safe_stem
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


def note_paths(nodes: dict[str, NodeDict]) -> dict[str, str]:
    """Node id -> a vault path, unique by file stem (what ``[[links]]`` name a note by)."""
    out: dict[str, str] = {}
    stems: set[str] = set()
    for node_id in sorted(nodes):
        node = nodes[node_id]
        came = ((node.get("extensions") or {}).get("obsidian") or {}).get("path")
        path = None
        if isinstance(came, str) and came.lower().endswith(".md"):
            p = PurePosixPath(came)
            if not p.is_absolute() and all(part not in ("", ".", "..") and not part.startswith(".")
                                           for part in p.parts) and safe_stem(p.stem) == p.stem:
                path = p
        if path is None or path.stem.casefold() in stems:
            stem = safe_stem(str(node.get("name", ""))) or node_id
            if stem.casefold() in stems:
                stem = f"{stem} ({node_id})"
            path = PurePosixPath(LAYER_TITLES.get(str(node.get("layer")), "Background")) / f"{stem}.md"
        stems.add(path.stem.casefold())
        out[node_id] = path.as_posix()
    return out


def vault_files(nodes: dict[str, NodeDict]) -> tuple[dict[str, str], dict[str, bytes]]:
    """``(node id -> path, path -> note bytes)`` of the world's vault."""
    paths = note_paths(nodes)
    link_of = {node_id: PurePosixPath(path).stem for node_id, path in paths.items()}
    files = {}
    for node_id, path in paths.items():
        text = render_note(dict(nodes[node_id]), stem=link_of[node_id], link_of=link_of)
        files[path] = text.encode("utf-8")
    return paths, files


def export_vault(wr: WorldRepo, folder: str | Path, at: str | None = None, *,
                 base: str | Path | None = None) -> VaultExport:
    """Write the world (now, or as committed at ``at``) as a vault into ``folder`` (relative to
    ``base``, by default the command's directory)."""
    where = export_target(folder, export_places(wr), base=base, folder=True)
    world = world_at(wr, at)
    paths, files = vault_files(world.nodes)
    removed = write_folder(where, files, {"world": wr.config.name, "at": world.at},
                           suffixes=(".md",))
    return VaultExport(str(where), world.at, paths, removed)
