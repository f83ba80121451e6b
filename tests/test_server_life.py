"""A server's life: proven before it is trusted or signalled, started by the first command
unless a setting says not to, gone when idle or when narr's code changes.

Every test runs real processes: ``python -m narrative`` (the thin client), servers it
starts, unrelated processes left under stale records, ``kill -9``, a world copied with
``cp -a`` while its server runs, a record cut short. Waiting for a server to come or go
polls with a generous deadline; nothing here asserts how long anything took.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import check_answer, git, server_not_running

from narrative import client
from narrative.serve import autostart
from narrative.store import can_watch_files

LOCAL = {"NARR_NO_SERVER": "1"}
# Servers started by hand unless a test turns the automatic start on (server_on).
pytestmark = pytest.mark.usefixtures("servers_by_hand")
REPO = Path(__file__).resolve().parent.parent


def run(root: Path, *args: str, env: dict[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "narrative", "-C", str(root), *args],
                          capture_output=True, env={**os.environ, **(env or {})}, timeout=120,
                          cwd=cwd)


def status(root: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    proc = run(root, "serve", "--status", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    answer = json.loads(proc.stdout)
    check_answer(answer)
    return answer  # type: ignore[no-any-return]


def wait_for(predicate: Any, what: str, deadline: float = 90.0, world: Path | None = None) -> Any:
    """``predicate()`` once it is true; a failure shows ``world``'s server log and notes."""
    end = time.monotonic() + deadline
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= end:
            narr = world / ".git" / "narr" if world is not None else None
            seen = "".join(f"\n--- {path.name}:\n{path.read_text('utf-8', 'replace')}"
                           for path in sorted(narr.iterdir()) if path.suffix in (".log", ".json")
                           ) if narr is not None and narr.is_dir() else ""
            raise AssertionError(f"never happened: {what}{seen}")
        time.sleep(0.1)


def record_path(root: Path) -> Path:
    return root / ".git" / "narr" / "server.json"


def alive(pid: int) -> bool:
    """Running (a zombie waiting for whoever adopted it has stopped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
    except OSError:
        return client.pid_alive(pid)
    return state not in (b"Z", b"X")


def kill(pid: int | None) -> None:
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """A process that is nobody's server, whose pid a stale record will name."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def servers() -> Iterator[list[Path]]:
    """Worlds whose servers a test may have started: stopped (and killed) when it ends."""
    roots: list[Path] = []
    yield roots
    for root in roots:
        info = client.read_server_file(root / ".git")
        run(root, "serve", "--stop")
        if info and isinstance(info.get("pid"), int) and info.get("git_dir") == str(
                (root / ".git").resolve()):
            kill(info["pid"])


def stale_record(world: Path, pid: int, **changes: Any) -> None:
    """What a server that crashed (or a reboot) leaves: its record, naming a pid now another's."""
    record = {"pid": pid, "version": client.code_version(),
              "socket": str(world / ".git" / "narr" / "server.sock"), "root": str(world),
              "git_dir": str((world / ".git").resolve()), "port": None, "host": "127.0.0.1",
              "started": time.time(), **changes}
    record_path(world).parent.mkdir(parents=True, exist_ok=True)
    record_path(world).write_text(json.dumps(record), "utf-8")


# --- a record is proof of nothing -------------------------------------------------------


@pytest.mark.parametrize("changes", [{}, {"version": "0.0.1+other"}, {"port": 1},
                                     {"git_dir": None, "root": None}])
