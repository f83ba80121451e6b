"""``narr serve`` and the thin client: the same bytes as without a server, and nothing missed.

Every test runs real processes (``python -m narrative``, the thin client) against a
real server on a Unix socket, and stops that server when it ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import check_out_again, edit_node, git, include_from_home, node_file, server_not_running

LOCAL = {"NARR_NO_SERVER": "1"}
pytestmark = pytest.mark.usefixtures("servers_by_hand")


def run(root: Path, *args: str, env: dict[str, str] | None = None,
        input: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), *args],
                          capture_output=True, input=input, env={**os.environ, **(env or {})},
                          timeout=60)


def server_status(root: Path) -> dict[str, Any]:
    proc = run(root, "serve", "--status", "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def start(root: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = run(root, "serve", "--detach", "--json", *args, env=env)
    assert proc.returncode == 0, proc.stderr.decode()
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def stop(root: Path, pid: int | None) -> None:
    run(root, "serve", "--stop")
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def served(flat_world: Path) -> Iterator[Path]:
    info = start(flat_world)
    try:
        yield flat_world
    finally:
        stop(flat_world, info.get("pid"))


VARYING = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"  # event ids
                     r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"  # times
                     r"|\b[0-9a-f]{10}\b"  # commits (short)
                     r"|(?<=-)[0-9a-f]{4}\b")  # the tip's hash in an abandoned chain's name


def same(a: subprocess.CompletedProcess[bytes], b: subprocess.CompletedProcess[bytes],
         varying: bool = False) -> None:
    """Equal exit codes, stdout and stderr (ids and times masked when they are made afresh)."""
    def text(data: bytes) -> str:
        return VARYING.sub("*", data.decode()) if varying else data.decode()

    assert (a.returncode, text(a.stdout), text(a.stderr)) == (
        b.returncode, text(b.stdout), text(b.stderr))


def requests(root: Path) -> int:
    return int(server_status(root)["requests"])


READS = [
    ("status",), ("status", "--json"), ("log",), ("log", "--json"), ("show", "HEAD"),
    ("get", "lin-yuan"), ("get", "lin-yuan", "state.location"), ("nodes",), ("nodes", "--json"),
    ("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.location=ferry",
     "--dry-run", "--json"),
    ("get", "no-such-node"), ("get", "no-such-node", "--json"), ("show", "nowhere"),
    ("bogus-command",), ("event",), ("--version",), ("status", "--help"),
]


def test_the_fast_path_prints_the_same_bytes(served: Path) -> None:
    before = requests(served)
    for args in READS:
        same(run(served, *args), run(served, *args, env=LOCAL), varying="--dry-run" in args)
    assert requests(served) - before == len(READS)


def test_writes_through_the_server_match_the_in_process_path(served: Path, tmp_path: Path) -> None:
    twin = tmp_path / "twin"
    shutil.copytree(served, twin, symlinks=True,
                    ignore=shutil.ignore_patterns("server.sock", "server.json", "watch-cookies"))
    args = ("event", "Lin Yuan walks to the ferry", "--set", "lin-yuan.state.location=ferry")
    served_event, local_event = run(served, *args), run(twin, *args, env=LOCAL)
    assert served_event.returncode == local_event.returncode == 0
    same(served_event, local_event, varying=True)  # the commits differ by their time
    same(run(served, "reset", "HEAD~1"), run(twin, "reset", "HEAD~1", env=LOCAL), varying=True)
    same(run(served, "status"), run(twin, "status", env=LOCAL))
    same(run(served, "log", "--json"), run(twin, "log", "--json", env=LOCAL))
    # Standard input reaches a command that reads it.
    content = b"Lin Yuan looks at the river"
    piped = run(served, "event", "-", "--dry-run", input=content)
    assert b"Lin Yuan looks at the river" in piped.stdout
    same(piped, run(served, "event", "-", "--dry-run", input=content, env=LOCAL), varying=True)


def test_hand_edits_are_seen_and_recorded(served: Path) -> None:
    same(run(served, "status"), run(served, "status", env=LOCAL))
    edit_node(served, "lin-yuan", mood="furious")
    new = node_file(served, "black-ring").parent / "strange-stone.json"
    shutil.copy(node_file(served, "black-ring"), new)
    new.write_text(new.read_text("utf-8").replace('"black-ring"', '"strange-stone"'), "utf-8")
    status = run(served, "status", "--json")
    assert status.returncode == 0
    edits = {(e["target"], e["field"]) for e in json.loads(status.stdout)["edits"]}
    assert ("lin-yuan", "/state/mood") in edits
    assert any(node == "strange-stone" for node, _ in edits)
    same(status, run(served, "status", "--json", env=LOCAL))
    event = run(served, "event", "Time passes", "--json")
    assert event.returncode == 0, event.stderr
    recorded = {(e["target"], e["field"]) for e in json.loads(event.stdout)["edits"]}
    assert ("lin-yuan", "/state/mood") in recorded
    clean = run(served, "status", "--json")
    assert json.loads(clean.stdout)["edits"] == []
    same(clean, run(served, "status", "--json", env=LOCAL))
    assert server_status(served)["watcher"]["hinted_scans"] >= 1


def test_plain_git_beside_the_server_is_noticed(served: Path) -> None:
    assert run(served, "event", "Lin Yuan sits", "--set", "lin-yuan.state.mood=calm").returncode == 0
    assert run(served, "status").returncode == 0  # the watcher's knowledge is current
    git(served, "reset", "-q", "--mixed", "HEAD~1")  # the event's changes become hand edits
    seen = run(served, "status", "--json")
    assert ("lin-yuan", "/state/mood") in {(e["target"], e["field"])
                                           for e in json.loads(seen.stdout)["edits"]}
    same(seen, run(served, "status", "--json", env=LOCAL))
    git(served, "commit", "-q", "-am", "by hand")  # plain git records them
    committed = run(served, "status", "--json")
    assert json.loads(committed.stdout)["edits"] == []
    same(committed, run(served, "status", "--json", env=LOCAL))
    # The server's writers keep their repository open between commands: what plain git
    # changed beside it (HEAD, the index, the packs) is what their next event builds on.
    # narr adopt moves HEAD back to the last event and leaves the files: the plain
    # commit's changes are hand edits again, though no file was written.
    assert run(served, "adopt").returncode == 0
    assert b"lin-yuan /state/mood" in run(served, "status").stdout
    git(served, "gc", "-q", "--prune=now")
    for k in range(2):
        event = run(served, "event", f"Lin Yuan waits {k}", "--set", f"lin-yuan.state.mood=w{k}")
        assert event.returncode == 0, event.stderr
        assert (b"hand edit" in event.stdout) == (k == 0) and not event.stderr
        assert git(served, "write-tree").strip() == git(served, "rev-parse", "HEAD^{tree}").strip()
        assert git(served, "status", "--porcelain").strip() == ""
        git(served, "reset", "-q", "--hard", "HEAD")  # rewrites the index file beside the server
    checked = run(served, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_readers_handed_a_used_repository_see_the_disk_as_it_is(served: Path) -> None:
    """Readers reuse the repository handles earlier readers closed: what plain git did in
    between (new commits, a repack that deletes loose objects, a new attributes file, a
    staged hand edit) is what they read, as a fresh process does."""
    reads = [("status", "--json"), ("get", "lin-yuan", "--json"), ("log", "-n", "3")]
    for args in reads:  # the handles are made and handed back
        assert run(served, *args).returncode == 0
    edit_node(served, "lin-yuan", mood="restless")
    git(served, "commit", "-q", "-am", "by hand, behind the server")
    git(served, "gc", "-q", "--prune=now")
    (served / ".gitattributes").write_text("*.json text eol=lf\n", encoding="utf-8")
    edit_node(served, "su-qing", mood="wary")
    git(served, "add", "-A")
    for args in [*reads, ("show", "HEAD"), ("nodes", "--json")]:
        same(run(served, *args), run(served, *args, env=LOCAL))


def test_a_line_ending_setting_made_beside_the_server_is_the_one_it_writes_by(
        served: Path) -> None:
    """``git config core.autocrlf true`` while a server runs, the files checked out again
    with CRLF: the server's readers and writers hash and write them as git now does. Its
    kept repository handles had looked the setting up before; one kept across the change
    took every CRLF file for a hand edit and left an event's change out of the file."""
    _served_follows(served, lambda: git(served, "config", "core.autocrlf", "true"))


