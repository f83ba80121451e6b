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
