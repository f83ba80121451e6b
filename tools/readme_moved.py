"""Prove that no line of an older README was lost when its sections moved into the manual.

    python tools/readme_moved.py [REV]

takes README.md as it was at REV (default: the last commit whose README was longer than 250
lines) and checks that each of its lines is, word for word, in README.md or a page under docs/
now. Heading levels and link targets are ignored (a section that became a page has one `#` less,
and its links point from docs/), and so are the outputs of console sessions, which the tests
compare with what narr prints now (tests/test_doc_sessions.py). Exits 1 and lists the lines it
cannot find.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _normal(line: str) -> str:
    line = re.sub(r"^#+ ", "", line.strip())
    return re.sub(r"\]\([^)]*\)", "]()", line)


def _old_readme(rev: str | None) -> tuple[str, str]:
    if rev is None:
        revs = subprocess.run(["git", "-C", str(ROOT), "log", "--format=%H", "--", "README.md"],
                              check=True, capture_output=True, text=True).stdout.split()
        for candidate in revs:
            text = _show(f"{candidate}:README.md")
            if len(text.splitlines()) > 250:
                return candidate, text
        raise SystemExit("no commit has a README longer than 250 lines; name one")
    return rev, _show(f"{rev}:README.md")


def _show(spec: str) -> str:
    return subprocess.run(["git", "-C", str(ROOT), "show", spec], check=True,
                          capture_output=True, text=True).stdout


def missing_lines(old: str) -> list[str]:
    now = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    have = {_normal(line) for path in now for line in path.read_text(encoding="utf-8").splitlines()}
    lost, console = [], False
    for line in old.splitlines():
        if line.strip().startswith("```"):
            console = line.strip() == "```console"
            continue
        if console and not line.startswith("$ "):
            continue
        if line.strip() and _normal(line) not in have:
            lost.append(line)
    return lost


def main() -> int:
    rev, old = _old_readme(sys.argv[1] if len(sys.argv) > 1 else None)
    lost = missing_lines(old)
    for line in lost:
        print(f"not found: {line}")
    print(f"README.md at {rev[:10]}: {len(old.splitlines())} lines, {len(lost)} not found in README.md "
          "and docs/")
    return 1 if lost else 0


if __name__ == "__main__":
    sys.exit(main())
