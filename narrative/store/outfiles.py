"""Files an export writes outside the world, whole or not at all, never over the user's work.

``write_file`` writes one file through a temporary file in the same folder and a rename, so a
reader never sees half of it. ``write_folder`` writes a tree of files (a vault): into a folder
that does not exist or is empty, by building the tree beside it and renaming it into place; or
into a folder a previous export wrote (its :data:`MARKER` lists the files and their digests),
replacing those files one by one. There a file the user changed since (its digest differs) is
never overwritten or removed: the export is refused, naming it, before anything is written.
No path runs through a symbolic link or outside the folder.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Final

from narrative import safejson
from narrative.errors import ConflictError, InvalidInputError

MARKER: Final = ".narr-export.json"


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_file(path: Path, data: bytes) -> None:
    """``data`` as the file ``path``, atomically."""
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a folder, not a file to write")
    folder = path.parent
    if not folder.is_dir():
        raise InvalidInputError(f"{folder}: no such folder")
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _check_paths(files: dict[str, bytes]) -> None:
    seen: set[str] = set()
    for rel in files:
        p = PurePosixPath(rel)
        if p.is_absolute() or not p.parts or any(part in ("", ".", "..") for part in p.parts) \
                or any(part.startswith(".") for part in p.parts):
            raise InvalidInputError(f"{rel!r} cannot be written in an export folder")
        folded = rel.casefold()
        if folded in seen:  # one file on a case-insensitive disk
            raise InvalidInputError(f"two files would be {rel!r} on a disk that ignores case")
        seen.add(folded)


def _previous(folder: Path) -> dict[str, str] | None:
    """The files (and digests) the last export wrote into ``folder``, or None."""
    marker = folder / MARKER
    if marker.is_symlink() or not marker.is_file():
        return None
    try:
        value = safejson.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    files = value.get("files") if isinstance(value, dict) else None
    if not isinstance(files, dict):
        return None
    return {str(k): str(v) for k, v in files.items()}


def _inside(folder: Path, rel: str) -> Path:
    """``folder/rel``, refused when a part of the way is a symbolic link."""
    path = folder
    for part in PurePosixPath(rel).parts:
        path = path / part
        if path.is_symlink():
            raise InvalidInputError(f"{path}: a symbolic link; an export never writes through one")
    return path


def write_folder(folder: Path, files: dict[str, bytes], about: dict[str, Any]) -> list[str]:
    """Write ``files`` (POSIX paths inside ``folder`` -> bytes); returns the paths removed
    because the previous export had them and this one does not."""
    _check_paths(files)
    if folder.is_symlink():
        raise InvalidInputError(f"{folder}: a symbolic link; give the folder itself")
    marker = json.dumps({**about, "files": {rel: _digest(data) for rel, data in sorted(files.items())}},
                        indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    if folder.exists() and not folder.is_dir():
        raise InvalidInputError(f"{folder}: not a folder")
    if not folder.exists() or not any(folder.iterdir()):
        _write_new(folder, files, marker.encode("utf-8"))
        return []
    previous = _previous(folder)
    if previous is None:
        raise ConflictError(f"{folder}: the folder is not empty and no narr export wrote it",
                            hint="export into a new or empty folder")
    changed = []
    for rel, digest in previous.items():
        path = _inside(folder, rel)
        if path.is_file() and _digest(path.read_bytes()) != digest:
            changed.append(rel)
    for rel in files:
        path = _inside(folder, rel)
        if rel not in previous and path.exists():
            changed.append(rel)
    if changed:
        raise ConflictError(f"{folder}: {len(changed)} file(s) changed or added since the last export, "
                            f"which it would overwrite: {', '.join(sorted(changed)[:5])}",
                            hint="import the vault first (narr import DIR), or export into a new folder")
    for rel, data in files.items():
        path = _inside(folder, rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, data)
    gone = sorted(rel for rel in previous if rel not in files)
    for rel in gone:
        _inside(folder, rel).unlink(missing_ok=True)
    write_file(folder / MARKER, marker.encode("utf-8"))
    return gone


def _write_new(folder: Path, files: dict[str, bytes], marker: bytes) -> None:
    parent = folder.parent
    if not parent.is_dir():
        raise InvalidInputError(f"{parent}: no such folder")
    tmp = Path(tempfile.mkdtemp(dir=parent, prefix=f".{folder.name}.", suffix=".tmp"))
    try:
        for rel, data in files.items():
            path = tmp.joinpath(*PurePosixPath(rel).parts)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        (tmp / MARKER).write_bytes(marker)
        if folder.exists():
            folder.rmdir()  # empty: checked by the caller
        os.replace(tmp, folder)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