def test_a_setting_made_in_an_included_file_is_the_one_the_server_writes_by(
        flat_world: Path) -> None:
    """The same, the setting made in a file git's config includes, which was not there when
    the server started."""
    crlf = include_from_home(flat_world, "crlf.gitconfig")
    info = start(flat_world)
    try:
        _served_follows(flat_world, lambda: git(flat_world, "config", "--file", str(crlf),
                                                "core.autocrlf", "true"))
    finally:
        stop(flat_world, info.get("pid"))


def test_a_file_git_s_settings_stop_ignoring_is_seen_through_the_server(served: Path) -> None:
    """A node file ignored through ``core.excludesFile``, found ignored by a served scan, then
    the setting taken away: the next served status finds the new node as a new process does
    (the watcher's memory of the file is of the settings before)."""
    excludes = served.parent / "excludes"
    excludes.write_text("jade-cup.json\n")
    git(served, "config", "core.excludesFile", str(excludes))
    node = json.loads(node_file(served, "black-ring").read_text())
    node.update(id="jade-cup", name="Jade cup", aliases=[])
    (served / "world" / "item" / "jade-cup.json").write_text(json.dumps(node, indent=2))
    for _ in range(2):  # a whole scan, then one the watcher narrows
        seen = run(served, "status", "--json")
        assert json.loads(seen.stdout)["edits"] == [], seen.stderr
    git(served, "config", "--unset", "core.excludesFile")
    seen = run(served, "status", "--json")
    assert [e["target"] for e in json.loads(seen.stdout)["edits"]] == ["jade-cup"]
    same(seen, run(served, "status", "--json", env=LOCAL))


