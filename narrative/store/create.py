"""Making a world's repository: its first files, the index, and the genesis commit.

``narr init`` decides what a world starts with (settings, seed nodes, rules); this
module writes it and seals the genesis through the same seal as every event
(:func:`narrative.store.commit.seal_genesis`). Either the world is made whole or
nothing is left: a new directory is removed again, an empty one emptied, and a
repository made a world in place loses only what was added to it.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path

from narrative.config import CONFIG_FILE, WorldConfig
from narrative.errors import InvalidInputError
from narrative.ids import LAYERS, WORLD_DIR, node_path
from narrative.model import EventRecord
from narrative.nodefile import NodeDict, dump
from narrative.store.libgit import pygit2
from narrative.store.worldrepo import WorldRepo, init_repository, open_repository


def new_world(root: Path, config: WorldConfig, genesis: EventRecord, *, gitignore: str,
              nodes: Sequence[NodeDict] = (), copies: Sequence[tuple[Path, str]] = (),
              when: datetime | None = None) -> str:
    """A new repository at ``root`` (missing or empty) holding the world; its genesis commit.

    ``copies`` are ``(source, path in the world)``: files or whole directories copied in
    as they are (rules, a sample world's extras).
    """
    created_root = not root.exists()
    try:
        root.mkdir(parents=True, exist_ok=True)
        repo = init_repository(root)
        (root / CONFIG_FILE).write_text(config.render(), encoding="utf-8")
        (root / ".gitignore").write_text(gitignore, encoding="utf-8")
        paths = [CONFIG_FILE, ".gitignore"]
        for layer in LAYERS:  # where nodes go, ready for an editor (git tracks no empty folder)
            (root / WORLD_DIR / layer).mkdir(parents=True, exist_ok=True)
        for node in nodes:
            rel = node_path(node["id"], node["layer"], config.layout)
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(dump(node))
            paths.append(rel)
        paths.extend(_copy(root, copies))
        index = repo.index
        for rel in paths:
            index.add(rel)
        index.write()
        tree = index.write_tree()
        from narrative.store.commit import seal_genesis

        with WorldRepo(root, repo, config) as wr:
            return seal_genesis(wr, str(tree), genesis, ref="refs/heads/main", when=when)
    except BaseException:
        if created_root:
            shutil.rmtree(root, ignore_errors=True)
        else:  # the directory was empty: leave it empty again
            for child in root.iterdir():
                if child.is_dir() and not child.is_symlink():
                    shutil.rmtree(child, ignore_errors=True)
                else:
                    child.unlink(missing_ok=True)
        raise


def world_here(root: Path, config: WorldConfig, genesis: EventRecord, *, gitignore: str,
               rules: Sequence[tuple[Path, str]] | None = None, rules_dir: str = "rules",
               when: datetime | None = None) -> str:
    """Make the git repository at ``root`` a world: narr.toml, world/ and a genesis commit on
    top of its history, which stays as it was. Returns the genesis commit's id.

    Refused unless the working tree is clean: the genesis commit must hold exactly what
    narr adds, never a half-finished change of the user's.
    """
    repo = open_repository(root)
    if repo is None:
        raise InvalidInputError(f"{root} is not the top of a git repository",
                                hint="narr init DIR makes a new one; git init first to use --here")
    if (root / CONFIG_FILE).exists():
        raise InvalidInputError(f"{root} is already a narr world ({CONFIG_FILE} exists)")
    if (root / WORLD_DIR).exists():
        raise InvalidInputError(f"{root}/{WORLD_DIR} already exists; narr keeps the story there",
                                hint="move it aside, then run narr init --here again")
    if repo.head_is_unborn:
        raise InvalidInputError(f"{root} has no commits yet", hint="narr init DIR makes a new world")
    ignored = pygit2.enums.FileStatus.IGNORED
    dirty = [path for path, flags in repo.status().items() if flags != 0 and not flags & ignored]
    if dirty:
        raise InvalidInputError(f"{root} has uncommitted changes ({len(dirty)} file(s), "
                                f"first {sorted(dirty)[0]})", hint="commit or stash them first")
    head = repo.head.peel()
    made: list[Path] = []
    try:
        (root / CONFIG_FILE).write_text(config.render(), encoding="utf-8")
        made.append(root / CONFIG_FILE)
        paths = [CONFIG_FILE]
        if not (root / ".gitignore").exists():
            (root / ".gitignore").write_text(gitignore, encoding="utf-8")
            made.append(root / ".gitignore")
            paths.append(".gitignore")
        made.append(root / WORLD_DIR)
        for layer in LAYERS:
            (root / WORLD_DIR / layer).mkdir(parents=True, exist_ok=True)
        if rules is not None:
            if (root / rules_dir).exists():
                raise InvalidInputError(f"{root}/{rules_dir} already exists; leave out --rules "
                                        "or move it aside")
            made.append(root / rules_dir)
            paths.extend(_copy(root, rules))
        index = repo.index
        index.read()
        for rel in paths:
            index.add(rel)
        tree = index.write_tree()
        from narrative.store.commit import seal_genesis

        with WorldRepo(root, repo, config) as wr:
            commit = seal_genesis(wr, str(tree), genesis, ref="HEAD", parent=str(head.id),
                                  when=when)
            index.write()
            return commit
    except BaseException:
        for path in reversed(made):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)
        raise


def _copy(root: Path, copies: Sequence[tuple[Path, str]]) -> list[str]:
    """Copy each ``(source, path)`` into the world; the repository-relative files written."""
    out: list[str] = []
    for src, rel in copies:
        dst = root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst)
            out.extend(p.relative_to(root).as_posix() for p in sorted(dst.rglob("*")) if p.is_file())
        else:
            shutil.copy2(src, dst)
            out.append(rel)
    return out
