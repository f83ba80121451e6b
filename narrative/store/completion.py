"""What a shell's completion offers: node names, branches, read fast and never failing.

A completion runs at every press of TAB, so it asks the derived catalog for the nodes
whose id, name or alias starts with what was typed, by indexed range queries, and lists
the node files under ``world/`` by name only: a file the catalog does not know (made
with ``narr new`` or by hand since the last event) is read on its own, at most
:data:`MAX_UNCOMMITTED` of them, and a node whose file is gone is left out. The
catalog is read as it is, never brought up to date here: that would take its write
lock, and a TAB must not wait for an event. narr keeps it at HEAD with every event, so
it lags only after plain git moved HEAD; a committed node renamed by hand is offered by
its new name once an event records the edit. When the catalog was never built it is not built
at a keypress: the files are read as new ones are.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Final, Protocol

from narrative import safejson
from narrative.ids import LAYERS, NODE_SUFFIX, WORLD_DIR, id_problem, node_path
from narrative.store.confine import link_on_the_way

if TYPE_CHECKING:
    from narrative.config import WorldConfig
    from narrative.store.catalog import Catalog
    from narrative.store.worldrepo import WorldRepo

MAX_UNCOMMITTED: Final = 200
MAX_FILE_BYTES: Final = 1 << 20


class NodeSource(Protocol):
    """What node completion reads of a world (a :class:`~narrative.store.worldrepo.WorldRepo`,
    or the :class:`Files` found without git)."""

    root: Path

    @property
    def config(self) -> WorldConfig: ...

    @property
    def catalog(self) -> Catalog: ...


@dataclass
class Files:
    """A world as its files and its catalog, found without opening the repository.

    Completing a node name reads only the catalog and ``world/``; libgit2 would cost a TAB
    more than the whole answer. Found as git finds a repository (a ``.git`` folder, or a
    ``.git`` file naming one); anything less plain is left to the repository itself.
    """

    root: Path
    git_dir: Path

    @cached_property
    def config(self) -> WorldConfig:
        from narrative.store.worldrepo import load_config

        return load_config(self.root)

    @cached_property
    def catalog(self) -> Catalog:
        from narrative.store.catalog import Catalog

        return Catalog(self.git_dir / "narr" / "catalog.sqlite")

    def close(self) -> None:
        if "catalog" in self.__dict__:
            self.catalog.close()

    @classmethod
    def find(cls, start: str | os.PathLike[str]) -> Files | None:
        """The world holding ``start``, or None where only git can say (``GIT_DIR`` set, a
        bare or odd repository, a world narr could not keep its catalog in); its settings
        read (a broken ``narr.toml`` raises, as opening the world would)."""
        if any(k in os.environ for k in ("GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR")):
            return None
        directory = os.path.abspath(start)
        while not os.path.lexists(os.path.join(directory, ".git")):
            parent = os.path.dirname(directory)
            if parent == directory:
                return None
            directory = parent
        dot_git = os.path.join(directory, ".git")
        if os.path.isdir(dot_git) and not os.path.islink(dot_git):
            git_dir = dot_git
        else:
            try:
                with open(dot_git, encoding="utf-8") as fh:
                    text = fh.read(4096).strip()
            except OSError:
                return None
            if not text.startswith("gitdir:"):
                return None
            git_dir = os.path.normpath(os.path.join(directory, text[len("gitdir:"):].strip()))
        narr = os.path.join(git_dir, "narr")
        if not os.path.isfile(os.path.join(directory, "narr.toml")) \
                or not os.path.isfile(os.path.join(git_dir, "HEAD")) \
                or not os.access(narr if os.path.isdir(narr) else git_dir, os.W_OK):
            return None  # not a world, or one whose catalog a reader copies (read-only)
        files = cls(Path(directory), Path(git_dir))
        files.config  # noqa: B018 (a world whose narr.toml is broken is refused, as on opening)
        return files


@dataclass(frozen=True)
class NodeNames:
    id: str
    layer: str
    name: str = ""
    aliases: list[str] = field(default_factory=list)


def node_files(wr: NodeSource) -> dict[str, tuple[str, str]]:
    """Id -> (layer, absolute path) of every node file in the working tree, by its name alone."""
    out: dict[str, tuple[str, str]] = {}
    base = os.path.join(wr.root, WORLD_DIR)
    for layer in LAYERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(base, layer)):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in filenames:
                if name.endswith(NODE_SUFFIX):
                    node_id = name[: -len(NODE_SUFFIX)]
                    if id_problem(node_id) is None:
                        out.setdefault(node_id, (layer, os.path.join(dirpath, name)))
    return out


def _read_names(node_id: str, layer: str, path: str) -> NodeNames:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return NodeNames(node_id, layer)
        with open(path, encoding="utf-8") as fh:
            data = safejson.loads(fh.read())
    except (OSError, ValueError):
        return NodeNames(node_id, layer)
    if not isinstance(data, dict):
        return NodeNames(node_id, layer)
    name = data.get("name")
    aliases = data.get("aliases")
    return NodeNames(node_id, layer, name if isinstance(name, str) else "",
                     [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else [])


def node_names(wr: NodeSource, prefix: str = "", limit: int = 200) -> list[NodeNames]:
    """The nodes of the working tree whose id, or name or alias as the catalog (or a new
    file) has it, may start with ``prefix`` (normalised as names are), sorted by id; the
    caller picks the exact word. The catalog answers at most ``limit`` of them."""
    files = node_files(wr)
    catalog = wr.catalog
    known: dict[str, NodeNames] = {}
    committed: set[str] = set()
    if catalog.tree() is not None:
        known = {row.id: NodeNames(row.id, row.layer, row.name, row.aliases)
                 for row in catalog.completion.name_rows(prefix, limit)}
        committed = {row.id for row in catalog.ids()}
    out = [node for node_id, node in known.items() if node_id in files]
    new = sorted(node_id for node_id in files if node_id not in committed)
    for node_id in new[:MAX_UNCOMMITTED]:
        out.append(_read_names(node_id, *files[node_id]))
    out.extend(NodeNames(node_id, files[node_id][0]) for node_id in new[MAX_UNCOMMITTED:])
    return sorted(out, key=lambda node: node.id)


def branch_names(wr: WorldRepo) -> list[str]:
    return sorted(wr.repo.branches.local)


def chain_labels(wr: WorldRepo) -> list[tuple[int, str]]:
    """``(number, readable name)`` of every abandoned chain, as ``narr chains`` names them."""
    from narrative.store import history, refs

    tips = {n: tip for n in refs.abandoned_refs(wr) if (tip := history.peel_commit(wr, n)) is not None}
    numbers = refs.chain_numbers(list(tips))
    return sorted((numbers[name], refs.chain_label(name, tip)) for name, tip in tips.items())


def node_document(wr: NodeSource, node_id: str) -> dict[str, object]:
    """The node file of ``node_id`` in the working tree as JSON, or ``{}`` (gone, unreadable)."""
    for layer in LAYERS:
        rel = node_path(node_id, layer, wr.config.layout)
        if link_on_the_way(wr.root, rel) is not None:
            continue  # never read through a link out of the world
        path = wr.root / rel
        try:
            if path.stat().st_size > MAX_FILE_BYTES:
                return {}
            data = safejson.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        return data if isinstance(data, dict) else {}
    return {}