def test_a_setting_included_on_one_branch_counts_through_the_server_once_it_is_current(
        flat_world: Path) -> None:
    """``[includeIf "onbranch:drafts"]``: the switch itself changes no config file, and the
    server's next event writes by the setting all the same."""
    (flat_world / ".git" / "crlf.gitconfig").write_text("[core]\n\tautocrlf = true\n")
    git(flat_world, "config", "includeIf.onbranch:drafts.path", "crlf.gitconfig")
    info = start(flat_world)
    try:
        assert run(flat_world, "event", "Lin Yuan sits", "--set",
                   "lin-yuan.state.mood=calm").returncode == 0
        assert b"\r\n" not in node_file(flat_world, "lin-yuan").read_bytes()
        assert run(flat_world, "switch", "-c", "drafts").returncode == 0
        event = run(flat_world, "event", "Su Qing grows wary", "--diffuser", "explicit",
                    "--set", "su-qing.state.mood=wary")
        assert event.returncode == 0, event.stderr
        written = node_file(flat_world, "su-qing").read_bytes()
        assert b'"wary"' in written and b"\r\n" in written  # as git checks it out there
        same(run(flat_world, "status", "--json"), run(flat_world, "status", "--json", env=LOCAL))
    finally:
        stop(flat_world, info.get("pid"))


def _served_follows(served: Path, change: Callable[[], object]) -> None:
    for args in [("status", "--json"), ("event", "Lin Yuan sits", "--set",
                                        "lin-yuan.state.mood=calm")]:
        assert run(served, *args).returncode == 0  # the handles are made, settings looked up
    change()
    check_out_again(served)
    assert b"\r\n" in node_file(served, "su-qing").read_bytes()
    ring = node_file(served, "black-ring")
    ring.write_bytes(ring.read_bytes().replace(b'"cold"', b'"warm"'))
    seen = run(served, "status", "--json")
    assert [e["target"] for e in json.loads(seen.stdout)["edits"]] == ["black-ring"]
    same(seen, run(served, "status", "--json", env=LOCAL))
    event = run(served, "event", "Su Qing grows wary", "--json", "--diffuser", "explicit",
                "--set", "su-qing.state.mood=wary")
    assert event.returncode == 0, event.stderr
    assert [e["target"] for e in json.loads(event.stdout)["edits"]] == ["black-ring"]
    assert b'"wary"' in node_file(served, "su-qing").read_bytes()
    assert b"\r\n" in node_file(served, "su-qing").read_bytes()  # as git checks it out
    assert git(served, "status", "--porcelain") == ""


