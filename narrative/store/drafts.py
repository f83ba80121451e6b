"""A chapter's draft and review, kept under ``.git/narr/chapters/`` until the chapter is recorded.

A chapter's review is what the writer decided on: the change numbers of an accept list
name the changes of *that* review. A model's proposals differ from one run to the next,
so the review is kept (``review-<id>.json``, the id a digest of the text, the world it was
read against and how it was read) and a recording of the same chapter on the same world
takes its proposals from it instead of asking again. The newest few are kept.

A recording under way keeps its draft and decisions (``pending.json``) until the story has
moved: an error or a crash half-way loses nothing the writer typed or decided, and
``narr chapter --retry`` records it (or finds it recorded already).
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from narrative import safejson
from narrative.store.journal import write_atomic
from narrative.store.worldrepo import WorldRepo

KEEP_REVIEWS = 8
PENDING = "pending.json"


def _dir(wr: WorldRepo) -> Path:
    return wr.narr_dir / "chapters"


def _write(wr: WorldRepo, name: str, data: dict[str, Any]) -> None:
    folder = _dir(wr)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / name, json.dumps(data, ensure_ascii=False).encode(), wr.narr_dir / "tmp")


def _read(path: Path) -> dict[str, Any] | None:
    try:
        data = safejson.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def save_review(wr: WorldRepo, review_id: str, data: dict[str, Any]) -> None:
    """Keep a review (a cache: a disk that refuses it only costs asking the diffuser again)."""
    with contextlib.suppress(OSError):
        _write(wr, f"review-{review_id}.json", data)
        reviews = sorted(_dir(wr).glob("review-*.json"), key=lambda p: p.stat().st_mtime_ns)
        for old in reviews[:-KEEP_REVIEWS]:
            old.unlink(missing_ok=True)


def load_review(wr: WorldRepo, review_id: str) -> dict[str, Any] | None:
    if not all(c in "0123456789abcdef" for c in review_id):
        return None
    return _read(_dir(wr) / f"review-{review_id}.json")


def save_pending(wr: WorldRepo, data: dict[str, Any]) -> None:
    """Keep a chapter about to be recorded; a disk that refuses it refuses the recording."""
    _write(wr, PENDING, data)


def load_pending(wr: WorldRepo) -> dict[str, Any] | None:
    return _read(_dir(wr) / PENDING)


def drop_pending(wr: WorldRepo) -> None:
    with contextlib.suppress(OSError):
        os.unlink(_dir(wr) / PENDING)