def test_no_command_signals_a_process_a_stale_record_names(
        flat_world: Path, bystander: subprocess.Popen[bytes], servers: list[Path],
        changes: dict[str, Any]) -> None:
    servers.append(flat_world)
    stale_record(flat_world, bystander.pid, **changes)
    assert status(flat_world) == server_not_running()
    assert not record_path(flat_world).exists()  # a stale record is removed, not acted on
    for args in (("serve", "--stop"), ("status",), ("doctor", "--json")):
        stale_record(flat_world, bystander.pid, **changes)
        proc = run(flat_world, *args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert bystander.poll() is None, args
    stale_record(flat_world, bystander.pid, **changes)
    started = run(flat_world, "serve", "--detach", "--json")
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    assert info["pid"] != bystander.pid and alive(info["pid"])  # --detach started a real one
    run(flat_world, "serve", "--stop")
    stale_record(flat_world, bystander.pid, **changes)
    url = run(flat_world, "studio", "--url", "--json")
    assert url.returncode == 0, url.stderr
    assert json.loads(url.stdout)["pid"] != bystander.pid
    assert run(flat_world, "serve", "--stop").returncode == 0
    assert bystander.poll() is None


def test_the_studio_server_under_auto_serve_exits_when_idle(flat_world: Path,
                                                         servers: list[Path],
                                                         server_on: None) -> None:
    """Where servers start by themselves the server narr studio starts keeps narr.serveIdle,
    as an automatically started one does; without it, it runs until stopped."""
    servers.append(flat_world)
    auto(flat_world, idle="7")
    started = run(flat_world, "studio", "--url", "--json")
    assert started.returncode == 0, started.stderr
    assert status(flat_world)["idle_minutes"] == 7
    assert run(flat_world, "serve", "--stop").returncode == 0
    git(flat_world, "config", "narr.autoServe", "false")
    assert run(flat_world, "studio", "--url", "--json").returncode == 0
    assert status(flat_world)["idle_minutes"] is None


def test_doctor_does_not_count_a_stale_record_as_a_server(
        flat_world: Path, bystander: subprocess.Popen[bytes]) -> None:
    stale_record(flat_world, bystander.pid)
    proc = run(flat_world, "doctor", "--json")
    found = {f["name"]: f for f in json.loads(proc.stdout)["findings"]}
    assert found["server"]["status"] == "ok"
    assert found["server"]["found"].startswith("not running")


@pytest.mark.parametrize("text", ['{"pid": 12', '{"pid": ', "\0\0\0", "[1, 2]", '"x"', "{}",
                                  '{"pid": 99999999999999999999999}', '{"pid": true}'])
def test_a_truncated_or_garbage_record_is_no_server(flat_world: Path, text: str) -> None:
    record_path(flat_world).parent.mkdir(parents=True, exist_ok=True)
    record_path(flat_world).write_text(text, "utf-8")
    here = run(flat_world, "status", env=LOCAL)
    through = run(flat_world, "status")
    assert (through.returncode, through.stdout, through.stderr) == (
        here.returncode, here.stdout, here.stderr)
    assert status(flat_world) == server_not_running()
    assert not record_path(flat_world).exists()


def test_a_copied_world_neither_uses_nor_stops_the_originals_server(
        flat_world: Path, tmp_path: Path, servers: list[Path]) -> None:
    servers.append(flat_world)
    original = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(flat_world), str(copy)], check=True)
    servers.append(copy)
    assert json.loads(record_path(copy).read_text("utf-8"))["pid"] == original["pid"]
    before = status(flat_world)["requests"]
    git(copy, "config", "user.name", "Copy")  # something only the copy has
    event = run(copy, "event", "Lin Yuan leaves the copy", "--set",
                'lin-yuan.state.location="copy"')
    assert event.returncode == 0, event.stderr
    assert status(flat_world)["requests"] == before  # the original's server never saw it
    assert json.loads(run(flat_world, "get", "lin-yuan", "state.location", "--json").stdout)[
        "value"] != "copy"
    assert status(copy) == server_not_running()
    stopped = run(copy, "serve", "--stop", "--json")
    assert json.loads(stopped.stdout) == server_not_running()
    assert alive(original["pid"])
    assert Path(original["socket"]).exists()  # the copy's clean-up left the original's socket
    assert status(flat_world)["pid"] == original["pid"]


def test_a_server_whose_record_is_removed_writes_it_again(flat_world: Path,
                                                          servers: list[Path]) -> None:
    """rm .git/narr/server.json beside a running server: it is found again (serve --status,
    --stop), not left holding the world's lock unseen until its idle exit."""
    servers.append(flat_world)
    pid = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)["pid"]
    record_path(flat_world).unlink()
    shown = wait_for(lambda: (s := status(flat_world))["running"] and s, "the record written again",
                     world=flat_world)
    assert shown["pid"] == pid
    assert run(flat_world, "serve", "--stop").returncode == 0
    wait_for(lambda: not alive(pid), "the server stopped")


def test_a_server_whose_socket_is_removed_exits(flat_world: Path, servers: list[Path]) -> None:
    """Nobody can reach it any more: it exits, letting go of the world for the next one."""
    servers.append(flat_world)
    info = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    Path(info["socket"]).unlink()
    wait_for(lambda: not alive(info["pid"]), "the unreachable server exited", world=flat_world)
    assert "its socket was removed or replaced" in log_text(flat_world)
    assert run(flat_world, "serve", "--detach").returncode == 0  # the world is free again
    assert proven(flat_world) is not None