def test_the_index_the_server_leaves_is_the_one_git_and_narr_expect(served: Path) -> None:
    """Through a server, scans answer from what the watcher remembers of the index and an
    event skips rebuilding the index's cached trees: git must still find index == HEAD,
    and a narr without the server too; an edit afterwards is still seen."""
    for k in range(3):
        assert run(served, "event", f"Step {k}", "--set", f"lin-yuan.state.mood=m{k}").returncode == 0
        assert b"Nothing to record" in run(served, "status").stdout
    assert run(served, "reset", "HEAD~2").returncode == 0
    assert b"Nothing to record" in run(served, "status").stdout
    assert git(served, "write-tree").strip() == git(served, "rev-parse", "HEAD^{tree}").strip()
    assert git(served, "status", "--porcelain").strip() == ""
    same(run(served, "status"), run(served, "status", env=LOCAL))
    edit_node(served, "black-ring", warmth="warm")
    seen = run(served, "status", "--json")
    assert [(e["target"], e["field"]) for e in json.loads(seen.stdout)["edits"]] == [
        ("black-ring", "/state/warmth")]
    same(seen, run(served, "status", "--json", env=LOCAL))


def test_a_killed_server_is_not_waited_for_and_nothing_is_lost(flat_world: Path) -> None:
    info = start(flat_world)
    try:
        assert run(flat_world, "event", "Lin Yuan waits", "--set",
                   "lin-yuan.state.mood=patient").returncode == 0
        os.kill(info["pid"], signal.SIGKILL)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(info["pid"], 0)
            except ProcessLookupError:
                break
            time.sleep(0.02)
        edit_node(flat_world, "lin-yuan", mood="restless")
        after = run(flat_world, "status")
        assert after.returncode == 0 and b"restless" in after.stdout
        same(after, run(flat_world, "status", env=LOCAL))
        event = run(flat_world, "event", "Lin Yuan stands", "--set", 'lin-yuan.state.location="gate"')
        assert event.returncode == 0, event.stderr
        log = run(flat_world, "log", "--json")
        assert [e["content"] for e in json.loads(log.stdout)["items"]][:2] == ["Lin Yuan stands",
                                                                     "Lin Yuan waits"]
        assert server_status(flat_world) == server_not_running()
    finally:
        stop(flat_world, info["pid"])


def test_a_read_runs_while_a_write_is_in_progress(flat_world: Path, tmp_path: Path) -> None:
    slow = tmp_path / "slow.py"
    slow.write_text("import sys, time\nsys.stdin.read()\ntime.sleep(1.5)\nprint('{\"ops\": []}')\n",
                    "utf-8")
    env = {"NARR_EXEC_COMMAND": f"{sys.executable} {slow}", "NARR_EXEC_TIMEOUT": "20"}
    info = start(flat_world, env=env)
    try:
        writer = subprocess.Popen(
            [sys.executable, "-m", "narrative", "-C", str(flat_world), "event", "Lin Yuan runs",
             "--diffuser", "exec", "--set", 'lin-yuan.state.location="gate"'],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, **env})
        time.sleep(0.5)
        began = time.monotonic()
        reader = run(flat_world, "log", "-n", "1", env=env)
        took = time.monotonic() - began
        _, werr = writer.communicate(timeout=30)
        assert writer.returncode == 0, werr
        assert reader.returncode == 0
        assert took < 1.0, f"the read waited for the write ({took:.2f}s)"
        assert b"Lin Yuan runs" not in reader.stdout
        assert b"Lin Yuan runs" in run(flat_world, "log", "-n", "1", env=env).stdout
    finally:
        stop(flat_world, info["pid"])


