"""git attributes that would make a world's files differ between git and narr.

``git`` honours ``working-tree-encoding`` (it checks a node file out as UTF-16, say) and
``filter`` drivers; libgit2, which narr reads and writes with, applies neither. A world
cloned with such a ``.gitattributes`` looks clean, then the first event writes UTF-8 where
git expects UTF-16 and ``check`` and ``get`` fail on files narr never wrote that way. Line
endings (``text``, ``eol``) are fine: both apply them alike.

The attribute files are looked at first (their text, a few small reads), so a world without
such a line pays nothing more; only when one is there is each file asked about.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from narrative.ids import LAYERS
from narrative.store.libgit import pygit2
from narrative.store.worldrepo import WorldRepo

RISKY = ("working-tree-encoding", "filter")


def _attribute_texts(wr: WorldRepo, tree: pygit2.Tree | None, full: bool) -> list[str]:
    """The text of every attribute file that can reach world files (``full``: anywhere in the
    tree, committed or checked out; otherwise the checked-out top ones and each layer's: a few
    failed opens, what every scan can afford)."""
    texts: list[str] = []
    root = str(wr.root)
    for where in [os.path.join(str(wr.git_dir), "info", "attributes")]:
        with _quiet(), open(where, "rb") as fh:
            texts.append(fh.read().decode("utf-8", "replace"))
    names = [".gitattributes", "world/.gitattributes", "rules/.gitattributes",
             *(f"world/{layer}/.gitattributes" for layer in LAYERS)]
    if full and tree is not None:
        names += [p for p in _tree_paths(wr, tree) if p.endswith("/.gitattributes")]
    for name in dict.fromkeys(names):
        with _quiet(), open(f"{root}/{name}", "rb") as fh:  # strings: pathlib costs more here
            texts.append(fh.read().decode("utf-8", "replace"))
        if full and tree is not None:  # committed but not checked out (yet)
            with _quiet():
                blob = tree[name]
                if isinstance(blob, pygit2.Blob):
                    texts.append(blob.data.decode("utf-8", "replace"))
    return texts


def _tree_paths(wr: WorldRepo, tree: pygit2.Tree) -> list[str]:
    out: list[str] = []
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, t = stack.pop()
        for entry in t:
            path = f"{prefix}{entry.name}"
            if entry.type == pygit2.enums.ObjectType.TREE:
                sub = wr.repo[entry.id]
                if isinstance(sub, pygit2.Tree):
                    stack.append((f"{path}/", sub))
            else:
                out.append(path)
    return out


class _quiet:
    """Leave out an attribute file that is not there (or is not a file)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, *rest: object) -> bool:
        return kind is not None and issubclass(kind, OSError | KeyError | ValueError)


def encoding_problems(wr: WorldRepo, paths: Iterable[str] | None = None, *,
                      full: bool = False) -> list[str]:
    """Each world file (``paths``; default: ``narr.toml``, the rules and every file under
    ``world/`` of HEAD) whose attributes change its bytes in the working tree, named with the
    attribute."""
    head = None
    if full and not wr.repo.head_is_unborn:
        head = wr.repo.head.peel(pygit2.Commit).tree
    texts = _attribute_texts(wr, head, full)
    if not any(word in text for text in texts for word in RISKY):
        return []
    if head is None and not wr.repo.head_is_unborn:
        head = wr.repo.head.peel(pygit2.Commit).tree
    if paths is None:
        paths = ["narr.toml", *(p for p in (_tree_paths(wr, head) if head is not None else [])
                                if p.startswith(("world/", "rules/")))]
    out: list[str] = []
    for path in paths:
        for name in RISKY:
            try:
                value = wr.repo.get_attr(path, name)
            except (pygit2.GitError, ValueError):
                continue
            if value not in (None, False):
                shown = "set" if value is True else value
                out.append(f"{path}: .gitattributes sets {name} ({shown}); git would store this "
                           "file differently from what narr reads and writes")
                break
    if len(out) > SHOWN:
        out[SHOWN:] = [f"(and {len(out) - SHOWN} more files with the same attributes)"]
    return out


SHOWN = 20  # files named one by one; a pattern over a whole layer is one line more


HINT = ("remove the working-tree-encoding or filter line from .gitattributes (world files are "
        "UTF-8 JSON and TOML), then git checkout -- . brings the files back as narr reads them")
