"""Every console session of README.md and docs/ runs, and prints what the page says it prints.

How a page marks a session, and the output that varies from run to run: docs/sessions.md.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from doc_sessions import ROOT, Block, Ids, compare, documents, parse, run_block, sample_world, sessions, start

SESSIONS = sessions()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample world a session starts in, made once by the session's own command and copied."""
    return sample_world(tmp_path_factory.mktemp("doc-sample"))


def test_every_console_block_is_found() -> None:
    blocks = [b for path in documents() for b in parse(path)]
    fences = sum(1 for path in documents() for line in path.read_text(encoding="utf-8").splitlines()
                 if line.strip() == "```console")
    assert len(blocks) == fences
    assert any(b.path.name == "README.md" for b in blocks)
    assert len(SESSIONS) >= 10


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_session(name: str, tmp_path: Path, sample: Path) -> None:
    blocks: list[Block] = SESSIONS[name]
    skipped = [b.option("skip") for b in blocks if b.option("skip")]
    if skipped:
        assert len(skipped) == len(blocks), f"{name}: skip every block of a session or none"
        pytest.skip(f"not run: {skipped[0]}")
    session = start(blocks, tmp_path, sample)
    problems: list[str] = []
    for block in blocks:
        problems += run_block(session, block)
        if problems:
            break
    assert not problems, "\n\n".join(problems)


def test_skipped_sessions_say_why_and_are_few() -> None:
    skipped = {name: [b.option("skip") for b in blocks] for name, blocks in SESSIONS.items()
               if any(b.option("skip") for b in blocks)}
    assert all(reason and len(reason) > 10 for reasons in skipped.values() for reason in reasons)
    assert len(skipped) <= 3, skipped


def test_varying_output_matches_and_ids_stay_bound() -> None:
    ids = Ids()
    assert compare("[main a6a54fa93f] A beat\nok", "[main 0123456789] A beat\nok", ids) is None
    assert compare("a6a54fa A beat", "0123456 A beat", ids) is None  # the same commit, shorter
    problem = compare("a6a54fa A beat", "fedcba9 A beat", ids)
    assert problem is not None and "one id" in problem
    assert compare("b7b7b7b7b7 other", "0123456789 other", ids) is not None  # one id, two names
    assert compare("kept as rain-stops-a6a5 (x)", "kept as rain-stops-0123 (x)", ids) is None
    assert compare("kept as rain-stops-a6a5 (x)", "kept as rain-stops-4567 (x)", ids) is not None
    assert compare("abandoned 2026-11-30 13:11", "abandoned 2027-01-02 08:05", Ids()) is None
    assert compare("at 2026-11-30T10:45:00Z", "at 2026-11-30 10:45", Ids()) is not None
    uuid = "01a22c20-533d-7769-a41a-51b780cec3aa"
    assert compare(f"event {uuid} (x)", "event 019ad1c3-6f3e-7e4a-9a7b-0c1d2e3f4a5b (x)", Ids()) is None
    # two events of one moment share their leading digits: still two ids
    both = Ids()
    assert compare(f"{uuid} {uuid[:-4]}ffff", "019ad1c3-6f3e-7e4a-9a7b-0c1d2e3f4a5b "
                   "019ad1c4-0000-7e4a-9a7b-0c1d2e3f0000", both) is None


def test_ellipsis_and_literal_text() -> None:
    assert compare("Wrote ... entries", "Wrote 11 entries", Ids()) is None
    assert compare("first\n...\nlast", "first\nsome\nlines\nlast", Ids()) is None
    assert compare("first\n...\nlast", "first\nlast", Ids()) is None
    assert compare("ok: 3 events", "ok: 4 events", Ids()) is not None
    assert compare("", "", Ids()) is None
    assert compare("", "something printed", Ids()) is not None
    assert compare("defaced words", "0123456 words", Ids()) is not None  # no digit: a word, not an id


def test_a_wrong_session_fails(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("<!-- narr-session\nstart: nothing\n-->\n\n```console\n$ echo hello\nhullo\n```\n",
                    encoding="utf-8")
    (block,) = parse(page)
    block.path = ROOT / "docs" / "page.md"  # named as a page of the manual would be
    problems = run_block(start([block], tmp_path), block)
    assert problems and "-hullo" in problems[0] and "+hello" in problems[0]


def _quick_start() -> list[str]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("## Quick start", 1)[1]
    return [block.strip() for block in section.split("```sh\n")[1:3]]


def test_the_quick_start_runs(tmp_path: Path) -> None:
    """The README's one-line quick start, from `narr init` on (the venv and pip install are the
    packaging tests' part: tools/check_dist.py and tools/floors.py install narr that way)."""
    first, tests = (block.split("\n")[0] for block in _quick_start())
    steps = first.split(" && ")
    assert steps[:3] == ["python3 -m venv .venv", ". .venv/bin/activate", "pip install ."]
    assert tests.endswith("pip install -e '.[test]' && python -m pytest -q")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "NARR_NO_SERVER": "1", "NO_COLOR": "1", "PYTHONPATH": str(ROOT)}
    result = subprocess.run(["bash", "-c", " && ".join(steps[3:])], cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    log = result.stdout.split("rules:")[-1]
    for content in ("The rain stops", "林远拿起黑戒，苏晴怀疑林远", "Lin Yuan walks to the ferry"):
        assert content in log
    assert "su-qing /relations/suspects/lin-yuan" in result.stdout