def test_an_overflowing_watcher_means_a_full_scan(flat_world: Path) -> None:
    info = start(flat_world, env={"NARR_WATCH_LIMIT": "3"})
    try:
        run(flat_world, "status")  # the first scan is always a full one
        run(flat_world, "status")
        watcher = server_status(flat_world)["watcher"]
        assert watcher["hinted_scans"] >= 1, json.dumps(watcher)
        full = watcher["full_scans"]
        for node_id, mood in [("lin-yuan", "a"), ("elder-mo", "b"), ("black-ring", "c"),
                              ("autumn-rain", "d")]:
            edit_node(flat_world, node_id, mood=mood)
        status = run(flat_world, "status", "--json")
        watcher = server_status(flat_world)["watcher"]
        assert watcher["full_scans"] == full + 1
        assert "overflow" in watcher["last_full_reason"]
        assert len(json.loads(status.stdout)["edits"]) == 4
        same(status, run(flat_world, "status", "--json", env=LOCAL))
    finally:
        stop(flat_world, info["pid"])


def _http(port: int, path: str, token: str | None, method: str = "GET",
          body: bytes | None = None) -> tuple[int, Any]:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", data=body, method=method)
    if token is not None:
        req.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_the_http_api_wants_the_token(flat_world: Path) -> None:
    info = start(flat_world, "--port", "0")
    try:
        port = info["port"]
        token_file = flat_world / ".git" / "narr" / "token"
        assert token_file.stat().st_mode & 0o777 == 0o600
        token = token_file.read_text("ascii").strip()
        assert _http(port, "/api/status", None)[0] == 401
        assert _http(port, "/api/status", "wrong")[0] == 401
        code, body = _http(port, "/api/status", token)
        assert code == 200
        assert body == json.loads(run(flat_world, "status", "--json", env=LOCAL).stdout)
        code, body = _http(port, "/api/nodes/no-such-node", token)
        cli = json.loads(run(flat_world, "get", "no-such-node", "--json", env=LOCAL).stderr)
        # the same error; its hint's next step worded for each door (a command, a route)
        assert (cli["hint"], body["hint"]) == ("narr nodes lists the nodes",
                                               "GET /api/nodes lists the nodes")
        assert (code, {**body, "hint": None}) == (404, {**cli, "hint": None})
        node = json.loads(node_file(flat_world, "lin-yuan").read_text("utf-8"))
        node["state"]["mood"] = "curious"
        code, body = _http(port, "/api/nodes/lin-yuan", token, "PUT", json.dumps(node).encode())
        assert code == 200
        code, body = _http(port, "/api/nodes/lin-yuan", token, "PUT", b'{"id": "lin-yuan"}')
        assert code == 422 and body["type"] == "InvalidWorldError" and body["exit_code"] == 13
        code, body = _http(port, "/api/events", token, "POST", json.dumps({
            "content": "Lin Yuan wonders", "ops": [
                {"op": "set", "target": "lin-yuan", "field": "/state/location", "value": "gate"}],
        }).encode())
        assert code == 200 and body["commit"]
        assert {(e["target"], e["field"]) for e in body["edits"]} == {("lin-yuan", "/state/mood")}
        code, log = _http(port, "/api/log?n=1", token)
        assert code == 200 and log["items"][0]["content"] == "Lin Yuan wonders"
        assert _http(port, "/api/openapi.json", token)[1]["paths"]["/api/events"]
        code, body = _http(port, "/api/threads?all=1", token)
        assert (code, body) == (200, json.loads(run(flat_world, "threads", "--all", "--json",
                                                   env=LOCAL).stdout))
    finally:
        stop(flat_world, info["pid"])


def test_a_server_of_other_code_is_never_used(served: Path) -> None:
    record_path = served / ".git" / "narr" / "server.json"
    record = json.loads(record_path.read_text("utf-8"))
    record["version"] = "0.0.0+elsewhere"
    record["code"] = "0.0.0 elsewhere"  # (what a server watching its files vouches for)
    record_path.write_text(json.dumps(record), "utf-8")
    before = requests(served)
    same(run(served, "status"), run(served, "status", env=LOCAL))
    assert requests(served) == before
    assert server_status(served)["current"] is False
    # Starting a server replaces it.
    fresh = start(served)
    assert fresh["pid"] != record["pid"]
    assert server_status(served)["current"] is True
    stop(served, fresh["pid"])


