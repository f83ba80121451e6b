"""World files stay inside the world: no read or write of world content goes through a link.

A world can come from anyone (``narr clone``, a shared folder). git stores a symbolic link as
a link, so a stranger can commit ``world/ambient`` as a link to a folder elsewhere: every
node narr then wrote into that layer (``narr new``, a reset, an import) would land outside
the world, and every read would come from there. So each path narr reads or writes under the
world root is resolved one part at a time without following a link (``lstat``), and a link
on the way is refused with one message naming it. :func:`links` lists them for ``narr
check``, ``status`` and ``clone``.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from narrative.errors import InvalidWorldError

if TYPE_CHECKING:
    from narrative.store.worldrepo import WorldRepo

HINT = ("replace the link by a real folder or file (or remove it); narr never reads or "
        "writes world files through a symbolic link; nothing was changed")


def link_on_the_way(root: Path, relpath: str, checked: set[str] | None = None) -> str | None:
    """The first part of ``relpath`` (itself included) that is a symbolic link, or None.

    ``checked`` holds folders already found to be no link, so a thousand files in one
    layer cost one ``lstat`` each, not four.
    """
    parts = relpath.split("/")
    for i in range(1, len(parts) + 1):
        rel = "/".join(parts[:i])
        is_dir = i < len(parts)
        if is_dir and checked is not None and rel in checked:
            continue
        try:
            mode = os.lstat(root / rel).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return None  # nothing there: whatever is made there is made inside the world
        if stat.S_ISLNK(mode):
            return rel
        if is_dir and checked is not None:
            checked.add(rel)
    return None


def _target(root: Path, rel: str) -> str:
    try:
        return os.readlink(root / rel)
    except OSError:
        return "?"


def link_error(root: Path, rel: str) -> InvalidWorldError:
    return InvalidWorldError(f"{rel}: is a symbolic link (to {_target(root, rel)}); narr "
                             "reads and writes world files only inside the world", hint=HINT)


def inside(root: Path, relpath: str, checked: set[str] | None = None) -> Path:
    """``root/relpath``, refused (naming the link) when a part of the way is a symbolic link."""
    link = link_on_the_way(root, relpath, checked)
    if link is not None:
        raise link_error(root, link)
    return root / relpath


def refuse_links(root: Path, relpaths: Iterable[str]) -> None:
    """Refuse, before anything is written, when any of ``relpaths`` runs through a link."""
    checked: set[str] = set()
    for rel in relpaths:
        inside(root, rel, checked)


# What narr reads or writes at the top of a world: its settings, its rules, its layers.
_TOP = ("narr.toml", "rules", "world", ".gitattributes")


def links(root: Path, layers: Iterable[str], *, shards: bool = False) -> list[str]:
    """Every symbolic link where narr reads or writes world content, each named with its target.

    The settings, ``rules/`` and its files, ``world/``, each layer folder and (``shards``, a
    sharded world) each shard folder: a handful of ``lstat`` calls, and one listing per
    layer in a sharded world, so ``narr status`` can afford it. Node files that are links
    are found by the working-tree scan.
    """
    found: list[str] = []
    top = str(root)

    def is_link(rel: str) -> bool:
        try:
            return stat.S_ISLNK(os.lstat(f"{top}/{rel}").st_mode)  # strings: pathlib costs more
        except OSError:
            return False

    for rel in _TOP:
        if is_link(rel):
            found.append(rel)
    if "rules" not in found and (root / "rules").is_dir():
        with os.scandir(root / "rules") as entries:
            found.extend(f"rules/{e.name}" for e in entries if e.is_symlink())
    if "world" not in found:
        for layer in layers:
            rel = f"world/{layer}"
            if is_link(rel):
                found.append(rel)
            elif shards and (root / rel).is_dir():
                with os.scandir(root / rel) as entries:
                    found.extend(f"{rel}/{e.name}" for e in entries
                                 if e.is_symlink() and not e.name.endswith(".json"))
    return [f"{rel}: is a symbolic link (to {_target(root, rel)}); narr reads and writes "
            "world files only inside the world" for rel in sorted(found)]


def hazards(wr: WorldRepo, *, full: bool = False, shards: bool = True) -> list[str]:
    """What in a world (one cloned from anyone) would take narr's reads or writes out of it or
    change the bytes of its files: links on the way to world files, and git attributes that
    re-encode them (:mod:`narrative.store.attributes`). ``full`` (``narr check``) reads every
    attribute file of the tree, not only the top ones; ``shards`` False leaves out a sharded
    world's shard folders (a listing per layer), which a write refuses anyway."""
    from narrative.ids import LAYERS
    from narrative.store.attributes import encoding_problems

    return [*links(wr.root, LAYERS, shards=shards and wr.config.layout == "sharded"),
            *encoding_problems(wr, full=full)]


def committed_links(wr: WorldRepo, tree_id: str | None) -> list[str]:
    """Every symbolic link a commit's tree holds under ``world/``, ``rules/`` or as a settings
    file, named: git checks each out as a link, so ``narr check`` names them, the node files
    among them too (a link to ``/etc/passwd`` is no node)."""
    from narrative.store.libgit import pygit2

    if tree_id is None:
        return []
    link = pygit2.enums.FileMode.LINK
    found: list[str] = []
    stack: list[tuple[str, pygit2.Tree]] = [("", wr.repo[tree_id])]  # type: ignore[list-item]
    while stack:
        prefix, tree = stack.pop()
        for entry in tree:
            path = f"{prefix}{entry.name}"
            if not prefix and path not in ("world", "rules", *_TOP):
                continue
            if entry.filemode == link:
                found.append(path)
            elif isinstance(entry, pygit2.Tree):
                stack.append((f"{path}/", entry))
    return [f"{path}: is committed as a symbolic link; narr reads and writes world files "
            "only inside the world" for path in sorted(found)]
