"""The floors CI installs (tools/floors.py) are pyproject's, and narr's code works at them.

CI itself runs the smoke session at the floors (``.ci/run``); these tests hold the
script's pieces honest and keep the code paths for older libraries covered where
the suite's own environment has newer ones.
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
import tomllib
from pathlib import Path
from types import ModuleType
from typing import Any

import networkx as nx
import pytest
from helpers import CLI

ROOT = Path(__file__).resolve().parent.parent


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("floors_tool", ROOT / "tools" / "floors.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["floors_tool"] = module
    spec.loader.exec_module(module)
    return module


def test_the_constraints_pin_every_runtime_dependency_at_its_floor() -> None:
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    lines = _tool().constraints().splitlines()
    assert sorted(lines) == sorted(d.replace(">=", "==").lower() for d in deps)
    assert "pygit2==1.20.1" in lines and not any(line.startswith("lemminflect") for line in lines)


def test_a_pin_moves_one_floor_and_a_dependency_without_one_is_refused(tmp_path: Path) -> None:
    tool = _tool()
    assert "pygit2==1.19.1" in tool.constraints(["pygit2==1.19.1"]).splitlines()
    with pytest.raises(SystemExit, match="NAME==VERSION"):
        tool.constraints(["numpy==2.0"])
    bad = tmp_path / "pyproject.toml"
    bad.write_text('[project]\ndependencies = ["click>=8.1", "pygit2"]\n', encoding="utf-8")
    with pytest.raises(SystemExit, match="'pygit2' is not of the form name>=VERSION"):
        tool.floors(bad)


def test_release_numbers_compare_as_pip_compares_them() -> None:
    same = _tool()._same
    assert same("1.15.0", "1.15") and same("6.0", "6.0.0") and not same("1.19.1", "1.19.2")
    assert not same(None, "1.0")


def test_the_world_graph_as_json_is_the_same_with_a_networkx_before_3_4(
        narr: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    """networkx before 3.4 calls node_link_data's ``edges`` keyword ``link``; the output must not differ."""
    now = json.loads(narr("graph", "world", "--format", "json").stdout)
    real = nx.node_link_data
    assert "edges" in inspect.signature(real).parameters  # this suite's networkx is 3.4 or newer

    def before_3_4(g: Any, attrs: Any = None, *, source: str = "source", target: str = "target",
                   name: str = "id", key: str = "key", link: str = "links") -> Any:
        return real(g, source=source, target=target, name=name, key=key, edges=link)

    monkeypatch.setattr(nx, "node_link_data", before_3_4)
    assert json.loads(narr("graph", "world", "--format", "json").stdout) == now
