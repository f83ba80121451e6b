"""The package's metadata: one version, the licence, and an sdist that carries what its tests read.

CI builds the sdist and the wheel and checks the built files (tools/check_dist.py);
these tests keep pyproject.toml pointing at the right places, cheaply, on every run.
"""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from helpers import CLI

import narrative

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_the_version_is_written_once_and_everything_reads_it(tmp_path: Path) -> None:
    project = PYPROJECT["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert PYPROJECT["tool"]["hatch"]["version"]["path"] == "narrative/__init__.py"
    source = (ROOT / "narrative" / "__init__.py").read_text(encoding="utf-8")
    assert re.findall(r'^__version__ = "([^"]+)"$', source, flags=re.M) == [narrative.__version__]
    assert CLI(tmp_path)("--version").stdout == f"narr {narrative.__version__}\n"
    assert importlib.metadata.version("narr") == narrative.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog and "Keep a Changelog" in changelog


def test_the_licence_and_the_classifiers_are_declared() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "Copyright (c) 2026 the narr authors" in text
    classifiers = project["classifiers"]
    floor = project["requires-python"].removeprefix(">=")
    assert f"Programming Language :: Python :: {floor}" in classifiers
    assert not any(c.startswith("License ::") for c in classifiers)  # the SPDX expression says it
    assert "Typing :: Typed" in classifiers and (ROOT / "narrative" / "py.typed").is_file()


def test_the_sdist_carries_every_file_the_tests_read() -> None:
    include = PYPROJECT["tool"]["hatch"]["build"]["targets"]["sdist"]["include"]
    read = set()
    for test in (ROOT / "tests").glob("*.py"):
        read |= set(re.findall(r'resolve\(\)\.parent\.parent / "([^"]+)"', test.read_text(encoding="utf-8")))
    assert read, "no test names a file beside the package: the pattern is stale"
    covered = {entry.split("/")[0] for entry in include}
    assert sorted(read - covered) == []
    assert {"LICENSE", "CHANGELOG.md", "README.md", "tools"} <= set(include)


def test_no_runtime_dependency_brings_numpy() -> None:
    names = [re.split(r"[<>=!~ ]", d)[0].lower() for d in PYPROJECT["project"]["dependencies"]]
    assert "lemminflect" not in names and "numpy" not in names
    assert "lemminflect>=0.2.3" in PYPROJECT["project"]["optional-dependencies"]["test"]
