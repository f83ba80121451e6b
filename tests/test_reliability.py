"""Reliability under hostile conditions: git settings, crafted private state, a
read-only or full disk, a damaged repository, odd files, and ports without ``fcntl``.

Every failure is one clear message and an exit code, never a traceback, and
leaves the world and its history as they were.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from helpers import CLI, git, node_file, read_node, rel_path, snapshot

from narrative.store import journal

EXPLICIT = ["--diffuser", "explicit"]
ONE_LAYOUT = pytest.mark.parametrize("layout", ["flat"])


def _recheckout(root: Path) -> None:
    """Remove the node files and let git check them out again under its current settings."""
    for path in (root / "world").rglob("*.json"):
        path.unlink()
    git(root, "checkout", "--", "world")


# --- line endings -------------------------------------------------------------------


@pytest.mark.parametrize("setting", ["autocrlf", "gitattributes"])
def test_line_ending_conversion_keeps_every_event(world: Path, narr: CLI, setting: str) -> None:
    if setting == "autocrlf":
        git(world, "config", "core.autocrlf", "true")
    else:
        (world / ".gitattributes").write_text("* text eol=crlf\n", encoding="utf-8")
        git(world, "add", ".gitattributes")
        git(world, "commit", "-q", "-m", "line endings")
    _recheckout(world)
    assert b"\r\n" in node_file(world, "lin-yuan").read_bytes()

    result = narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert "changed while the event" not in result.stderr
    assert read_node(world, "lin-yuan")["state"]["mood"] == "calm"
    # what git itself would have checked out: git sees nothing to commit
    assert b"\r\n" in node_file(world, "lin-yuan").read_bytes()
    assert git(world, "status", "--porcelain") == ""

    # a hand edit keeps its line endings and is recorded as what it is
    path = node_file(world, "lin-yuan")
    path.write_bytes(path.read_bytes().replace(b'"calm"', b'"wary"'))
    log = narr.json("event", "a beat", *EXPLICIT)
    assert [(e["target"], e["new_value"]) for e in log["edits"]] == [("lin-yuan", "wary")]
    narr("event", "undo nothing", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert git(world, "status", "--porcelain") == ""
    assert narr.json("check")["ok"]
    last = narr.json("show", "HEAD")
    assert last["edits"] == []
    narr("reset", "HEAD~1")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wary"
    assert git(world, "status", "--porcelain") == ""


# --- a crafted journal ----------------------------------------------------------------


def _crafted_journal(root: Path, path: str) -> dict[str, Any]:
    head = git(root, "rev-parse", "HEAD").strip()
    blob = git(root, "rev-parse", f"HEAD:{rel_path(root, 'lin-yuan', 'character')}").strip()
    return {"ref": "refs/heads/main", "old": head, "new": head, "message": "crafted",
            "updates": [{"path": path, "before": None, "after": blob, "index": None}]}


@ONE_LAYOUT
@pytest.mark.parametrize("path", ["../../x", "world/../../x", "/tmp/x", "world/character/../../x",
                                  ".git/config", "world\\..\\..\\x", "narr.toml"])
def test_a_crafted_journal_is_set_aside_not_executed(world: Path, narr: CLI, path: str) -> None:
    narr_dir = world / ".git" / "narr"
    (narr_dir / "journal.json").write_text(json.dumps(_crafted_journal(world, path)))
    before = snapshot(world)
    result = narr("status")
    assert "journal narr did not write" in result.stderr
    assert ".git/narr/journal.rejected.json" in result.stderr
    assert not (world.parent.parent / "x").exists() and not (world.parent / "x").exists()
    assert snapshot(world) == before
    assert not (narr_dir / "journal.json").exists()
    assert (narr_dir / "journal.rejected.json").exists()
    narr("event", "on we go", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert narr.json("check")["ok"]


@ONE_LAYOUT
@pytest.mark.parametrize("payload", ["[]", '{"ref": 1}', "not json", '{"ref": "refs/heads/main", '
                                     '"old": null, "new": "x", "message": "", "updates": [1]}'])
def test_a_malformed_journal_is_set_aside(world: Path, narr: CLI, payload: str) -> None:
    (world / ".git" / "narr" / "journal.json").write_text(payload)
    result = narr("event", "on we go", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert "journal narr did not write" in result.stderr
    assert (world / ".git" / "narr" / "journal.rejected.json").read_text() == payload
    assert read_node(world, "lin-yuan")["state"]["mood"] == "calm"


# --- a read-only world --------------------------------------------------------------

STORAGE = 19
READERS = [("status",), ("check",), ("log",), ("nodes",), ("get", "lin-yuan")]


def _can_mount_read_only() -> bool:
    if not shutil.which("unshare"):
        return False
    proc = subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind -o ro / / 2>/dev/null"],
                          capture_output=True)
    return proc.returncode == 0


@ONE_LAYOUT
@pytest.mark.skipif(not _can_mount_read_only(), reason="needs a private read-only bind mount")
def test_a_read_only_mount_is_read_not_written(world: Path, narr: CLI) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    for leftover in (world / ".git" / "narr").glob("lock*"):
        leftover.unlink()
    before = snapshot(world)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        script = (f"mount --bind -o ro {world} {world} && mount -o remount,bind,ro {world} {world}"
                  f" && exec {sys.executable} -m narrative -C {world} \"$@\"")
        return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", *args],
                              capture_output=True, text=True)

    for args in READERS:
        proc = run(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert proc.stderr == ""
    proc = run("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild")
    assert proc.returncode == STORAGE
    assert proc.stderr.startswith("narr: error: the world is read-only: cannot write ")
    assert "Traceback" not in proc.stderr
    assert snapshot(world) == before


def _refuse_writes(monkeypatch: pytest.MonkeyPatch, root: Path, code: int,
                   match: str = "") -> None:
    """Make the file system refuse to create files under ``root/.git`` (as root, chmod cannot)."""
    real_open = os.open
    git_dir = str(root / ".git")

    def fake_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if (str(path).startswith(git_dir) and match in str(path)
                and flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR)):
            raise OSError(code, os.strerror(code), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", fake_open)


@ONE_LAYOUT
def test_a_read_only_world_is_read_without_writing(world: Path, narr: CLI,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    (world / ".git" / "narr" / "catalog.sqlite").unlink()  # the cache, too, must do without
    before = snapshot(world)
    narr_dir = str(world / ".git" / "narr")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if (
        str(p).startswith(narr_dir) and mode & os.W_OK) else real_access(p, mode, **kw))
    _refuse_writes(monkeypatch, world, errno.EROFS)
    for args in READERS:
        assert narr(*args).stderr == ""
    assert narr.json("get", "lin-yuan")["node"]["state"]["mood"] == "calm"
    result = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild", expect=STORAGE)
    assert result.stderr.startswith(
        f"narr: error: the world is read-only: cannot write {world / '.git/narr/lock'}")
    assert snapshot(world) == before
    assert not (world / ".git" / "narr" / "catalog.sqlite").exists()


# --- a full disk ----------------------------------------------------------------------


@ONE_LAYOUT
def test_a_full_disk_at_the_lock_keeps_the_event(world: Path, narr: CLI,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    before = snapshot(world)
    with monkeypatch.context() as patch:
        _refuse_writes(patch, world, errno.ENOSPC, match="lock")
        result = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild",
                      expect=STORAGE)
    assert result.stderr.splitlines()[0].startswith("narr: error: the disk is full: cannot write ")
    assert "narr event --retry" in result.stderr
    assert snapshot(world) == before
    narr("event", "--retry")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wild"
    assert narr.json("check")["ok"]


def _full_disk_for(monkeypatch: pytest.MonkeyPatch, prefix: str) -> None:
    """Writes of temporary files named ``prefix...`` fail as on a full disk."""
    real_open = open

    def fake_open(file: Any, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "w" in mode and Path(file).name.startswith(prefix):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(file))
        return real_open(file, mode, *args, **kwargs)

    monkeypatch.setattr(journal, "open", fake_open, raising=False)


@ONE_LAYOUT
def test_a_full_disk_before_the_story_moves_changes_nothing(
        world: Path, narr: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    before, head = snapshot(world), git(world, "rev-parse", "HEAD")
    with monkeypatch.context() as patch:
        _full_disk_for(patch, "journal.json")
        result = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild",
                      expect=STORAGE)
    assert result.stderr.splitlines()[0] == (
        f"narr: error: the disk is full: cannot write {world / '.git/narr/journal.json'} "
        "(No space left on device)")
    assert git(world, "rev-parse", "HEAD") == head
    assert snapshot(world) == before
    assert list((world / ".git" / "narr" / "tmp").iterdir()) == []  # nothing half-written
    narr("event", "--retry")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wild"


@ONE_LAYOUT
def test_a_full_disk_before_a_reset_moves_keeps_no_extra_copies(
        world: Path, narr: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "su-qing.state.mood=calm")
    path = node_file(world, "lin-yuan")
    path.write_text(path.read_text().replace('"anxious"', '"wary"'))
    before = snapshot(world)
    with monkeypatch.context() as patch:
        _full_disk_for(patch, "journal.json")
        result = narr("reset", "HEAD~1", expect=STORAGE)
    assert "nothing was changed" in result.stderr
    assert snapshot(world) == before  # no set-aside edits, no abandoned chain left behind
    assert narr.json("reset", "HEAD~1")["set_aside"]
    assert len(narr.json("edits")["items"]) == 1


@ONE_LAYOUT
def test_a_full_disk_after_the_story_moved_is_finished_later(
        world: Path, narr: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as patch:
        _full_disk_for(patch, "lin-yuan.json")
        result = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild",
                      expect=STORAGE)
    assert "the story has moved" in result.stderr
    assert narr.json("failed")["items"] == [] or "storm" not in json.dumps(narr.json("failed")["items"])
    result = narr("status")
    assert "finished an interrupted narr command" in result.stderr
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wild"
    assert narr.json("check")["ok"]


@ONE_LAYOUT
def test_a_full_cache_is_a_clear_error(world: Path, narr: CLI,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from narrative.store.catalog import Catalog

    def full(*args: Any, **kwargs: Any) -> None:
        raise sqlite3.OperationalError("database or disk is full")

    with monkeypatch.context() as patch:
        patch.setattr(Catalog, "apply", full)
        narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
        patch.setattr(Catalog, "sync", full)
        result = narr("nodes", expect=STORAGE)
    assert result.stderr.startswith("narr: error: the disk is full: narr's cache cannot be written")
    assert narr.json("check")["ok"]
    assert "lin-yuan" in narr("nodes").stdout


# --- no fcntl (Windows) -----------------------------------------------------------------

WITHOUT_FCNTL = """
import os, sys, warnings
sys.modules["fcntl"] = None  # as on Windows: importing it fails
del os.pwrite
warnings.simplefilter("ignore")
from narrative.cli import main
main(sys.argv[1:])
"""

HOLD_WITHOUT_FCNTL = """
import os, sys, time, warnings
sys.modules["fcntl"] = None
warnings.simplefilter("ignore")
from pathlib import Path
from narrative.store.lock import WriteLock
lock = WriteLock(Path(sys.argv[1]), timeout=0)
lock.acquire()
print("held", flush=True)
sys.stdin.readline()
lock.release()
"""


@ONE_LAYOUT
def test_the_lock_works_without_fcntl(world: Path) -> None:
    def narr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", WITHOUT_FCNTL, "-C", str(world), *args],
                              capture_output=True, text=True,
                              env={**os.environ, "NARR_LOCK_TIMEOUT": "0.2"})

    proc = narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert proc.returncode == 0, proc.stderr
    assert read_node(world, "lin-yuan")["state"]["mood"] == "calm"
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WITHOUT_FCNTL,
                               str(world / ".git" / "narr" / "lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdin is not None
    try:
        assert holder.stdout.readline() == "held\n"
        busy = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild")
        assert busy.returncode == 15
        assert busy.stderr.startswith(
            f"narr: error: another narr process (pid {holder.pid}: -c ")
        assert narr("status").returncode == 0
    finally:
        holder.stdin.write("\n")
        holder.stdin.close()
        holder.wait(10)
        holder.stdout.close()
    assert narr("event", "--retry").returncode == 0
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wild"


# --- a damaged repository -------------------------------------------------------------

DAMAGED = 17


def _loose_object(root: Path, rev: str) -> Path:
    oid = git(root, "rev-parse", rev).strip()
    path = root / ".git" / "objects" / oid[:2] / oid[2:]
    assert path.exists()
    path.chmod(0o644)
    return path


@ONE_LAYOUT
def test_a_corrupt_blob_is_reported_not_a_traceback(world: Path, narr: CLI) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    _loose_object(world, f"HEAD:{rel_path(world, 'lin-yuan', 'character')}").write_bytes(b"junk")
    result = narr("check", expect=DAMAGED)
    assert result.stderr.startswith("narr: error: check failed: the repository is damaged: ")
    assert "git fsck" in result.stderr
    result = narr("get", "lin-yuan", "--at", "HEAD", expect=DAMAGED)
    assert result.stderr.startswith("narr: error: the repository is damaged: ")
    # status reads the blob only when git's stat cache cannot vouch for the file (a racy
    # entry): then it names the damage; otherwise it has nothing to say about it
    from click.testing import CliRunner

    from narrative.cli import main

    result = CliRunner().invoke(main, ["-C", str(world), "status"], catch_exceptions=False)
    assert result.exit_code in (0, DAMAGED), result.stderr
    if result.exit_code:
        assert result.stderr.startswith("narr: error: the repository is damaged: ")


@ONE_LAYOUT
def test_a_missing_head_commit_is_reported(world: Path, narr: CLI) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    _loose_object(world, "HEAD").unlink()
    assert "the repository is damaged" in narr("check", expect=DAMAGED).stderr
    result = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild", expect=DAMAGED)
    assert result.stderr.startswith("narr: error: the repository is damaged: ")


@ONE_LAYOUT
def test_a_dangling_abandoned_chain_is_skipped(world: Path, narr: CLI) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    narr("reset", "HEAD~1")
    dangling = world / ".git" / "refs" / "narr" / "abandoned" / "0-lost-main"
    dangling.write_text("1234567890123456789012345678901234567890\n")
    assert len(narr.json("chains")["items"]) == 1
    assert "refs/narr/abandoned/0-lost-main names a commit" in narr("check").stderr
    narr("replay", "1")
    assert read_node(world, "lin-yuan")["state"]["mood"] == "calm"


@ONE_LAYOUT
def test_a_shallow_clone_is_named_not_broken(world: Path, narr: CLI, tmp_path: Path) -> None:
    for mood in ("calm", "wary"):
        narr("event", f"now {mood}", *EXPLICIT, "--set", f"lin-yuan.state.mood={mood}")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{world}", str(clone)],
                   check=True)
    result = CLI(clone)("check")
    assert result.stderr.startswith("narr: warning: this is a shallow clone: the history before ")
    assert result.stdout.startswith("ok: ")
    CLI(clone)("event", "on", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    assert CLI(clone).json("check")["ok"]


# --- odd files, odd pointers, odd settings ------------------------------------------------


@ONE_LAYOUT
def test_a_directory_or_fifo_named_like_a_node_is_flagged(world: Path, narr: CLI) -> None:
    (world / "world" / "character" / "ghost.json").mkdir()
    os.mkfifo(world / "world" / "item" / "pipe.json")
    result = narr("check", expect=17)
    assert result.stdout.splitlines() == [
        "working tree: world/character/ghost.json: is a directory where a node file was expected",
        "working tree: world/item/pipe.json: is not a regular file (a FIFO, socket or device); "
        "node files must be regular files"]


@ONE_LAYOUT
def test_a_fifo_in_place_of_a_node_file_is_refused_not_read(world: Path, narr: CLI) -> None:
    path = node_file(world, "black-ring")
    path.unlink()
    os.mkfifo(path)  # reading it would wait for ever (and snapshot() would read it)
    head = git(world, "rev-parse", "HEAD")
    result = narr("event", "storm", *EXPLICIT, "--set", "lin-yuan.state.mood=wild", expect=13)
    assert "black-ring.json: is not a regular file (a FIFO, socket or device)" in result.stderr
    assert git(world, "rev-parse", "HEAD") == head
    assert read_node(world, "lin-yuan")["state"]["mood"] == "anxious"


@ONE_LAYOUT
@pytest.mark.parametrize("spec", ["lin-yuan/state/a~2b=1", "lin-yuan/state/a~=1", "lin-yuan/a~b=1"])
def test_an_invalid_pointer_escape_is_refused(world: Path, narr: CLI, spec: str) -> None:
    before = snapshot(world)
    result = narr("event", "odd", *EXPLICIT, "--set", spec, expect=12)
    assert result.stderr.startswith(f"narr: error: --set {spec!r}: field '/")
    assert "'~' must be written '~0' in a JSON pointer" in result.stderr
    assert snapshot(world) == before
    narr("event", "fine", *EXPLICIT, "--set", "lin-yuan/state/a~0b=1", "--set", "lin-yuan.state.c~2=2")
    assert {"a~b": 1, "c~2": 2}.items() <= read_node(world, "lin-yuan")["state"].items()


def test_a_name_with_control_characters_makes_a_valid_settings_file(tmp_path: Path) -> None:
    from narrative.engine.init import init_world
    from narrative.store.worldrepo import load_config

    name = "bad\x01name\ttab \"quoted\" \\ \x7f"
    init_world(tmp_path / "w", name=name)
    assert load_config(tmp_path / "w").name == name
    assert CLI(tmp_path / "w").json("status")["branch"] == "main"


@ONE_LAYOUT
def test_a_misspelt_setting_is_named(world: Path, narr: CLI) -> None:
    toml = world / "narr.toml"
    toml.write_text(toml.read_text().replace("layout =", "layuot =") + "\n[extra]\nx = 1\n")
    result = narr("status")
    assert result.stderr == (
        "narr: warning: narr.toml: unknown keys world.layuot, extra (ignored; known keys: "
        "world.name, world.language, world.layout, diffuser.default, import.user, pov.inner, "
        "pov.outward, pov.hidden, [references])\n")


# --- hand edits committed with plain git ------------------------------------------------


@ONE_LAYOUT
def test_adopt_makes_a_plain_commit_hand_edits_again(world: Path, narr: CLI) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    last = git(world, "rev-parse", "HEAD").strip()
    path = node_file(world, "lin-yuan")
    path.write_text(path.read_text().replace('"calm"', '"wary"'))
    (world / "notes.txt").write_text("a note\n")
    git(world, "add", "notes.txt")
    git(world, "commit", "-q", "-am", "oops")
    plain = git(world, "rev-parse", "HEAD").strip()
    before = snapshot(world)
    result = narr("check", expect=17)
    assert result.stderr.splitlines()[-1] == (
        "hint: plain git commits changed world/; narr adopt moves the branch back to the last "
        "event and keeps their changes as hand edits (the next event records them; the "
        "commits stay under refs/narr/adopted/)")
    out = narr.json("adopt")
    assert (out["from"], out["to"]) == (plain, last)
    assert [c["commit"] for c in out["adopted"]] == [plain]
    assert out["world_paths"] == [rel_path(world, "lin-yuan", "character")]
    assert out["other_paths"] == ["notes.txt"]
    assert out["kept_as"].startswith("refs/narr/adopted/") and out["kept_as"].endswith("-main")
    assert git(world, "rev-parse", out["kept_as"]).strip() == plain
    assert git(world, "rev-parse", "HEAD").strip() == last
    after = snapshot(world)
    assert {k: v for k, v in after.items() if not k.startswith(".git")} == {
        k: v for k, v in before.items() if not k.startswith(".git")}
    assert "?? notes.txt" in git(world, "status", "--porcelain")
    edits = narr.json("status")["edits"]
    assert [(e["target"], e["new_value"]) for e in edits] == [("lin-yuan", "wary")]
    log = narr.json("event", "a beat", *EXPLICIT)
    assert [(e["target"], e["new_value"]) for e in log["edits"]] == [("lin-yuan", "wary")]
    assert narr.json("check")["ok"]
    assert git(world, "fsck", "--no-dangling", "--no-progress").strip() == ""


@ONE_LAYOUT
def test_adopt_refuses_when_there_is_nothing_to_adopt(world: Path, narr: CLI) -> None:
    before = snapshot(world)
    result = narr("adopt", expect=16)
    assert result.stderr == ("narr: error: HEAD is a narr event: there are no plain commits "
                             "to adopt\nhint: narr status shows the hand edits the next event "
                             "records\n")
    assert snapshot(world) == before
    (world / "notes.txt").write_text("a note\n")
    git(world, "add", "notes.txt")
    git(world, "commit", "-q", "-m", "notes")
    result = narr("adopt", expect=16)
    assert "the 1 plain commit after the last event do not change world/" in result.stderr
    git(world, "checkout", "-q", "--detach")
    result = narr("adopt", expect=12)
    assert "HEAD is detached" in result.stderr


@ONE_LAYOUT
def test_an_event_waits_until_a_plain_commit_of_the_world_is_adopted(world: Path, narr: CLI) -> None:
    """An event on top of a ``git commit -am`` would bury it where narr adopt cannot reach and
    narr check would fail for good: status says so, the event is refused and kept, and after
    narr adopt it records the committed hand edit."""
    path = node_file(world, "lin-yuan")
    path.write_text(path.read_text().replace('"anxious"', '"wary"'))
    git(world, "commit", "-q", "-am", "oops")
    plain = git(world, "rev-parse", "--short=10", "HEAD").strip()
    status = narr("status")
    assert f"the plain git commit {plain} 'oops' changed world/" in status.stderr
    assert "narr adopt" in narr.json("status")["warnings"][0]
    before = snapshot(world)
    refused = narr("event", "a beat", *EXPLICIT, expect=14)
    assert refused.stderr.startswith(f"narr: error: the plain git commit {plain} 'oops' changed world/")
    assert "narr adopt makes its changes hand edits again" in refused.stderr
    assert "narr event --retry" in refused.stderr
    assert {k: v for k, v in snapshot(world).items() if not k.startswith(".git")} == {
        k: v for k, v in before.items() if not k.startswith(".git")}
    assert git(world, "rev-parse", "--short=10", "HEAD").strip() == plain
    narr("adopt")
    done = narr.json("event", "--retry")
    assert [(e["target"], e["new_value"]) for e in done["edits"]] == [("lin-yuan", "wary")]
    assert narr.json("check")["ok"]


@ONE_LAYOUT
def test_a_plain_commit_under_later_events_gets_a_fix_that_works(
        world: Path, narr: CLI, monkeypatch: pytest.MonkeyPatch) -> None:
    """A world where an older narr recorded an event on top of a plain commit of world/: the
    check's hint is a way out that works, not narr adopt (which cannot reach it)."""
    import narrative.engine.adopt

    path = node_file(world, "lin-yuan")
    last = git(world, "rev-parse", "--short=10", "HEAD").strip()
    path.write_text(path.read_text().replace('"anxious"', '"wary"'))
    git(world, "commit", "-q", "-am", "oops")
    plain = git(world, "rev-parse", "--short=10", "HEAD").strip()
    with monkeypatch.context() as m:
        m.setattr(narrative.engine.adopt, "unadopted", lambda wr, head: None)
        narr("event", "a beat", *EXPLICIT, "--set", "su-qing.state.mood=bored")
    hint = narr("check", expect=17).stderr.splitlines()[-1]
    assert hint == (f"hint: plain git commit {plain} lies under later events, where narr adopt "
                    f"cannot reach it: narr reset {last} (the last event before it; the later "
                    f"commits are kept as a chain), make its change again by hand (git show "
                    f"{plain} -- world/) and record it with an event, then narr replay the chain "
                    "--reuse")
    narr("reset", last)
    path.write_text(path.read_text().replace('"anxious"', '"wary"'))
    narr("event", "Lin Yuan grows wary", *EXPLICIT)
    narr("replay", "1", "--reuse")
    assert narr.json("check")["ok"]
    assert read_node(world, "lin-yuan")["state"]["mood"] == "wary"
    assert read_node(world, "su-qing")["state"]["mood"] == "bored"


@ONE_LAYOUT
def test_adopt_refuses_during_a_git_merge(world: Path, narr: CLI) -> None:
    narr("event", "calm down", *EXPLICIT, "--set", "lin-yuan.state.mood=calm")
    head = git(world, "rev-parse", "HEAD").strip()
    (world / ".git" / "MERGE_HEAD").write_text(head + "\n")
    result = narr("adopt", expect=14)
    assert "a git merge is in progress" in result.stderr
    assert git(world, "rev-parse", "HEAD").strip() == head
