"""The labelled evaluation set of the rules diffuser (benchmarks/diffusion.py): no wrong writes."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks" / "diffusion.py"


def bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("narr_bench_diffusion", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_the_evaluation_set_has_no_wrong_writes(tmp_path: Path) -> None:
    mod = bench()
    rows = list(mod.load())
    assert len(rows) >= 200
    assert sum(1 for r in rows if not r["expect"]) >= 80
    assert {r["lang"] for r in rows} == {"en", "zh"}
    assert {"plain", "two actions", "pronoun", "dropped subject", "contrast", "negated", "question",
            "condition", "reported", "ordered", "intended", "hesitated", "imagined",
            "almost", "list"} <= {r["category"] for r in rows}
    report = mod.evaluate(scratch=tmp_path)
    print(f"\n{report.table()}")
    wrong = [(o.text, sorted(o.wrong)) for o in report.outcomes if o.wrong]
    assert wrong == []
    assert report.rate >= 0.9


def test_the_frozen_set_has_no_wrong_writes_on_every_generic_world(tmp_path: Path) -> None:
    """Prose nobody wrote for the rules (tests/data/prose_eval), on worlds made with narr init
    --rules both, en and zh: no wrong write, and at least 85% exact on each."""
    mod = bench()
    rows = list(mod.load(mod.FROZEN / "sentences.jsonl"))
    assert len(rows) >= 150 and {r["lang"] for r in rows} == {"en", "zh"}
    for rules in (None, "en", "zh"):
        report = mod.evaluate_frozen(scratch=tmp_path, rules=rules)
        print(f"\n{report.name}\n{report.table()}")
        wrong = [(o.text, sorted(o.wrong)) for o in report.outcomes if o.wrong]
        assert wrong == []
        assert report.rate >= 0.85


def test_the_trial_set_holds_its_floor_on_every_generic_world(tmp_path: Path) -> None:
    """Prose written from reported wrong writes and their near twins (tests/data/prose_trial),
    frozen before the rules changed for it: at most one wrong write (a reading the repository's
    set disputes: 'set off for' goes there), and at least 85% exact, on worlds made with
    --rules both, en and zh. Before the changes it was 53% exact with 77 wrong writes."""
    mod = bench()
    rows = list(mod.load(mod.TRIAL / "sentences.jsonl"))
    assert len(rows) >= 120 and {r["lang"] for r in rows} == {"en", "zh"}
    assert sum(1 for r in rows if not r["expect"]) >= len(rows) // 3
    assert sum(1 for r in rows if r["expect"]) >= len(rows) // 3
    for rules in (None, "en", "zh"):
        report = mod.evaluate_frozen(mod.TRIAL, scratch=tmp_path, rules=rules)
        print(f"\n{report.name}\n{report.table()}")
        wrong = [o.text for o in report.outcomes if o.wrong]
        assert wrong in ([], ["Ben set off for the Tower."])
        assert report.rate >= 0.85