@pytest.mark.parametrize("inotify", [True, False], ids=["inotify", "watchfiles"])
def test_a_hinted_scan_finds_what_a_full_scan_finds(flat_world: Path, tmp_path: Path,
                                                    inotify: bool) -> None:
    """In one process: after each kind of change, the watcher's scan equals the walk of every file."""
    from narrative.store import watch, worktree
    from narrative.store.inotify import available
    from narrative.store.worldrepo import WorldRepo

    if inotify and not available():
        pytest.skip("no inotify on this system")
    watcher = watch.WorldWatcher(flat_world, flat_world / ".git", use_inotify=inotify)
    watcher.start()
    root = flat_world
    lin = node_file(root, "lin-yuan")
    bell = node_file(root, "temple-bell")
    layer_dir = lin.parent
    outside = tmp_path / "outside"

    def deep_new_folder() -> None:
        deep = root / "world" / "new" / "a" / "b"
        deep.mkdir(parents=True)
        shutil.copy(lin, deep / "x.json")

    steps = [
        lambda: None,
        lambda: edit_node(root, "lin-yuan", mood="odd"),
        lambda: bell.unlink(),
        lambda: (root / "notes.txt").write_text("outside world/\n", "utf-8"),
        lambda: shutil.copytree(layer_dir, root / "world" / "stray"),
        lambda: shutil.rmtree(root / "world" / "stray"),
        lambda: git(root, "checkout", "--", "."),
        lambda: os.utime(lin),
        lambda: git(root, "add", "-A"),
        lambda: git(root, "reset", "-q"),
        lambda: edit_node(root, "elder-mo", mood="stern"),
        lambda: None,
        deep_new_folder,
        lambda: (root / "world" / "new").rename(root / "world" / "renamed"),
        lambda: shutil.copy(lin, root / "world" / "renamed" / "a" / "y.json"),  # watched anew?
        lambda: (root / "world" / "renamed").rename(outside),
        lambda: (outside / "a" / "b" / "x.json").write_text("{}", "utf-8"),  # gone: no news
        lambda: outside.rename(root / "world" / "back"),
        lambda: (root / "world" / "back" / "a" / "b" / "x.json").write_text("[]", "utf-8"),
        lambda: layer_dir.rename(root / "world" / "moved-layer"),
        lambda: edit_node(root, "elder-mo", mood="calm") if node_file(root, "elder-mo").exists()
        else (root / "world" / "moved-layer" / "elder-mo.json").write_text("{}", "utf-8"),
        lambda: (root / "world" / "moved-layer").rename(layer_dir),
        lambda: git(root, "checkout", "--", "."),
        lambda: shutil.rmtree(root / "world" / "back"),
    ]
    try:
        for i, step in enumerate(steps):
            step()
            wr = WorldRepo.open(root)
            try:
                head = wr.head_commit()
                tree = head.tree if head else None
                hinted = worktree.changed_paths(wr, tree)
                full = worktree._changed(wr, tree, None)[0]
                assert hinted == full, f"step {i}"
            finally:
                wr.close()
        assert watcher.describe()["hinted_scans"] >= 15
    finally:
        watcher.stop()


