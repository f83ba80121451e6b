"""The benchmark harness runs end to end at a tiny size (seconds, not the real benchmarks)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
# Every section the smoke profile has, the server's (auto) too: one run for the module's tests.
SECTIONS = "startup,event,reset,status,engine,reads,bulk,check,growth,import,agents,auto"


@pytest.fixture(scope="module")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], Path]:
    """``run.py --smoke`` over its sections, once: the results and where they were written."""
    where = tmp_path_factory.mktemp("bench")
    out = where / "out"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--smoke", "--only", SECTIONS, "--scratch", str(where / "scratch"),
         "--out", str(out)], capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads((out / "latest.json").read_text(encoding="utf-8")), out


@pytest.mark.slow
def test_benchmark_smoke(smoke: tuple[dict[str, Any], Path]) -> None:
    res, out = smoke
    ops = {c["op"] for c in res["comparisons"]}
    assert {"narr --version", "narr event (3 --set)", "narr log -n 20", "narr show HEAD",
            "narr status (clean)", "narr status (5 hand edits)"} <= ops
    for c in res["comparisons"]:
        assert c["narr"]["median_s"] > 0 and c["git"]["median_s"] > 0
    assert res["check"]["ok"], res["check"]
    assert res["growth"]["bytes_per_event"] > 0
    assert {(e["layout"], e["nodes"]) for e in res["engine"]} == {("sharded", 100), ("flat", 100)}
    assert not [n for n in res.get("notes", []) if "failed" in n], res["notes"]
    assert res["targets"]
    assert "## Targets" in (out / "latest.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_auto_section_runs(smoke: tuple[dict[str, Any], Path]) -> None:
    """The auto section (a server the first command starts) at a tiny size: it once read the
    nodes answer in a shape it no longer has and stopped at its first step."""
    res, _ = smoke
    assert {"auto: narr event (3 --set)", "auto: narr reset HEAD~3", "auto: narr get ID",
            "auto: narr check after one event"} <= {c["op"] for c in res["comparisons"]}
    # each of those rows is held against its target, narr as installed (the server on)
    rows = {t["target"] for t in res["targets"]}
    assert {"`narr event (3 --set)` within 0.8x of git",
            "`narr reset HEAD~3` within 1.0x of git",
            "`narr get ID` under 30 ms",
            "`narr status, the first after an idle exit` within 1.5x of the floor "
            "(`python -c 'import click, pygit2, pydantic'`)",
            "`narr check after one event` under 500 ms"} <= rows
    assert not any(t["target"].startswith("`auto:") for t in res["targets"])
    assert res["library_kept_open"][0]["median_ms"] > 0
    assert res["server_memory"][0]["resident_mib"] > 0
