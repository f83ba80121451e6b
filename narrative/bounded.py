"""Files narr reads whole, never past a bound: the size is checked before the first byte is read.

A file named on the command line (``--png IMAGE``, ``--delta FILE``, a chapter to audit) or
found in a world someone else made (``narr.toml``, a rules file) may be anything: a 3 GB sparse
file, ``/dev/zero``, a pipe that never ends. Reading it whole would take the machine's memory
before any check could refuse it. So a regular file larger than its bound is refused from its
size alone; anything else (a pipe, a device) is read up to one byte past the bound and refused
there. The message names the file and the bound.
"""

from __future__ import annotations

import os
import stat
from typing import IO, Final

from narrative.errors import InvalidInputError, NarrError

MB: Final = 1024 * 1024
MAX_TEXT: Final = 8 * MB  # an event's words, a delta, a chapter: what HTTP takes in one body
MAX_SETTINGS: Final = 1 * MB  # narr.toml, the user's config: a few KB in practice
MAX_RULES_FILE: Final = 8 * MB  # one file of rules/


def size_text(n: int) -> str:
    return f"{n / MB:,.1f} MB" if n >= MB else f"{n:,} bytes"


def too_big(label: str, size: int | None, limit: int, *, what: str = "file",
            error: type[NarrError] = InvalidInputError) -> NarrError:
    """``label`` is beyond ``limit`` (``size`` None: a stream that went on past it)."""
    found = f"is {size_text(size)}" if size is not None else f"goes on past {size_text(limit)}"
    return error(f"{label}: the {what} {found}, more than the {size_text(limit)} narr reads from one",
                 hint="give a smaller file")


def read(path: str | os.PathLike[str], limit: int, *, label: str | None = None, what: str = "file",
         error: type[NarrError] = InvalidInputError) -> bytes:
    """The bytes of ``path``, refused (``error``, naming ``label`` or the path) beyond ``limit``.
    ``OSError`` of the open or the read is the caller's to word."""
    named = label if label is not None else os.fspath(path)
    with open(path, "rb") as fh:
        st = os.fstat(fh.fileno())
        if stat.S_ISDIR(st.st_mode):
            raise error(f"{named}: is a folder, not a file")
        if stat.S_ISREG(st.st_mode) and st.st_size > limit:
            raise too_big(named, st.st_size, limit, what=what, error=error)
        return _read_up_to(fh, limit, named, what, error)


def read_stream(stream: IO[bytes], limit: int, *, label: str, what: str = "input",
                error: type[NarrError] = InvalidInputError) -> bytes:
    """A stream (standard input) read to its end, refused beyond ``limit``."""
    return _read_up_to(stream, limit, label, what, error)


def _read_up_to(fh: IO[bytes], limit: int, label: str, what: str, error: type[NarrError]) -> bytes:
    data = fh.read(limit + 1)
    if len(data) > limit:
        raise too_big(label, None, limit, what=what, error=error)
    return data