def test_a_killed_server_is_cleaned_up(flat_world: Path, servers: list[Path]) -> None:
    servers.append(flat_world)
    info = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    os.kill(info["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(info["pid"]), "the server died")
    assert record_path(flat_world).exists()  # kill -9 leaves its record behind
    assert status(flat_world) == server_not_running()
    assert not record_path(flat_world).exists()
    again = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    assert again["pid"] != info["pid"] and status(flat_world)["pid"] == again["pid"]


# --- a server that starts itself --------------------------------------------------------


def auto(root: Path, idle: str | None = None) -> None:
    """A world where servers start by themselves (the default), idle after ``idle`` minutes."""
    if idle is not None:
        git(root, "config", "narr.serveIdle", idle)


def proven(root: Path) -> dict[str, Any] | None:
    return client.proven_server(root / ".git")


def log_text(root: Path) -> str:
    path = root / ".git" / "narr" / "serve.log"
    return path.read_text("utf-8", "replace") if path.exists() else ""


def test_the_first_command_starts_a_server_and_later_ones_use_it(
        flat_world: Path, servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world)
    first = run(flat_world, "status")
    assert first.returncode == 0, first.stderr
    assert first.stdout == run(flat_world, "status", env=LOCAL).stdout
    info = wait_for(lambda: proven(flat_world), "the server started")
    assert info["auto"] is True and info["idle_minutes"] == 15
    assert info["started_by"] == "a narr command"
    shown = status(flat_world)
    assert shown["auto"] is True and shown["exits_at"] > time.time()
    assert shown["state"] == "running" and shown["memory_mib"] > 0 and shown["idle_s"] >= 0
    text = run(flat_world, "serve", "--status").stdout.decode()
    assert "started by a narr command (automatically)" in text and "MiB resident" in text
    assert "idle " in text and "exits after 15 minutes" in text
    before = shown["requests"]
    assert run(flat_world, "log", "-n", "1").returncode == 0
    assert status(flat_world)["requests"] == before + 1


def test_a_server_asked_for_takes_the_place_of_one_a_command_started(
        flat_world: Path, servers: list[Path], server_on: None) -> None:
    """``narr serve --detach --port 0`` while a command's server runs: the one asked for
    (with its port, no idle exit) replaces it; asked again, it is the one answered with. One
    started by hand that lacks what is asked is named, not replaced."""
    servers.append(flat_world)
    auto(flat_world)
    assert run(flat_world, "status").returncode == 0
    first = wait_for(lambda: proven(flat_world), "the command's server started")
    proc = run(flat_world, "serve", "--detach", "--port", "0", "--json")
    assert proc.returncode == 0, proc.stderr
    asked = json.loads(proc.stdout)
    assert asked["pid"] != first["pid"] and asked["port"] and asked["auto"] is False
    wait_for(lambda: not alive(first["pid"]), "the command's server exited")
    for args in (("--port", "0"), ()):
        again = json.loads(run(flat_world, "serve", "--detach", *args, "--json").stdout)
        assert again["pid"] == asked["pid"]
    other = run(flat_world, "serve", "--detach", "--port", str(asked["port"] + 1))
    assert other.returncode != 0
    assert f"already serves this world (pid {asked['pid']}) on port {asked['port']}" in (
        other.stderr.decode())
    assert proven(flat_world)["pid"] == asked["pid"]


def test_ten_first_commands_at_once_start_one_server(flat_world: Path,
                                                     servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world)
    procs = [subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world), "status"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(10)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 10, [e for _, e in outs]
    info = wait_for(lambda: proven(flat_world), "the server started")
    for _ in range(5):  # and the commands after them start none either
        assert run(flat_world, "status").returncode == 0
    started = [line for line in log_text(flat_world).splitlines() if "started automatically" in line]
    assert started == [f"narr serve: pid {info['pid']} started automatically for "
                       f"{flat_world.resolve()}; exits after 15 minutes without a request"]
    assert "another narr server" not in log_text(flat_world)  # none was even tried


_STARTER = """
import sys, time
from narrative import client
from narrative.serve import autostart
git_dir, lives = sys.argv[1], float(sys.argv[2])
pid = autostart.start_if_wanted(git_dir, None)
end, seen = time.monotonic() + lives, False
while time.monotonic() < end:
    seen = seen or client.read_server_file(git_dir) is not None
    time.sleep(0.05)
print(pid, seen)
"""


@pytest.mark.parametrize("lives", [1.5, autostart.STARTER_WAIT_SECONDS + 4])
def test_a_server_starts_once_the_command_that_started_it_is_done(
        flat_world: Path, servers: list[Path], server_on: None, lives: float) -> None:
    """The command that starts a server runs in process meanwhile: the server's own start-up
    waits for it to end rather than take processor time from it, but not for ever."""
    servers.append(flat_world)
    proc = subprocess.run([sys.executable, "-c", _STARTER, str(flat_world / ".git"), str(lives)],
                          capture_output=True, timeout=120, cwd=flat_world)
    assert proc.returncode == 0, proc.stderr
    pid, seen = proc.stdout.decode().split()
    assert seen == str(lives > autostart.STARTER_WAIT_SECONDS)
    info = wait_for(lambda: proven(flat_world), "the server started", world=flat_world)
    assert info["pid"] == int(pid)


def test_an_idle_server_exits(flat_world: Path, servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world, idle="0.05")  # three seconds
    assert run(flat_world, "status").returncode == 0
    info = wait_for(lambda: proven(flat_world), "the server started")
    wait_for(lambda: not alive(info["pid"]), "the idle server exited")
    assert f"pid {info['pid']} exits: no request for 0.05 minutes" in log_text(flat_world)
    assert not record_path(flat_world).exists()


def in_a_server(world: Path, setup: str, ready: str) -> str:
    """What a :class:`~narrative.serve.server.Server` of ``world`` prints when it is ready, run
    in a process of its own after ``setup`` (Python, with ``server`` the object made and
    ``root`` the world); ``ready`` runs in its ready callback (``record`` its record), then
    it stops."""
    script = (
        "import sys, time, json, os\n"
        "from pathlib import Path\n"
        "from narrative.serve.server import Server\n"
        "root = Path(sys.argv[1])\n"
        "server = Server(root, root / '.git', idle_minutes=0.05)\n"
        f"{setup}\n"
        "def ready(record):\n"
        f"    {ready}\n"
        "    server.stopping.set()\n"
        "server.run(ready)\n")
    proc = subprocess.run([sys.executable, "-c", script, str(world)], capture_output=True,
                          text=True, timeout=120, env={**os.environ, "NARR_NO_SERVER": "1"})
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_an_idle_limit_counts_from_when_the_server_serves(flat_world: Path) -> None:
    """No request can come before a server is recorded: a start slower than its idle limit
    (a loaded machine) must not make it exit at its first look, before anyone could ask."""
    shown = json.loads(in_a_server(flat_world, "time.sleep(1.5)  # a slow start",
                                   "print(json.dumps(server.status()), flush=True)"))
    assert shown["idle_s"] < 1.5 and shown["exits_at"] > time.time() + 1.5


def test_a_server_lets_its_starter_s_lock_go_before_it_is_proven(flat_world: Path) -> None:
    """The command that started a server hands it the starter's lock; the first command to
    find the server proven must find that lock free, or it takes a start to be under way and
    does not replace a server of other code."""
    setup = ("import fcntl\n"
             "lock = root / '.git' / 'narr' / 'autostart.lock'\n"
             "lock.parent.mkdir(exist_ok=True)\n"
             "held = os.open(lock, os.O_RDWR | os.O_CREAT)\n"
             "fcntl.flock(held, fcntl.LOCK_EX)\n"
             "os.environ['NARR_SERVE_HANDOFF'] = str(held)\n"
             "replace = os.replace\n"
             "def replaced(src, dst, *args, **kwargs):\n"
             "    replace(src, dst, *args, **kwargs)\n"
             "    if str(dst).endswith('server.json'):\n"
             "        other = os.open(lock, os.O_RDWR)\n"
             "        try:\n"
             "            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
             "            print('free when recorded')\n"
             "        except OSError:\n"
             "            print('held when recorded')\n"
             "        os.close(other)\n"
             "os.replace = replaced")
    assert in_a_server(flat_world, setup, "pass").splitlines() == ["free when recorded"]


def test_a_page_in_use_or_listening_keeps_an_idle_server(flat_world: Path,
                                                         servers: list[Path], server_on: None) -> None:
    """HTTP requests are activity, and so is a studio page's open change-notice stream: an
    idle limit counts from when the page hangs up. (Each wait below outlasts the idle limit;
    none asserts how long anything took.)"""
    import http.client
    import urllib.request

    from helpers import edit_node

    servers.append(flat_world)
    proc = run(flat_world, "serve", "--detach", "--port", "0", "--idle", "0.05", "--json")  # 3 s
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    pid, port = info["pid"], info["port"]
    idle = 0.05 * 60 + 2 * 2.0 + 1.0  # the limit, two of the server's looks, a second more
    auth = {"Authorization": f"Bearer {(flat_world / '.git' / 'narr' / 'token').read_text().strip()}"}

    def outlast(step: Any) -> None:
        end = time.monotonic() + idle
        while time.monotonic() < end:
            step()
            time.sleep(0.3)

    def ask() -> None:
        request = urllib.request.Request(f"http://127.0.0.1:{port}/api/status", headers=auth)
        with urllib.request.urlopen(request, timeout=30) as answer:
            assert answer.status == 200

    outlast(ask)  # a page in use: requests over HTTP only, none over the socket
    assert alive(pid), log_text(flat_world)
    stream = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    stream.request("GET", "/api/studio/changes", headers=auth)
    answer = stream.getresponse()
    assert answer.status == 200

    def next_stamp() -> dict[str, Any]:
        while True:
            line = answer.fp.readline()
            assert line, "the stream ended"
            if line.startswith(b"data: "):
                return json.loads(line[6:])  # type: ignore[no-any-return]

    assert next_stamp()["edited"] == 0
    outlast(lambda: None)  # a page open and listening, and nothing else
    assert alive(pid), log_text(flat_world)
    edit_node(flat_world, "su-qing", mood="wary")
    assert next_stamp()["edited"] == 1  # and still told of changes
    stream.close()  # the page closes: now the server may go
    wait_for(lambda: not alive(pid), "the idle server exited")
    assert f"pid {pid} exits: no request for 0.05 minutes" in log_text(flat_world)


@pytest.mark.parametrize("off", ["CI=1", "NARR_NO_SERVER=1", "git config", "git config --global",
                                 "narr's config file"])
def test_a_setting_turns_the_automatic_start_off(flat_world: Path, tmp_path: Path, off: str,
                                                 server_on: None) -> None:
    """CI machines and test suites keep no daemons; a user who says no gets none."""
    env: dict[str, str] = {}
    if "=" in off:
        env = dict([off.split("=")])
    elif off == "git config":
        git(flat_world, "config", "narr.autoServe", "false")
    elif off == "git config --global":
        git(flat_world, "config", "--global", "narr.autoServe", "no")
    else:
        config = tmp_path / "narr.toml"
        config.write_text("[narr]\nautoServe = false\n", "utf-8")
        env = {"NARR_CONFIG": str(config)}
    try:
        here = run(flat_world, "status", env=LOCAL)
        for _ in range(3):
            proc = run(flat_world, "status", env=env)
            assert (proc.returncode, proc.stdout, proc.stderr) == (
                here.returncode, here.stdout, here.stderr)
        assert not record_path(flat_world).exists() and log_text(flat_world) == ""
        assert not (flat_world / ".git" / "narr" / "autostart.lock").exists()
        shown = status(flat_world, env=env)
        assert shown["running"] is False and shown["autostart_off"]
    finally:
        subprocess.run(["git", "config", "--global", "--unset", "narr.autoServe"],
                       cwd=flat_world, capture_output=True)


def test_settings_given_in_variables_are_asked_of_git(flat_world: Path, server_on: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """``git -c narr.autoServe=false`` and ``GIT_CONFIG_COUNT`` settings are in no file: git
    is asked whenever one may be given that way."""
    git_dir = str(flat_world / ".git")
    assert autostart.off_because(git_dir) is None
    monkeypatch.setenv("GIT_CONFIG_PARAMETERS", "'narr.autoserve'='false'")
    assert autostart.off_because(git_dir) == "git config narr.autoServe is false"
    monkeypatch.delenv("GIT_CONFIG_PARAMETERS")
    for name, value in (("GIT_CONFIG_COUNT", "1"), ("GIT_CONFIG_KEY_0", "narr.serveIdle"),
                        ("GIT_CONFIG_VALUE_0", "7")):
        monkeypatch.setenv(name, value)
    assert autostart.idle_minutes(git_dir) == 7


def test_no_git_runs_where_no_config_file_names_the_setting(flat_world: Path, server_on: None,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A command with no server reads the few config files itself; variables that only move
    or leave out a file (the tests' own ``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_NOSYSTEM``) do
    not send it to git."""
    assert {"GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM"} <= set(os.environ)

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"git was run: {args}")

    monkeypatch.setattr(subprocess, "run", refuse)
    git_dir = str(flat_world / ".git")
    assert autostart.off_because(git_dir) is None
    assert autostart.idle_minutes(git_dir) == autostart.DEFAULT_IDLE_MINUTES


def test_by_default_the_first_command_starts_one(flat_world: Path, servers: list[Path],
                                                 server_on: None) -> None:
    """Nothing set (no CI, no NARR_NO_SERVER, no narr.autoServe): a server starts."""
    servers.append(flat_world)
    assert status(flat_world)["autostart_off"] is None
    text = run(flat_world, "serve", "--status").stdout.decode()
    assert text.splitlines()[1:] == ["  the next narr command in this world starts one"]
    assert run(flat_world, "status").returncode == 0
    wait_for(lambda: proven(flat_world), "the server started")


@pytest.mark.parametrize("args", [["--version"], ["status"], ["log"]])
def test_no_server_is_started_in_a_repository_that_is_not_a_world(tmp_path: Path,
                                                                   server_on: None,
                                                                   args: list[str]) -> None:
    """narr run in someone's ordinary repository (or below it): nothing is written into
    its ``.git``, no server starts, and the next command has no failed start to warn of."""
    stranger = tmp_path / "stranger"
    (stranger / "src").mkdir(parents=True)
    git(stranger, "init", "-q")
    for _ in range(2):
        for where in (stranger, stranger / "src"):
            proc = subprocess.run([sys.executable, "-m", "narrative", *args], cwd=where,
                                  capture_output=True, env=os.environ, timeout=120)
            assert b"warning" not in proc.stderr, proc.stderr
        time.sleep(0.5)
    assert not (stranger / ".git" / "narr").exists()


def test_narrs_own_config_file_sets_the_idle_time(flat_world: Path, tmp_path: Path,
                                                  servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    config = tmp_path / "narr.toml"
    config.write_text("[narr]\nautoServe = true\nserveIdle = 5\n", "utf-8")
    assert run(flat_world, "status", env={"NARR_CONFIG": str(config)}).returncode == 0
    info = wait_for(lambda: proven(flat_world), "the server started")
    assert info["auto"] is True and info["idle_minutes"] == 5


def test_a_killed_auto_server_is_replaced_by_the_next_command(flat_world: Path,
                                                              servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world)
    run(flat_world, "status")
    first = wait_for(lambda: proven(flat_world), "the server started")
    os.kill(first["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(first["pid"]), "the server died")
    assert run(flat_world, "status").returncode == 0
    second = wait_for(lambda: proven(flat_world), "a new server started", world=flat_world)
    assert second["pid"] != first["pid"]


def hold_server_lock(root: Path, pid: int, identity: str) -> int:
    """This process holds ``root``'s server lock, which names ``pid`` as its holder."""
    import fcntl

    narr = root / ".git" / "narr"
    narr.mkdir(exist_ok=True)
    fd = os.open(narr / client.LOCK_FILE, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.pwrite(fd, client.holder_text(pid, identity).encode(), 0)
    return fd


def test_a_server_whose_lock_outlives_it_is_replaced_by_the_next_command(
        flat_world: Path, servers: list[Path], server_on: None) -> None:
    """A killed server's pid is a zombie before its other threads let go of the lock. A command
    then starts a server that waits for the lock, rather than leaving the world without one
    until a later command. (The lock is held here, naming a process that has ended.)"""
    servers.append(flat_world)
    auto(flat_world)
    ended = subprocess.Popen([sys.executable, "-c", "pass"])
    ended.wait()
    fd = hold_server_lock(flat_world, ended.pid, "a-boot:12345")
    try:
        assert run(flat_world, "status").returncode == 0
        started = (autostart.read_state(flat_world / ".git") or {}).get("pid")
        assert isinstance(started, int), "no server was started"
    finally:
        os.close(fd)
    server = wait_for(lambda: proven(flat_world), "a new server started", world=flat_world)
    assert server["pid"] == started


def test_a_server_holding_its_lock_while_it_starts_is_left_to_start(
        flat_world: Path, servers: list[Path], server_on: None) -> None:
    """A lock held by a live process that has not recorded itself yet is a server starting:
    a command starts no second one."""
    auto(flat_world)
    fd = hold_server_lock(flat_world, os.getpid(), str(client.process_identity(os.getpid())))
    try:
        assert run(flat_world, "status").returncode == 0
        assert autostart.read_state(flat_world / ".git") is None
        assert not record_path(flat_world).exists()
    finally:
        os.close(fd)


def test_a_server_killed_before_it_cleared_its_start_is_no_failed_start(
        flat_world: Path, servers: list[Path], server_on: None) -> None:
    """Killed between writing its record and clearing the starter's note: it served, so the
    next command starts a server at once rather than waiting out a failure."""
    servers.append(flat_world)
    auto(flat_world)
    run(flat_world, "status")
    first = wait_for(lambda: proven(flat_world), "the server started")
    wait_for(lambda: autostart.read_state(flat_world / ".git") is None, "the start noted as served")
    write_state(flat_world, failures=0, pid=first["pid"], spawned=time.time() - 5)
    os.kill(first["pid"], signal.SIGKILL)
    wait_for(lambda: not alive(first["pid"]), "the server died")
    proc = run(flat_world, "status")
    assert (proc.returncode, proc.stderr) == (0, b"")
    second = wait_for(lambda: proven(flat_world), "a new server started", world=flat_world)
    assert second["pid"] != first["pid"]


@pytest.mark.parametrize("blocked", ["autostart.lock", "serve.log"])
def test_a_server_that_cannot_start_costs_one_warning(flat_world: Path, blocked: str,
                                                      server_on: None) -> None:
    """Where narr cannot write its lock or log (a directory in the way stands in for an
    unwritable folder or disk, which root would write anyway), the command still runs, and
    says why once: not at every command."""
    auto(flat_world)
    (flat_world / ".git" / "narr").mkdir(exist_ok=True)
    (flat_world / ".git" / "narr" / blocked).mkdir()
    here = run(flat_world, "status", env=LOCAL)
    proc = run(flat_world, "status")
    assert (proc.returncode, proc.stdout) == (here.returncode, here.stdout)
    warning = proc.stderr.decode().splitlines()
    assert len(warning) == 1 and warning[0].startswith(
        "narr: warning: no narr server can start for this world (Is a directory: "), warning
    assert warning[0].endswith("); commands run without one")
    for _ in range(3):
        again = run(flat_world, "status")
        assert (again.returncode, again.stdout, again.stderr) == (0, here.stdout, b"")
    assert not record_path(flat_world).exists()


def test_a_world_too_deep_for_a_socket_path_still_gets_its_server(
        tmp_path: Path, flat_world: Path, servers: list[Path], server_on: None) -> None:
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "world"
    deep.parent.mkdir(parents=True)
    shutil.copytree(flat_world, deep, symlinks=True)
    servers.append(deep)
    auto(deep)
    assert run(deep, "status").returncode == 0
    info = wait_for(lambda: proven(deep), "the server started")
    assert not info["socket"].startswith(str(deep))
    before = status(deep)["requests"]
    assert run(deep, "status").returncode == 0
    assert status(deep)["requests"] == before + 1


def narr_copy(where: Path, module: str, appended: str) -> Path:
    """A copy of narr's package at ``where`` (as another checkout or install would be), with
    ``appended`` at the end of one of its modules."""
    shutil.copytree(REPO / "narrative", where / "narrative",
                    ignore=shutil.ignore_patterns("__pycache__", "static"))
    (where / "narrative" / "serve" / "static").symlink_to(REPO / "narrative" / "serve" / "static")
    with open(where / "narrative" / module, "a", encoding="utf-8") as fh:
        fh.write(appended)
    return where


@pytest.fixture
def broken_code(tmp_path: Path) -> Path:
    """A copy of narr whose server dies as it starts (a broken install, a crash at start-up)."""
    return narr_copy(tmp_path / "broken-narr", "serve/server.py",
                     "\n\ndef _broken(self, ready=None):\n"
                     "    raise SystemExit('narr serve: this install cannot serve')\n\n\n"
                     "Server.run = _broken\n")


def write_state(root: Path, **state: Any) -> None:
    """The note of automatic starts, as a starter leaves it (see narrative.serve.autostart)."""
    narr = root / ".git" / "narr"
    for old in narr.glob(f"{autostart.STATE_PREFIX}*"):
        old.unlink()
    name = (f"{autostart.STATE_PREFIX}{state.get('failures', 0)}-{state.get('pid') or 0}-"
            f"{round((state.get('spawned') or 0) * 1000)}-"
            f"{round((state.get('retry_at') or 0) * 1000)}")
    (narr / name).touch()


def read_state(root: Path) -> dict[str, Any]:
    found = autostart.read_state(root / ".git")
    assert found is not None, "no note of automatic starts"
    return found


def attempts(root: Path) -> int:
    return log_text(root).count("this install cannot serve")


def test_a_server_that_fails_to_start_is_not_started_by_every_command(
        flat_world: Path, broken_code: Path, servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world)
    env = {"PYTHONPATH": str(broken_code)}
    here = run(flat_world, "status", env=LOCAL).stdout
    first = run(flat_world, "status", env=env, cwd=broken_code.parent)
    assert (first.returncode, first.stdout, first.stderr) == (0, here, b"")
    spawned = read_state(flat_world)["pid"]
    wait_for(lambda: not alive(spawned) and attempts(flat_world) == 1, "the server failed")

    second = run(flat_world, "status", env=env, cwd=broken_code.parent)
    assert (second.returncode, second.stdout) == (0, here)
    warning = second.stderr.decode().splitlines()
    assert len(warning) == 1 and "never served" in warning[0] and "in 1 minute" in warning[0]
    for _ in range(3):  # waiting: no new start, no more words
        later = run(flat_world, "status", env=env, cwd=broken_code.parent)
        assert (later.returncode, later.stdout, later.stderr) == (0, here, b"")
    time.sleep(1)
    assert attempts(flat_world) == 1
    assert proven(flat_world) is None
    shown = status(flat_world)
    assert shown["running"] is False
    assert shown["autostart"]["failures"] == 1 and shown["autostart"]["retry_at"] > time.time() + 30
    text = run(flat_world, "serve", "--status").stdout.decode()
    assert "the last automatic start failed (1 in a row" in text and "tries again" in text

    def wait_over() -> None:
        write_state(flat_world, failures=read_state(flat_world)["failures"],
                    retry_at=time.time() - 1)

    wait_over()  # the minute has passed: the next command tries once more, and fails again
    assert status(flat_world) == server_not_running()  # nothing is waited out any more
    assert run(flat_world, "status", env=env, cwd=broken_code.parent).returncode == 0
    wait_for(lambda: attempts(flat_world) == 2, "the second start")
    spawned = read_state(flat_world)["pid"]
    wait_for(lambda: not alive(spawned), "the second start failed")
    again = run(flat_world, "status", env=env, cwd=broken_code.parent)
    assert "in 2 minutes" in again.stderr.decode()
    assert status(flat_world)["autostart"]["failures"] == 2

    wait_over()  # narr mended: its server serves, and the failures are forgotten
    assert run(flat_world, "status").returncode == 0
    wait_for(lambda: proven(flat_world), "the mended server started")
    wait_for(lambda: autostart.read_state(flat_world / ".git") is None, "the failures forgotten")
    assert attempts(flat_world) == 2


def test_a_server_that_serves_leaves_no_failure_to_wait_out(flat_world: Path,
                                                            servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world)
    assert run(flat_world, "status").returncode == 0
    first = wait_for(lambda: proven(flat_world), "the server started")
    wait_for(lambda: autostart.read_state(flat_world / ".git") is None, "the start noted as served")
    assert run(flat_world, "serve", "--stop").returncode == 0
    wait_for(lambda: not alive(first["pid"]), "the server stopped")
    assert run(flat_world, "status").returncode == 0  # stopped is not failed: start at once
    second = wait_for(lambda: proven(flat_world), "a new server started", world=flat_world)
    assert second["pid"] != first["pid"]


# --- code that changes under a server -----------------------------------------------------


@pytest.fixture
def other_code(tmp_path: Path) -> Path:
    """A copy of narr's package, as another checkout or an older install would be."""
    return narr_copy(tmp_path / "other-narr", "ids.py", "# another version\n")


def test_a_server_exits_when_its_code_changes(flat_world: Path, other_code: Path,
                                              servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    env = {"PYTHONPATH": str(other_code)}
    proc = run(flat_world, "serve", "--detach", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    with open(other_code / "narrative" / "ids.py", "a", encoding="utf-8") as fh:
        fh.write("# upgraded under the server\n")
    wait_for(lambda: not alive(info["pid"]), "the server noticed its code changed")
    assert f"pid {info['pid']} exits: narr's code changed" in log_text(flat_world)
    assert not record_path(flat_world).exists()


def test_a_server_of_other_code_is_replaced(flat_world: Path, other_code: Path,
                                            servers: list[Path], server_on: None) -> None:
    servers.append(flat_world)
    auto(flat_world)
    assert run(flat_world, "status", env={"PYTHONPATH": str(other_code)},
               cwd=other_code.parent).returncode == 0
    old = wait_for(lambda: proven(flat_world), "the other code's server started")
    assert old["version"] != client.code_version()
    assert run(flat_world, "status").returncode == 0
    new = wait_for(lambda: (lambda info: info if info and info["version"] == client.code_version()
                            else None)(proven(flat_world)), "this code's server started")
    assert new["pid"] != old["pid"]
    wait_for(lambda: not alive(old["pid"]), "the old server went")


def test_two_names_of_one_python_share_its_server(flat_world: Path, servers: list[Path],
                                                  server_on: None) -> None:
    """A virtual environment's ``python`` and ``python3`` are one interpreter: a command started
    by either is served by the server the other started, not replaced at every command."""
    names = [Path(sys.executable).parent / name for name in ("python", "python3")]
    if not all(name.exists() for name in names) or len({n.resolve() for n in names}) != 1:
        pytest.skip("this Python has no two names for one interpreter")
    servers.append(flat_world)
    auto(flat_world)

    def status_by(python: Path) -> None:
        proc = subprocess.run([str(python), "-m", "narrative", "-C", str(flat_world), "status"],
                              capture_output=True, env=dict(os.environ), timeout=120)
        assert proc.returncode == 0, proc.stderr

    status_by(names[0])
    first = wait_for(lambda: proven(flat_world), "the server started")
    for name in names[1], names[0], names[1]:
        status_by(name)
    assert status(flat_world)["requests"] >= 3
    assert proven(flat_world)["pid"] == first["pid"]


def test_an_edit_just_before_a_command_is_never_answered_by_the_old_code(
        flat_world: Path, other_code: Path, servers: list[Path]) -> None:
    servers.append(flat_world)
    env = {"PYTHONPATH": str(other_code)}
    proc = run(flat_world, "serve", "--detach", "--json", env=env, cwd=other_code.parent)
    assert proc.returncode == 0, proc.stderr
    served = run(flat_world, "status", env=env, cwd=other_code.parent)
    assert served.returncode == 0, served.stderr
    assert status(flat_world, env)["requests"] == 1
    with open(other_code / "narrative" / "cli" / "__init__.py", "a", encoding="utf-8") as fh:
        fh.write("\nimport sys\nsys.stderr.write('the edited code runs\\n')\n")
    proc = run(flat_world, "status", env=env, cwd=other_code.parent)  # at once, no wait
    assert proc.returncode == 0, proc.stderr
    assert b"the edited code runs" in proc.stderr  # run here, by the code as it stands
    assert proc.stdout == served.stdout


def test_a_client_of_the_code_a_server_watches_reads_none_of_its_files(
        flat_world: Path, servers: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    servers.append(flat_world)
    proc = run(flat_world, "serve", "--detach")
    assert proc.returncode == 0, proc.stderr
    if not can_watch_files():
        pytest.skip("this system cannot watch narr's files (no inotify)")
    info = client.read_server_file(flat_world / ".git")
    assert info is not None and info["code"] == client.code_identity()

    def read_the_files() -> str:
        raise AssertionError("the client worked the code's version out")

    monkeypatch.setattr(client, "_VERSION", [])
    monkeypatch.setattr(client, "current_code_version", read_the_files)
    opened = client.connect(str(flat_world / ".git"))
    assert opened is not None
    assert client.forward(opened, ["-C", str(flat_world), "log", "-n", "1"],
                          str((flat_world / ".git").resolve())) == 0
    assert status(flat_world)["requests"] == 1


def test_a_served_command_loads_neither_click_nor_regular_expressions(
        flat_world: Path, servers: list[Path]) -> None:
    """The ``narr`` script and the client ask the server with the standard library's built-in
    parts: ``re`` (with the enum and functools it loads) would cost a served command more
    than its round trip to the server, click far more."""
    servers.append(flat_world)
    assert run(flat_world, "serve", "--detach").returncode == 0
    script = REPO / "scripts" / "narr"
    assert '"scripts/narr" = "narr"' in (REPO / "pyproject.toml").read_text("utf-8")  # installed
    proc = subprocess.run([sys.executable, "-X", "importtime", str(script), "-C", str(flat_world),
                           "status"], capture_output=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == run(flat_world, "status", env=LOCAL).stdout
    loaded = {line.rpartition("|")[2].strip() for line in proc.stderr.decode().splitlines()
              if line.startswith("import time:")}
    assert "narrative.client" in loaded  # the probe sees what loads
    assert not loaded & {"re", "enum", "click", "narrative.cli", "json", "socket"}


def test_a_checkout_moved_aside_and_replaced_is_not_answered_by_the_old_code(
        flat_world: Path, other_code: Path, servers: list[Path]) -> None:
    servers.append(flat_world)
    env = {"PYTHONPATH": str(other_code)}
    proc = run(flat_world, "serve", "--detach", env=env, cwd=other_code.parent)
    assert proc.returncode == 0, proc.stderr
    served = run(flat_world, "status", env=env, cwd=other_code.parent)
    assert served.returncode == 0, served.stderr
    aside = other_code.with_name("moved-aside")
    other_code.rename(aside)  # the server's files go with it, unchanged
    shutil.copytree(aside, other_code, symlinks=True)  # the same files, times and all
    with open(other_code / "narrative" / "cli" / "__init__.py", "a", encoding="utf-8") as fh:
        fh.write("\nimport sys\nsys.stderr.write('the edited code runs\\n')\n")
    proc = run(flat_world, "status", env=env, cwd=other_code.parent)
    assert proc.returncode == 0, proc.stderr
    assert b"the edited code runs" in proc.stderr
