"""A world cloned from a stranger: links that lead out of the world, attributes that re-encode
its files. narr never reads or writes world content through a link (one message naming it,
nothing changed, nothing written where the link points), and check, status and clone name it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from helpers import CLI, git, narr_subprocess, snapshot

INVALID_WORLD = 13
CHECK_FAILED = 17


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _link_layer(root: Path, layer: str, elsewhere: Path, *, commit: bool = True) -> None:
    """Move a layer's files out of the world and leave a link to them (committed, as a
    stranger's world would have it)."""
    shutil.move(str(root / "world" / layer), str(elsewhere))
    os.symlink(elsewhere, root / "world" / layer)
    if commit:
        git(root, "add", "-A")
        git(root, "commit", "-q", "-m", "a layer elsewhere")


def _refused(narr: CLI, root: Path, elsewhere: Path, *args: str, names: str) -> None:
    before, outside = snapshot(root), _files(elsewhere)
    result = narr(*args, expect=INVALID_WORLD)
    assert result.stderr.splitlines()[0].startswith(f"narr: error: {names}: is a symbolic link")
    assert "Traceback" not in result.stderr
    assert snapshot(root) == before
    assert _files(elsewhere) == outside  # nothing written where the link points


def test_a_linked_layer_folder_is_never_written_through(world: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    narr = CLI(world)
    narr("event", "The bell rings", "--diffuser", "explicit",
         "--set", "temple-bell.state.rung=true")
    _link_layer(world, "ambient", elsewhere)
    _refused(narr, world, elsewhere, "new", "ambient", "Fog", names="world/ambient")
    _refused(narr, world, elsewhere, "reset", "HEAD~2", names="world/ambient")
    fog = tmp_path / "fog.json"
    fog.write_text(json.dumps({"id": "fog", "name": "Fog", "layer": "ambient"}))
    _refused(narr, world, elsewhere, "event", "Fog rolls in", "--diffuser", "explicit",
             "--create", str(fog), names="world/ambient")
    _refused(narr, world, elsewhere, "get", "temple-bell", names="world/ambient")


def test_a_linked_shard_folder_is_never_written_through(sample_worlds: dict[str, Path],
                                                        tmp_path: Path) -> None:
    from narrative.ids import node_path

    world = shutil.copytree(sample_worlds["sharded"], tmp_path / "w", symlinks=True)
    shard = Path(node_path("fog", "ambient", "sharded")).parent
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    (world / shard).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(elsewhere, world / shard)
    narr = CLI(world)
    _refused(narr, world, elsewhere, "new", "ambient", "Fog", names=shard.as_posix())
    assert shard.as_posix() in narr("status").stdout


def test_import_never_writes_through_a_linked_layer(world: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _link_layer(world, "background", elsewhere)
    book = tmp_path / "book.json"
    book.write_text(json.dumps({"entries": {"0": {"key": ["Fog Gate"], "content": "A gate."}}}))
    _refused(CLI(world), world, elsewhere, "import", str(book), names="world/background")


def test_status_check_and_clone_name_the_link(world: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _link_layer(world, "ambient", elsewhere)
    narr = CLI(world)
    status = narr.json("status")
    assert any(p.startswith(f"world/ambient: is a symbolic link (to {elsewhere})")
               for p in status["problems"])
    report = narr.json("check", expect=CHECK_FAILED)
    assert any(p.startswith("world/ambient: is a symbolic link") for p in report["worktree_problems"])

    bare = tmp_path / "shared.git"
    git(tmp_path, "clone", "-q", "--bare", str(world), str(bare))
    proc = narr_subprocess(tmp_path, "clone", str(bare), str(tmp_path / "copy"))
    assert proc.returncode == 0, proc.stderr
    assert "narr: warning: world/ambient: is a symbolic link" in proc.stderr
    assert "Traceback" not in proc.stderr
    out = CLI(tmp_path).json("clone", str(bare), str(tmp_path / "copy2"))
    assert out["warnings"][0].startswith("world/ambient: is a symbolic link")


def test_a_linked_rules_folder_is_not_read(world: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "rules-elsewhere"
    shutil.copytree(world / "rules", elsewhere)
    shutil.rmtree(world / "rules")
    os.symlink(elsewhere, world / "rules")
    narr = CLI(world)
    before = snapshot(world)
    result = narr("event", "Lin Yuan walks to the ferry", expect=INVALID_WORLD)
    assert result.stderr.startswith("narr: error: rules: is a symbolic link")
    assert snapshot(world) == before
    assert narr.json("failed")["items"][0]["content"] == "Lin Yuan walks to the ferry"  # kept


def test_a_linked_rule_file_and_settings_file_are_refused(world: Path, tmp_path: Path) -> None:
    narr = CLI(world)
    rule = sorted((world / "rules").glob("*.toml"))[0]
    outside = tmp_path / rule.name
    shutil.move(str(rule), outside)
    os.symlink(outside, rule)
    result = narr("event", "Lin Yuan walks to the ferry", expect=INVALID_WORLD)
    assert result.stderr.startswith(f"narr: error: rules/{rule.name}: is a symbolic link")
    os.unlink(rule)
    shutil.move(str(outside), rule)

    settings = tmp_path / "narr.toml"
    shutil.move(str(world / "narr.toml"), settings)
    os.symlink(settings, world / "narr.toml")
    before = snapshot(world)
    for args in (["status"], ["log"], ["event", "A beat", "--diffuser", "explicit"]):
        result = narr(*args, expect=INVALID_WORLD)
        assert result.stderr.startswith("narr: error: narr.toml: is a symbolic link"), args
    assert snapshot(world) == before


def test_a_linked_world_folder_is_named(world: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "world-elsewhere"
    shutil.move(str(world / "world"), elsewhere)
    os.symlink(elsewhere, world / "world")
    narr = CLI(world)
    outside = _files(elsewhere)
    result = narr("new", "ambient", "Fog", expect=INVALID_WORLD)
    assert result.stderr.startswith("narr: error: world: is a symbolic link")
    assert _files(elsewhere) == outside


def test_attributes_that_re_encode_world_files_are_named_and_refused(world: Path,
                                                                      tmp_path: Path) -> None:
    (world / ".gitattributes").write_text("world/**/*.json working-tree-encoding=UTF-16LE-BOM\n")
    git(world, "add", ".gitattributes")
    git(world, "commit", "-q", "-m", "encode the node files")
    bare = tmp_path / "shared.git"
    git(tmp_path, "clone", "-q", "--bare", str(world), str(bare))
    proc = narr_subprocess(tmp_path, "clone", str(bare), str(tmp_path / "copy"))
    assert proc.returncode == 0, proc.stderr
    assert "narr: warning: world/ambient/autumn-rain.json: .gitattributes sets " \
           "working-tree-encoding (UTF-16LE-BOM)" in proc.stderr
    copy = tmp_path / "copy"
    narr = CLI(copy)
    assert any("working-tree-encoding" in p for p in narr.json("status")["problems"])
    report = narr.json("check", expect=CHECK_FAILED)
    assert any("working-tree-encoding" in p for p in report["worktree_problems"])
    before = snapshot(copy)
    result = narr("event", "A beat", "--diffuser", "explicit", expect=INVALID_WORLD)
    assert ".gitattributes sets working-tree-encoding" in result.stderr.splitlines()[0]
    assert snapshot(copy) == before


def test_line_ending_attributes_are_no_problem(world: Path) -> None:
    (world / ".gitattributes").write_text("*.json text eol=lf\n")
    git(world, "add", ".gitattributes")
    git(world, "commit", "-q", "-m", "line endings")
    assert CLI(world).json("status")["problems"] == []


def test_check_names_a_node_file_committed_as_a_link(world: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the world\n")
    node = world / "world" / "character" / "lin-yuan.json"
    node.unlink()
    os.symlink(secret, node)
    git(world, "add", "-A")
    git(world, "commit", "-q", "-m", "a node elsewhere")
    narr = CLI(world)
    report = narr.json("check", expect=CHECK_FAILED)
    assert "world/character/lin-yuan.json: is committed as a symbolic link; narr reads and " \
           "writes world files only inside the world" in [p["problem"] for p in report["problems"]]
    result = narr("get", "lin-yuan", expect=INVALID_WORLD)
    assert result.stderr.startswith("narr: error: world/character/lin-yuan.json: is a symbolic link")
    assert "not for the world" not in result.stdout + result.stderr
