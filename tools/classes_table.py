#!/usr/bin/env python3
"""Rewrite ``narrative/diffusers/classes.json`` from ``classes.toml`` and the English table.

The shipped verb classes are written by hand in ``classes.toml``; the diffuser reads them
expanded with every form of their verbs, and with the verbs the shipped rule files write
with ``~``, from ``classes.json``. Expanding at run time costs every event the table walk,
so the expansion is made here, once, and a test holds the file equal to what this script
makes (tests/test_english_table.py).

    python tools/classes_table.py
"""

from __future__ import annotations

from pathlib import Path

from narrative.diffusers import classes


def main() -> int:
    target = Path(classes.__file__).resolve().parent / "classes.json"
    classes._compiled.cache_clear()
    target.write_text(classes.compiled_json(classes.rule_file_lemmas()), encoding="utf-8")
    print(f"{target} rewritten")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
