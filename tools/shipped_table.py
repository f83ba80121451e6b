"""What every table-making script in tools/ does last: write the table it built, or with
``--check`` only say whether the shipped one still equals it.

The tables are gzipped text, compared decompressed so that a different zlib (the same
words, other bytes) is not reported as stale."""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def write_or_check(out: Path, data: bytes, *, check: bool, source: str, script: str) -> int:
    """Exit status for the script: 1 when ``check`` finds ``out`` stale, else 0."""
    name = out.relative_to(ROOT)
    if check:
        if out.exists() and gzip.decompress(out.read_bytes()) == gzip.decompress(data):
            print(f"{name} is up to date")
            return 0
        print(f"{name} differs from what {source} gives: run tools/{script}", file=sys.stderr)
        return 1
    out.write_bytes(data)
    print(f"wrote {name} ({len(data) // 1024} KiB)")
    return 0
