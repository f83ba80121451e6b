"""The hostile-use campaign of ``benchmarks/stress.py`` at its smoke size, and its whole
bad-input corpus: no state ``narr check`` rejects, no hand edit lost, git fsck clean, every
bad input refused with its exit code and message and nothing changed."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

STRESS = Path(__file__).resolve().parent.parent / "benchmarks" / "stress.py"


def _stress() -> ModuleType:
    spec = importlib.util.spec_from_file_location("narr_stress", STRESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["narr_stress"] = module
    spec.loader.exec_module(module)
    return module


stress = _stress()


def test_the_corpus_is_large_and_well_formed() -> None:
    cases = stress.load_corpus()
    assert len(cases) >= 60
    kinds = {c["name"].split("-", 2)[1] for c in cases}
    assert {"node", "id", "set", "delta", "journal"} <= kinds
    for case in cases:
        assert isinstance(case["args"], list) and case["message"], case["name"]
        assert isinstance(case["exit"], int), case["name"]


@pytest.mark.slow
@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="kills forked narr processes")
def test_smoke_profile_finds_no_failure(tmp_path: Path) -> None:
    parts = stress.run("smoke", scratch=tmp_path)
    assert set(parts) == {"kills", "writers", "bad_inputs", "disk", "exports", "png", "mcp", "chains"}
    assert parts["kills"].tried >= 12
    assert parts["bad_inputs"].tried == len(stress.load_corpus())
    failures = {name: tally.failures for name, tally in parts.items() if tally.failures}
    assert failures == {}
    text = stress.report(parts, "smoke", 0, 0.0)
    assert "| hand edits lost | 0 |" in text and "| bad inputs passed | 0 |" in text
    for count in ("states check rejected", "events lost", "tracebacks", "writes outside the world",
                  "hangs"):
        assert f"| {count} | 0 |" in text
    assert parts["exports"].tried >= 3 and parts["png"].tried == 5 and parts["mcp"].tried >= 18


def test_the_manual_counts_the_corpus() -> None:
    """The manual's reliability table gives the corpus's own counts: stranger-world cases on their row,
    every other bad input on its own."""
    import re

    readme = (STRESS.parent.parent / "docs" / "reliability.md").read_text(encoding="utf-8")
    cases = stress.load_corpus()
    stranger = sum(c["name"].split("-", 2)[1] == "stranger" for c in cases)
    rows = {m.group(1): int(m.group(2)) for m in re.finditer(
        r"^\| (bad inputs from|stranger-world cases from) .*\| ([\d,]+) \| 0 \|$", readme, re.M)}
    assert rows == {"bad inputs from": len(cases) - stranger, "stranger-world cases from": stranger}
