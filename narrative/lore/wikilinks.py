"""Obsidian's ``[[wikilinks]]``: where they are in a note's text, and which note each one means.

A link is ``[[target]]``, ``[[target|shown]]``, ``[[target#Heading]]``, ``[[target#^block]]``
or an embed ``![[target]]``; the target is a file name or a path from the vault's root, with or
without ``.md``. Links in code (fenced blocks, inline code) are text, not links. A target with
an attachment's extension (``.png``, ``.pdf``, ``.canvas``...) is a file, not a note.

:class:`NoteIndex` resolves a target the way Obsidian does (its help on internal links: a link
names a note by its file name, and by a path where several notes share that name), case and
Unicode form aside:

- a target with a folder (``Places/Mercy``) is the note at that path from the vault's root,
  else from the linking note's folder (``./`` and ``../`` too), else the one note whose path
  ends with it;
- a bare name (``Mercy``) is the note of that file name; where several have it, the one in
  the linking note's folder, else the one with the shortest path (then the first by path):
  the link is then reported as ambiguous, since a reader of the vault may mean another.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final

from narrative.ids import normalize_name

LINK: Final = re.compile(r"(!?)\[\[([^\[\]|#^\n]*)((?:#[^\[\]|\n]*)?)(?:\|([^\[\]\n]*))?\]\]")
_FENCE: Final = re.compile(r"^\s{0,3}(```|~~~)")
_CODE_SPAN: Final = re.compile(r"`[^`\n]*`")
ATTACHMENTS: Final = frozenset({
    "canvas", "base", "png", "jpg", "jpeg", "gif", "bmp", "svg", "webp", "avif", "heic", "tif",
    "tiff", "mp3", "wav", "m4a", "3gp", "flac", "ogg", "oga", "opus", "webm", "mp4", "mkv", "mov",
    "ogv", "pdf", "excalidraw",
})


def prose_lines(text: str) -> list[tuple[str, bool]]:
    """Each line of ``text`` with whether it is prose (not a fence or inside a fenced block)."""
    out, fenced = [], False
    for line in text.split("\n"):
        if _FENCE.match(line):
            fenced = not fenced
            out.append((line, False))
            continue
        out.append((line, not fenced))
    return out


def prose(text: str) -> str:
    """``text`` with its code (fenced blocks, inline code) left out."""
    return "\n".join(_CODE_SPAN.sub(" ", line) for line, is_prose in prose_lines(text) if is_prose)


def target_of(raw: str) -> str:
    """A link's target as written, trimmed, without ``.md`` (``Places/Mercy.md`` -> ``Places/Mercy``)
    or the backslash that escapes a ``|`` in a table (``[[Rhea\\|Rhea]]``)."""
    target = raw.strip().removesuffix("\\").rstrip()
    if target.lower().endswith(".md"):
        target = target[:-3]
    return target


def is_attachment(target: str) -> bool:
    """A target that names a file other than a note (an image, a PDF, a canvas)."""
    last = target.rsplit("/", 1)[-1]
    return "." in last and last.rsplit(".", 1)[1].lower() in ATTACHMENTS


def links_in(text: str) -> list[tuple[str, str]]:
    """``(target, as written)`` of the note links in ``text``'s prose, in order, once per target."""
    out, seen = [], set()
    for m in LINK.finditer(prose(text)):
        target = target_of(m.group(2))
        if not target or is_attachment(target):
            continue
        key = normalize_name(target)
        if key not in seen:
            seen.add(key)
            out.append((target, m.group(0)))
    return out


def link_text(value: str) -> str | None:
    """The target when ``value`` is one link and nothing else (``"[[Wen Qiao]]"``), else None."""
    m = LINK.fullmatch(value.strip())
    if m is None or not m.group(2).strip():
        return None
    return target_of(m.group(2))


def _key(path: str) -> str:
    return normalize_name(path)


@dataclass(frozen=True)
class Resolved:
    """Where a link goes: ``path`` (None: no such note) and the other notes it might mean."""

    path: str | None
    others: tuple[str, ...] = ()


class NoteIndex:
    """The notes of a vault by path and by file name (paths as the vault writes them, ``.md``
    left out), to resolve links as Obsidian does (module docstring)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.by_path: dict[str, str] = {}
        self.by_stem: dict[str, list[str]] = {}
        for path in paths:
            bare = target_of(path)
            key = _key(bare)
            if key in self.by_path:
                continue
            self.by_path[key] = bare
            self.by_stem.setdefault(_key(bare.rsplit("/", 1)[-1]), []).append(bare)
        self._suffix: dict[str, list[str]] | None = None

    def resolve(self, target: str, source: str) -> Resolved:
        """The note ``target`` means in a link from the note at ``source``."""
        target = target_of(target)
        relative = target.startswith(("./", "../"))
        if not relative:
            target = target.strip("/")
        folder = posixpath.dirname(target_of(source))
        if "/" in target:
            if not relative:
                hit = self.by_path.get(_key(posixpath.normpath(target)))
                if hit is not None:
                    return Resolved(hit)
            near = posixpath.normpath(posixpath.join(folder, target))
            hit = self.by_path.get(_key(near)) if not near.startswith("..") else None
            if hit is not None or relative:
                return Resolved(hit)
            ends = self._ends().get(_key(posixpath.normpath(target)), [])
            if len(ends) == 1:
                return Resolved(ends[0])
            if ends:
                pick = _nearest(ends, folder)
                return Resolved(pick, tuple(p for p in ends if p != pick))
            return Resolved(None)
        same = self.by_stem.get(_key(target), [])
        if not same:
            return Resolved(None)
        if len(same) == 1:
            return Resolved(same[0])
        pick = _nearest(same, folder)
        return Resolved(pick, tuple(p for p in same if p != pick))

    def _ends(self) -> dict[str, list[str]]:
        """Every tail of every path (``b/c`` of ``a/b/c``) -> the paths ending so; built once."""
        if self._suffix is None:
            self._suffix = {}
            for path in self.by_path.values():
                parts = path.split("/")
                for i in range(1, len(parts)):
                    self._suffix.setdefault(_key("/".join(parts[i:])), []).append(path)
        return self._suffix


def _nearest(paths: list[str], folder: str) -> str:
    """Of notes sharing a name: the one in ``folder``, else the shortest path, else the first."""
    here = [p for p in paths if posixpath.dirname(p) == folder]
    if here:
        return here[0]
    return min(paths, key=lambda p: (len(p), p))
