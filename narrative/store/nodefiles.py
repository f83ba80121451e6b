"""Writing one node file into the working tree: how narr makes a hand edit for the user.

Every hand edit (:mod:`narrative.engine.handedit`) is written here, so a node file narr
writes has one guarantee wherever it comes from:

- the node is validated first, and its path comes from its id and layer in the
  world's layout (an id with ``../`` or a path separator never gets that far);
- the path stays inside the world: a layer or shard folder (or the file) that is a
  symbolic link is refused, naming it (:mod:`narrative.store.confine`);
- the file appears whole or not at all: the bytes go to a temporary file beside
  it, which is renamed over the old one (or, for a new node, linked into place, so
  a file someone made meanwhile is never replaced);
- it is canonical JSON (:func:`narrative.nodefile.dump`), the form narr commits,
  so the next event records exactly the change and ``narr status`` shows it.

The write is a hand edit, not an event: the next event records it.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

from narrative.errors import ConflictError
from narrative.ids import check_id, node_path
from narrative.nodefile import NodeDict, dump, validate
from narrative.store.confine import inside
from narrative.store.worldrepo import WorldRepo


def write_node(wr: WorldRepo, node: NodeDict, *, create: bool = False) -> str:
    """Write ``node``'s file (validated, canonical, whole); its path relative to the world.

    ``create``: the node is new, and a file already at its path (made by someone else
    just now) is refused rather than replaced.
    """
    check_id(str(node.get("id", "")))
    path = node_path(node["id"], node["layer"], wr.config.layout)
    data = dump(validate(dict(node), path))
    full = inside(wr.root, path)
    full.parent.mkdir(parents=True, exist_ok=True)
    tmp = full.parent / f".narr-edit-{secrets.token_hex(6)}"
    try:
        with open(tmp, "xb") as fh:
            fh.write(data)
        os.chmod(tmp, 0o644)
        if create:
            try:
                _create(tmp, full)
            except FileExistsError:
                raise ConflictError(f"{path} was made meanwhile; narr leaves it as it is",
                                    hint="run the command again") from None
        else:
            os.replace(tmp, full)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    return path


def file_digest(wr: WorldRepo, path: str) -> str:
    """What a node's file holds now, in short (``""`` when there is none): a writer sends back
    the one it read, so a save never writes over a change it did not see."""
    import hashlib

    try:
        return hashlib.sha1(inside(wr.root, path).read_bytes()).hexdigest()
    except FileNotFoundError:
        return ""


def _create(tmp: Path, full: Path) -> None:
    """Put ``tmp`` at ``full`` unless a file is there (``FileExistsError``)."""
    try:
        os.link(tmp, full)  # atomic, and fails when the name is taken
    except FileExistsError:
        raise
    except OSError:  # a file system without hard links: an exclusive create instead
        with open(tmp, "rb") as src, open(full, "xb") as dst:
            dst.write(src.read())
