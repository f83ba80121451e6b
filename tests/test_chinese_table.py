"""The Chinese word table shipped in the package is jieba's dictionary, with jieba's licence.

jieba is a test and tool dependency only (42 MB installed, for a segmenter narr never
runs); these tests hold the shipped table equal to what ``tools/chinese_table.py`` makes
from the installed jieba, its licence notice with it in the package and the wheel's
metadata, and narr to reading it only when a Chinese name is found, writing nothing.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from helpers import CLI

from narrative.diffusers import zhwords

ROOT = Path(__file__).resolve().parent.parent
TOOL = ROOT / "tools" / "chinese_table.py"
TABLE = ROOT / "narrative" / "diffusers" / "chinese.txt.gz"
LICENCE = ROOT / "narrative" / "diffusers" / "chinese.txt.gz.LICENSE"


def test_the_shipped_table_is_what_the_script_makes_from_jieba() -> None:
    if importlib.util.find_spec("jieba") is None:
        pytest.skip("jieba is not installed (pip install -e '.[test]')")
    spec = importlib.util.spec_from_file_location("chinese_table", TOOL)
    assert spec is not None and spec.loader is not None
    tool = importlib.util.module_from_spec(spec)
    sys.modules["chinese_table"] = tool
    try:
        spec.loader.exec_module(tool)
        assert gzip.decompress(TABLE.read_bytes()) == gzip.decompress(tool.build())
    finally:
        del sys.modules["chinese_table"]


def test_jiebas_licence_travels_with_its_words() -> None:
    notice = LICENCE.read_text(encoding="utf-8")
    assert notice.startswith("The MIT License (MIT)") and "Copyright (c) 2013 Sun Junyi" in notice
    assert "shall be included in all copies or substantial portions of the Software" in " ".join(
        notice.split())
    header = [line for line in gzip.decompress(TABLE.read_bytes()).decode("utf-8").splitlines()[:40]
              if line.startswith("# ")]
    assert "jieba" in header[0] and "MIT" in header[1]
    assert "\n".join(line[2:] for line in header[2:]) == "\n".join(
        line for line in notice.rstrip("\n").splitlines() if line)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "narrative/diffusers/chinese.txt.gz.LICENSE" in project["license-files"]


def test_the_table_is_read_only_when_a_chinese_name_is_found(flat_world: Path) -> None:
    from narrative.api import EventRequest, open_world, run_event

    zhwords.dictionary.cache_clear()
    try:
        world = open_world(flat_world)
        run_event(world, EventRequest(content="Lin Yuan walks to the ferry", diffuser="rules"),
                  dry_run=True)
        assert zhwords.dictionary.cache_info().misses == 0
        run_event(world, EventRequest(content="林远来到渡口", diffuser="rules"), dry_run=True)
        assert zhwords.dictionary.cache_info().misses == 1
    finally:
        zhwords.dictionary.cache_clear()


def test_a_chinese_event_writes_nothing_outside_the_world(tmp_path: Path) -> None:
    """Names inside dictionary words are no names (小白 in 小白菜), and reading the table writes
    no cache: the event runs in a fresh process with a home and a cache directory of its own."""
    root = tmp_path / "w"
    CLI(tmp_path)("init", str(root), "--rules", "zh")
    narr = CLI(root)
    narr("new", "character", "小白")
    narr("new", "background", "杂货铺", "--kind", "place")
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(cache),
           "PYTHONPATH": str(ROOT)}

    def moves(text: str) -> list[str]:
        out = subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), "event", "--dry-run",
                              "--json", text], env=env, capture_output=True, text=True, check=True)
        return [d["target"] for d in json.loads(out.stdout)["diffusions"]
                if d["field"] == "/state/location"]

    assert moves("小白去了杂货铺。") == ["xiao-bai"]
    assert moves("一筐小白菜被送进了杂货铺。") == []
    assert not cache.exists() and list(home.iterdir()) == []