def test_a_hinted_scan_reads_each_edited_file_once(flat_world: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Under a watcher, the scan takes the bytes the comparison with the index read (no second
    read), and finds the same hand edits, byte for byte, as a scan without one."""
    from narrative.store import watch, worktree
    from narrative.store.inotify import available
    from narrative.store.worldrepo import WorldRepo

    def scan() -> worktree.HandEdits:
        wr = WorldRepo.open(flat_world)
        try:
            head = wr.head_commit()
            return worktree.scan(wr, head.tree if head else None)
        finally:
            wr.close()

    edit_node(flat_world, "lin-yuan", mood="odd")
    crlf = node_file(flat_world, "elder-mo")
    crlf.write_bytes(crlf.read_bytes().replace(b"\n", b"\r\n"))  # valid, not narr's layout
    unwatched = scan()
    assert {"lin-yuan", "elder-mo"} <= set(unwatched.edits)
    watcher = watch.WorldWatcher(flat_world, flat_world / ".git", use_inotify=available())
    watcher.start()
    try:
        scan()  # the first scan after the start is a full one
        read_again: list[str] = []
        original = worktree._read_regular

        def counted(wr: WorldRepo, full: Path, path: str) -> tuple[bytes | None, str | None, str | None]:
            read_again.append(path)
            return original(wr, full, path)

        monkeypatch.setattr(worktree, "_read_regular", counted)
        edit_node(flat_world, "lin-yuan", mood="odder")
        edit_node(flat_world, "lin-yuan", mood="odd")
        watched = scan()
        assert watcher.describe()["hinted_scans"] >= 1
    finally:
        watcher.stop()
    assert read_again == []
    assert watched.raw == unwatched.raw
    assert {i: (e.old, e.new, e.canonical, e.raw_oid, e.rewrites_file)
            for i, e in watched.edits.items()} == {
        i: (e.old, e.new, e.canonical, e.raw_oid, e.rewrites_file)
        for i, e in unwatched.edits.items()}


def test_lost_inotify_events_mean_a_full_scan_and_fresh_watches(flat_world: Path) -> None:
    """The kernel's queue overflowed while a folder was made: the next scan walks
    everything, and the folder (whose creation was lost) is watched from then on."""
    from narrative.store import inotify, watch, worktree
    from narrative.store.worldrepo import WorldRepo

    if not inotify.available():
        pytest.skip("no inotify on this system")
    watcher = watch.WorldWatcher(flat_world, flat_world / ".git", use_inotify=True)
    watcher.start()

    def scan() -> tuple[set[str], set[str]]:
        wr = WorldRepo.open(flat_world)
        try:
            head = wr.head_commit()
            tree = head.tree if head else None
            return worktree.changed_paths(wr, tree), worktree._changed(wr, tree, None)[0]
        finally:
            wr.close()

    try:
        scan()
        lost = watcher._inotify
        original = lost.read

        def overflowing() -> set[str]:
            original()
            raise inotify.Trouble("the watcher overflowed (the kernel's event queue was full)")

        lost.read = overflowing
        (flat_world / "world" / "late").mkdir()
        hinted, full = scan()
        assert hinted == full
        described = watcher.describe()
        assert "overflowed" in described["last_full_reason"] and described["trusted"]
        assert watcher._inotify is not lost
        shutil.copy(node_file(flat_world, "lin-yuan"), flat_world / "world" / "late" / "x.json")
        before = watcher.describe()["hinted_scans"]
        hinted, full = scan()
        assert hinted == full and "world/late/x.json" in hinted
        assert watcher.describe()["hinted_scans"] == before + 1
    finally:
        watcher.stop()


GATED = """import os, pathlib, sys, time
sys.stdin.read()
here = pathlib.Path(os.getcwd())
(here / "started").write_text("", "utf-8")
deadline = time.monotonic() + 60
while not (here / "release").exists() and time.monotonic() < deadline:
    time.sleep(0.02)
print('{"ops": []}')
"""


def test_reads_answer_while_another_clients_event_is_in_progress(flat_world: Path,
                                                                  tmp_path: Path) -> None:
    """A writer with its own directory and variables neither blocks a read nor lends them
    to it: the server's process never takes a request's directory or environment."""
    gated = tmp_path / "gated.py"
    gated.write_text(GATED, "utf-8")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    info = start(flat_world, "--port", "0")
    token = (flat_world / ".git" / "narr" / "token").read_text("ascii").strip()
    env = {**os.environ, "NARR_EXEC_COMMAND": f"{sys.executable} {gated}", "NARR_EXEC_TIMEOUT": "90"}
    writer = subprocess.Popen(
        [sys.executable, "-m", "narrative", "-C", str(flat_world), "event", "Lin Yuan runs",
         "--diffuser", "exec", "--set", 'lin-yuan.state.location="gate"'],
        cwd=elsewhere, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        deadline = time.monotonic() + 30
        while not (elsewhere / "started").exists() and writer.poll() is None:
            assert time.monotonic() < deadline, "the exec diffuser never started"
            time.sleep(0.02)
        assert writer.poll() is None, writer.communicate()
        # The diffuser ran in the writer's directory with the writer's variables ...
        assert (elsewhere / "started").exists() and not (flat_world / "started").exists()
        # ... while reads, through the thin client and over HTTP, answer at once.
        log = run(flat_world, "log", "-n", "1")
        status = run(flat_world, "status", "--json")
        code, body = _http(info["port"], "/api/status", token)
        assert writer.poll() is None, "the write ended before the reads came back"
        assert log.returncode == 0 and b"Lin Yuan runs" not in log.stdout
        assert status.returncode == 0 and code == 200
        assert body == json.loads(status.stdout)
        (elsewhere / "release").write_text("", "utf-8")
        _, werr = writer.communicate(timeout=60)
        assert writer.returncode == 0, werr
        assert b"Lin Yuan runs" in run(flat_world, "log", "-n", "1").stdout
        # The next client, without an exec command, has none: the writer's did not stay.
        missing = run(flat_world, "event", "Lin Yuan waits", "--diffuser", "exec", "--dry-run",
                      env={"NARR_EXEC_COMMAND": ""})
        assert missing.returncode != 0 and b"no command to run" in missing.stderr
    finally:
        (elsewhere / "release").write_text("", "utf-8")
        if writer.poll() is None:
            writer.kill()
        stop(flat_world, info["pid"])


@pytest.mark.parametrize("how", ["from its directory", "with -C"])
def test_paths_a_client_types_are_read_in_its_directory(served: Path, tmp_path: Path,
                                                         how: str) -> None:
    """Not in the server's (the world's root): in the client's, or in -C's (as git reads -C)."""
    here = served / "notes" / "drafts"
    here.mkdir(parents=True)
    (here / "delta.json").write_text(json.dumps({"ops": [
        {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "wary"}]}), "utf-8")
    (here / "chapter.md").write_text("Lin Yuan walks to the ferry.\n", "utf-8")
    cwd, where = (here, []) if how == "from its directory" else (tmp_path, ["-C", str(here)])

    def both(*args: str) -> tuple[subprocess.CompletedProcess[bytes], subprocess.CompletedProcess[bytes]]:
        def one(extra: dict[str, str]) -> subprocess.CompletedProcess[bytes]:
            return subprocess.run([sys.executable, "-m", "narrative", *where, *args],
                                  cwd=cwd, capture_output=True, env={**os.environ, **extra}, timeout=60)
        return one({}), one(LOCAL)

    through, local = both("event", "Lin Yuan frowns", "--delta", "delta.json", "--dry-run")
    assert b"wary" in through.stdout
    same(through, local, varying=True)
    for args in [("audit", "chapter.md"), ("audit", "missing.md"), ("event", "x", "--delta", "no.json")]:
        same(*both(*args))


def test_the_server_reads_an_edited_rule_file_at_the_next_event(served: Path) -> None:
    rule = ('[[rules]]\nid = "dance"\nmatch = ["{who} dances"]\nvars = { who = { layer = "character" } }\n'
            'do = [{ set = "who.state.mood", value = "%s" }]\n')
    path = served / "rules" / "dance.toml"
    path.write_text(rule % "merry", "utf-8")
    assert run(served, "event", "Lin Yuan dances").returncode == 0
    st = path.stat()
    path.write_text(rule % "sadly", "utf-8")  # the same size, and below the same time
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    event = run(served, "event", "Lin Yuan dances again", "--json")
    assert event.returncode == 0, event.stderr
    assert {(d["target"], d["field"], d["new_value"]) for d in json.loads(event.stdout)["diffusions"]} == {
        ("lin-yuan", "/state/mood", "sadly")}


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_a_server_that_exited_is_stopped_though_not_yet_reaped() -> None:
    """A detached server is adopted by whoever reaps orphans, which may take its time: the
    zombie it leaves is a stopped server, and narr serve --stop does not wait for the reaper."""
    from narrative import client
    from narrative.serve import server

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while Path(f"/proc/{child.pid}/stat").read_bytes().rpartition(b")")[2].split()[0] != b"Z":
            assert time.monotonic() < deadline
            time.sleep(0.01)
        assert client.pid_alive(child.pid)  # kill(pid, 0) still reaches a zombie
        assert not server._running(child.pid)
    finally:
        child.wait()
