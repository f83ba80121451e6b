#!/usr/bin/env python3
"""Write ``narrative/diffusers/chinese.txt.gz``: Chinese words and their frequencies, from jieba.

narr asks one thing of a Chinese dictionary: where a name found in the text is
crossed by a longer word (马铃 in 马铃薯, 林远 in 树林远处), how likely each way of
cutting the few characters around it into words is (narrative/diffusers/zhwords.py).
jieba's dictionary (``dict.txt``: a word, its frequency and a part-of-speech tag a
line) knows that; the jieba package around it is 42 MB installed, for a segmenter
narr never runs. So this script reads the dictionary once into a table shipped in
the package, and jieba is only a test and tool dependency (a test holds the table
equal to what this script makes from the installed jieba).

    pip install jieba && python tools/chinese_table.py            # rewrite the table
    python tools/chinese_table.py --check                         # exit 1 if it is stale

The table is text, gzipped: a header of ``#`` lines (where it comes from, and jieba's
licence notice, which the MIT licence asks to travel with every copy of its data),
``#total`` and the sum of the frequencies, then one ``word<TAB>frequency`` line for
each word of at most six characters with a Chinese character in it, sorted (UTF-8
byte order, so narr binary-searches it as bytes). A word listed twice has the sum.
The licence notice is also beside the table, as ``chinese.txt.gz.LICENSE``.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.metadata
import importlib.util
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.shipped_table import write_or_check  # noqa: E402

OUT = ROOT / "narrative" / "diffusers" / "chinese.txt.gz"
LICENCE = OUT.with_name(OUT.name + ".LICENSE")
MAX_WORD = 6  # characters: zhwords.MAX_WORD, the longest word the segmenter considers
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


def source() -> Path:
    """jieba's ``dict.txt``, found without importing jieba (its import builds nothing, but its
    segmenter would take seconds to load were it asked)."""
    spec = importlib.util.find_spec("jieba")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("jieba is not installed: pip install jieba")
    path = Path(next(iter(spec.submodule_search_locations))) / "dict.txt"
    if not path.is_file():
        raise SystemExit(f"{path}: jieba's dictionary is not there")
    return path


def build(path: Path | None = None) -> bytes:
    """The table's bytes (deterministic: no gzip time)."""
    path = path or source()
    rows: dict[str, int] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = line.split(" ")
        if len(parts) < 2 or not _CJK.search(parts[0]) or len(parts[0]) > MAX_WORD:
            continue
        try:
            rows[parts[0]] = rows.get(parts[0], 0) + int(parts[1])
        except ValueError:
            continue
    assert not any("\t" in w or "#" in w[:1] for w in rows), "a word holds the table's separators"
    words = sorted(rows, key=lambda w: w.encode("utf-8"))
    notice = LICENCE.read_text(encoding="utf-8").rstrip("\n").splitlines()
    header = [f"# Chinese words and their frequencies from the dictionary (dict.txt) of jieba "
              f"{importlib.metadata.version('jieba')}, made by tools/chinese_table.py; do not edit.",
              "# jieba is under the MIT licence; its notice follows, and is in chinese.txt.gz.LICENSE.",
              *(f"# {line}".rstrip() for line in notice)]
    text = "\n".join([*header, f"#total\t{sum(rows.values())}", *(f"{w}\t{rows[w]}" for w in words), ""])
    return gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="only say whether the table is up to date")
    parser.add_argument("--source", type=Path, help="a dict.txt other than the installed jieba's")
    args = parser.parse_args(argv)
    data = build(args.source)
    return write_or_check(OUT, data, check=args.check, source="jieba", script="chinese_table.py")


if __name__ == "__main__":
    sys.exit(main())
