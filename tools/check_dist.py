#!/usr/bin/env python3
"""Check the sdist and wheel in DIST as the index would get them, then run the sdist's own tests.

``python -m build`` makes the sdist and builds the wheel *from the sdist*, so a file
the wheel needs but the sdist lacks already fails there. This script checks what
``twine check`` does not: the licence text is in both, the version is the one
``narrative/__init__.py`` holds (the one place it is written), the wheel needs
neither numpy, lemminflect nor jieba (it carries the tables made from them, and jieba's
licence beside its words), the index page has no link into a repository
the package cannot know, and the sdist holds every file git tracks but those left
out on purpose (CI's script, the raw benchmark results). Then it unpacks the sdist
and runs, from there, the quick tests that read files beside the package
(benchmarks, examples, schemas, the README): they pass in a folder with no git
history, by the sdist's own files. The long ones among them read the same files
(which the listing proves are there) and have already run in the checkout.

    python -m build --outdir dist . && twine check --strict dist/* && python tools/check_dist.py dist
    python tools/check_dist.py dist --all-tests     # the whole suite from the unpacked sdist
"""

from __future__ import annotations

import argparse
import email
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOT_AT_RUN_TIME = ("numpy", "lemminflect", "jieba")
BUNDLED = ("narrative/diffusers/english.txt.gz", "narrative/diffusers/chinese.txt.gz",
           "narrative/diffusers/chinese.txt.gz.LICENSE")
# Tracked but not in the sdist: CI's own script, and the raw results the benchmark pages
# (which ship) are made from. No test reads them.
LEFT_OUT = re.compile(r"\.ci/[^/]+|benchmarks/results/[^/]+\.json")


def version() -> str:
    text = (ROOT / "narrative" / "__init__.py").read_text(encoding="utf-8")
    match = re.search(r'^__version__ = "([^"]+)"$', text, flags=re.M)
    assert match, "narrative/__init__.py has no __version__"
    return match[1]


def check(dist: Path) -> list[str]:
    wanted = version()
    wheels, sdists = sorted(dist.glob("narr-*.whl")), sorted(dist.glob("narr-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        return [f"{dist}: expected one wheel and one sdist, found {[p.name for p in dist.iterdir()]}"]
    problems = []
    with zipfile.ZipFile(wheels[0]) as whl:
        names = whl.namelist()
        info = f"narr-{wanted}.dist-info"
        if f"{info}/METADATA" not in names:
            return [f"{wheels[0].name}: no {info}/METADATA: the wheel is not version {wanted}"]
        meta = email.message_from_bytes(whl.read(f"{info}/METADATA"))
        if f"{info}/licenses/LICENSE" not in names:
            problems.append(f"{wheels[0].name}: no licence text ({info}/licenses/LICENSE)")
        jieba = f"{info}/licenses/narrative/diffusers/chinese.txt.gz.LICENSE"
        if jieba not in names:
            problems.append(f"{wheels[0].name}: no licence of the Chinese word table ({jieba})")
        problems += [f"{wheels[0].name} lacks {name}" for name in BUNDLED if name not in names]
    if meta["Version"] != wanted:
        problems.append(f"the wheel's metadata says {meta['Version']}, narrative/__init__.py {wanted}")
    runtime = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
    problems += [f"the wheel needs {r} at run time" for r in runtime
                 if r.split(">")[0].split("=")[0].strip().lower() in NOT_AT_RUN_TIME]
    page = meta.get_payload()
    assert isinstance(page, str)
    problems += [f"the index page links into the repository: {m[0]}"
                 for m in re.finditer(r"\]\((?!https?://)[^)]*\)", page)]
    with tarfile.open(sdists[0]) as sdist:
        members = {m.name.split("/", 1)[1] for m in sdist.getmembers() if "/" in m.name}
    problems += [f"{sdists[0].name} lacks {name}" for name in ("LICENSE", "CHANGELOG.md", "README.md")
                 if name not in members]
    problems += [f"{sdists[0].name} lacks {name}, which git tracks" for name in tracked()
                 if name not in members and not LEFT_OUT.fullmatch(name)]
    return problems


def tracked() -> list[str]:
    """The files git tracks in this checkout (none where it is not one: an unpacked sdist)."""
    if not (ROOT / ".git").exists():
        return []
    listing = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    return [name for name in listing.stdout.decode("utf-8").split("\0") if name]


def tests_reading_files_beside_the_package(tests: Path) -> list[str]:
    marker = "__file__).resolve().parent.parent"  # how a test names the checkout's root
    return sorted(p.name for p in tests.glob("test_*.py") if marker in p.read_text("utf-8"))


def run_sdist_tests(dist: Path, every: bool) -> int:
    sdist = next(dist.glob("narr-*.tar.gz"))
    with tempfile.TemporaryDirectory(prefix="narr-sdist-") as scratch:
        with tarfile.open(sdist) as archive:
            archive.extractall(scratch, filter="data")
        root = next(Path(scratch).iterdir())
        chosen = [] if every else [f"tests/{name}"
                                   for name in tests_reading_files_beside_the_package(root / "tests")]
        env = {**os.environ, "PYTHONPATH": str(root)}  # the sdist's narr, in the tests' subprocesses too
        print(f"check_dist: running {'the whole suite' if every else ' '.join(chosen)} from {sdist.name}",
              flush=True)
        quick = [] if every else ["-m", "not slow"]
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                               *quick, *chosen], cwd=root, env=env, check=False).returncode


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dist", type=Path)
    parser.add_argument("--all-tests", action="store_true", help="run the whole suite from the sdist")
    parser.add_argument("--no-tests", action="store_true", help="check the files only")
    args = parser.parse_args(argv)
    problems = check(args.dist)
    for problem in problems:
        print(f"check_dist: {problem}", file=sys.stderr)
    if problems:
        return 1
    print(f"check_dist: sdist and wheel of narr {version()} are as the index should get them")
    return 0 if args.no_tests else run_sdist_tests(args.dist, args.all_tests)


if __name__ == "__main__":
    sys.exit(main())
