"""A server everyone can trust with their words: it proves itself before a client says
anything, no wait is unbounded, a client whose server dies or stops under an event says
exactly what happened and loses nothing, and a server whose world moved serves nobody.

Real processes throughout: the thin client (``python -m narrative``), servers, ``kill -9``,
``SIGSTOP``, impostors holding a world's lock and listening on its socket. A copy of narr
whose server pauses just before or just after it runs a command (on a marker file the
command names) stands for a server killed at that moment. Nothing asserts how long
anything took; a hang shows as a subprocess time-out.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import git, read_node
from test_server_life import (
    LOCAL,
    alive,
    bystander,
    kill,
    narr_copy,
    proven,
    run,
    servers,
    stale_record,
    status,
    wait_for,
)

from narrative import client

__all__ = ["bystander", "servers"]  # fixtures, used here by name
pytestmark = pytest.mark.usefixtures("servers_by_hand")

# Appended to the copy's server: before or after a command runs, it makes the file the
# command's NARR_TEST_PAUSE_BEFORE or _AFTER names and waits while that file is there.
PAUSING = textwrap.dedent("""

    def _pausing(run_cli):
        def run(argv, prog_name):
            import os, time
            from narrative import invocation

            def pause(name):
                path = invocation.getenv(name)
                if path:
                    open(path, "w").close()
                    end = time.monotonic() + 120
                    while os.path.exists(path) and time.monotonic() < end:
                        time.sleep(0.05)

            pause("NARR_TEST_PAUSE_BEFORE")
            code = run_cli(argv, prog_name)
            pause("NARR_TEST_PAUSE_AFTER")
            return code
        return run


    run_cli = _pausing(run_cli)
""")


@pytest.fixture
def pausing(tmp_path: Path) -> Iterator[dict[str, Any]]:
    """A copy of narr whose server pauses around commands; how to run it (env, cwd)."""
    where = narr_copy(tmp_path / "pausing-narr", "serve/server.py", PAUSING)
    yield {"env": {"PYTHONPATH": str(where)}, "cwd": where.parent}


def events(root: Path, content: str) -> int:
    """How many events on the story line say ``content``."""
    log = json.loads(run(root, "log", "--json", env=LOCAL).stdout)["items"]
    return sum(1 for e in log if e["content"] == content)


def start_paused(root: Path, pausing: dict[str, Any], marker: Path, when: str,
                 *args: str) -> tuple[dict[str, Any], subprocess.Popen[bytes]]:
    """A server of the pausing copy for ``root``, and an event handed to it that stands
    paused (``when``: BEFORE or AFTER it runs) once ``marker`` exists."""
    started = run(root, "serve", "--detach", "--json", env=pausing["env"], cwd=pausing["cwd"])
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    proc = subprocess.Popen(
        [sys.executable, "-m", "narrative", "-C", str(root), "event", "Lin Yuan waits", "--set",
         "lin-yuan.state.mood=patient", *args],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=pausing["cwd"],
        env={**os.environ, **pausing["env"], f"NARR_TEST_PAUSE_{when}": str(marker)})
    wait_for(marker.exists, "the server paused", world=root)
    return info, proc


# --- words are never lost --------------------------------------------------------------


def killed_while_paused(root: Path, pausing: dict[str, Any], marker: Path,
                        when: str) -> tuple[int, bytes, bytes]:
    """An event handed to a server killed (kill -9) where it paused: what its client said."""
    info, proc = start_paused(root, pausing, marker, when)
    try:
        os.kill(info["pid"], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        kill(info["pid"])
    return proc.returncode, out, err


def test_an_event_whose_server_dies_before_recording_it_is_recorded_here_once(
        flat_world: Path, tmp_path: Path, pausing: dict[str, Any]) -> None:
    code, out, err = killed_while_paused(flat_world, pausing, tmp_path / "paused", "BEFORE")
    assert code == 0, err
    assert err.decode().splitlines()[0] == (
        "narr: warning: the narr server stopped before it recorded this event; it is recorded "
        "here instead")
    assert b"Lin Yuan waits" in out  # the event's own output, from this process
    assert events(flat_world, "Lin Yuan waits") == 1
    assert json.loads(run(flat_world, "failed", "--json", env=LOCAL).stdout)["items"] == []


def test_an_event_whose_server_dies_after_recording_it_is_said_to_be_recorded(
        flat_world: Path, tmp_path: Path, pausing: dict[str, Any]) -> None:
    code, _, err = killed_while_paused(flat_world, pausing, tmp_path / "paused", "AFTER")
    assert code == 0, err  # recorded: no failure reported
    commit = json.loads(run(flat_world, "log", "-n", "1", "--json", env=LOCAL).stdout)["items"][0]
    assert err.decode().splitlines()[-1] == (
        "narr: warning: the narr server stopped while it ran this command, after it recorded "
        f"the event as {commit['commit'][:10]}")
    assert events(flat_world, "Lin Yuan waits") == 1
    assert json.loads(run(flat_world, "failed", "--json", env=LOCAL).stdout)["items"] == []


@pytest.mark.parametrize("retry", ["while it is stopped", "after it went on"])
def test_an_event_whose_server_is_stopped_is_kept_and_recorded_once(
        flat_world: Path, tmp_path: Path, pausing: dict[str, Any], retry: str) -> None:
    """A stopped server may still go on: the client keeps the words rather than record the
    event itself, and the server, going on with no client, writes nothing, so following the
    client's hint (narr event --retry) records the event once, whenever it is followed."""
    marker = tmp_path / "paused"
    info, proc = start_paused(flat_world, pausing, marker, "BEFORE")
    try:
        os.kill(info["pid"], signal.SIGSTOP)
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 19, err  # StorageError: kept, not recorded
        text = err.decode()
        assert f"the narr server (pid {info['pid']}) was stopped" in text
        assert "narr event --retry runs it again" in text
        kept = json.loads(run(flat_world, "failed", "--json", env=LOCAL).stdout)["items"]
        assert [k["content"] for k in kept] == ["Lin Yuan waits"]
        assert events(flat_world, "Lin Yuan waits") == 0
        if retry == "while it is stopped":
            again = run(flat_world, "event", "--retry", env=LOCAL)
            assert again.returncode == 0, again.stderr
        os.kill(info["pid"], signal.SIGCONT)
        marker.unlink()  # the server goes on with the event it had, its client gone
        wait_for(lambda: status(flat_world)["active"] == 0, "the server let the event go")
        if retry == "after it went on":
            assert events(flat_world, "Lin Yuan waits") == 0
            again = run(flat_world, "event", "--retry", env=LOCAL)
            assert again.returncode == 0, again.stderr
        assert events(flat_world, "Lin Yuan waits") == 1
        assert json.loads(run(flat_world, "failed", "--json", env=LOCAL).stdout)["items"] == []
    finally:
        os.kill(info["pid"], signal.SIGCONT)
        run(flat_world, "serve", "--stop", env=pausing["env"], cwd=pausing["cwd"])
        kill(info["pid"])


def test_an_event_read_from_standard_input_whose_server_dies_is_recorded_from_those_words(
        flat_world: Path, tmp_path: Path, pausing: dict[str, Any]) -> None:
    marker = tmp_path / "paused"
    started = run(flat_world, "serve", "--detach", "--json", env=pausing["env"], cwd=pausing["cwd"])
    info = json.loads(started.stdout)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "narrative", "-C", str(flat_world), "event", "-"],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            cwd=pausing["cwd"], env={**os.environ, **pausing["env"],
                                     "NARR_TEST_PAUSE_BEFORE": str(marker)})
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(b"Lin Yuan waits by the river\n")
        proc.stdin.close()
        wait_for(marker.exists, "the server paused", world=flat_world)
        os.kill(info["pid"], signal.SIGKILL)
        with proc.stderr:
            err = proc.stderr.read()
        proc.wait(timeout=120)
    finally:
        kill(info["pid"])
    assert proc.returncode == 0, err
    assert "it is recorded here instead" in err.decode()
    assert events(flat_world, "Lin Yuan waits by the river") == 1


def test_a_client_reading_again_what_its_server_read_reads_the_rest_after_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """What a server had read of standard input before it died comes first, then what it
    had not read yet, whatever the sizes of the reads."""
    import io

    from narrative import interrupted

    rest = io.BufferedReader(io.BytesIO("之后 the rest\n".encode() * 3000), buffer_size=7)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(rest, encoding="utf-8"))
    interrupted._replay_stdin("read before 林远".encode())
    assert sys.stdin.read() == "read before 林远" + "之后 the rest\n" * 3000


def test_a_served_command_reads_no_more_of_standard_input_than_it_would_alone(
        flat_world: Path) -> None:
    """``narr event -`` stops at its bound whether a server runs it or not: the client reads
    only what the server's command asks for, not the whole of an endless stream."""
    started = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    endless = 64 << 20
    try:
        for env in ({}, LOCAL):
            proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world),
                                     "event", "-"], stdin=subprocess.PIPE,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                    env={**os.environ, **env})
            assert proc.stdin is not None and proc.stderr is not None
            sent = 0
            with contextlib.suppress(BrokenPipeError):
                while sent < endless:
                    proc.stdin.write(b"a" * 65536)
                    sent += 65536
            with contextlib.suppress(BrokenPipeError):
                proc.stdin.close()
            err = proc.stderr.read().decode()
            proc.stderr.close()
            assert proc.wait(timeout=120) == 12, err
            assert "<stdin>: the input goes on past 8.0 MB" in err
            assert sent < 16 << 20, (env, sent)  # the bound, a pipe's worth and a chunk
        assert status(flat_world)["requests"] >= 1  # the first went through the server
    finally:
        run(flat_world, "serve", "--stop")
        kill(started["pid"])


# --- Ctrl-C ----------------------------------------------------------------------------

SLOW_DIFFUSER = textwrap.dedent("""
    import json, pathlib, sys, time
    sys.stdin.read()
    pathlib.Path(sys.argv[1]).touch()
    time.sleep(3)
    print(json.dumps({"ops": [{"op": "set", "target": "lin-yuan", "field": "/state/mood",
                               "value": "slow"}]}))
""")


def interrupted(root: Path, args: list[str], ready: Any, env: dict[str, str] | None = None,
                stdin: bytes | None = None) -> tuple[int, str]:
    """A served command interrupted (SIGINT, as Ctrl-C sends) once ``ready()``: its exit code
    and what it printed on its standard error."""
    proc = subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(root), *args],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
    assert proc.stdin is not None
    try:
        if stdin is not None:
            proc.stdin.write(stdin)
            proc.stdin.flush()  # and left open: the command waits for the rest
        wait_for(ready, "the command under way", world=root)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return proc.returncode, err.decode()


def test_ctrl_c_while_a_served_event_reads_its_words_records_nothing(flat_world: Path) -> None:
    """As in a process of its own: Aborted!, exit 1, no event of the words read so far."""
    started = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    try:
        code, err = interrupted(flat_world, ["event", "-"],
                                lambda: status(flat_world)["active"] == 1,
                                stdin=b"Lin Yuan walks")
        assert (code, err) == (1, "\nAborted!\n"), err  # as click says it, after the ^C
        assert events(flat_world, "Lin Yuan walks") == 0
        assert status(flat_world)["pid"] == started["pid"]  # the server goes on serving
        again = run(flat_world, "status")
        assert again.returncode == 0 and b"Hand edits" not in again.stdout
    finally:
        run(flat_world, "serve", "--stop")
        kill(started["pid"])


def test_ctrl_c_while_a_served_event_waits_for_its_diffuser_records_nothing(
        flat_world: Path, tmp_path: Path) -> None:
    script, asked = tmp_path / "slow.py", tmp_path / "asked"
    script.write_text(SLOW_DIFFUSER, "utf-8")
    started = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    try:
        code, err = interrupted(
            flat_world, ["event", "--diffuser", "exec", "Lin Yuan waits slowly"], asked.exists,
            env={"NARR_EXEC_COMMAND": f"{sys.executable} {script} {asked}"})
        assert (code, err) == (1, "\nAborted!\n"), err  # as click says it, after the ^C
        assert events(flat_world, "Lin Yuan waits slowly") == 0
        assert read_node(flat_world, "lin-yuan")["state"]["mood"] != "slow"
    finally:
        run(flat_world, "serve", "--stop")
        kill(started["pid"])


# --- no wait is unbounded --------------------------------------------------------------


def test_a_stopped_server_is_not_waited_for(flat_world: Path) -> None:
    started = json.loads(run(flat_world, "serve", "--detach", "--json").stdout)
    pid = started["pid"]
    try:
        os.kill(pid, signal.SIGSTOP)
        here = run(flat_world, "status", env=LOCAL)
        proc = run(flat_world, "status")
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            here.returncode, here.stdout, here.stderr)
        event = run(flat_world, "event", "Lin Yuan waits", "--set", "lin-yuan.state.mood=patient")
        assert event.returncode == 0, event.stderr
        assert events(flat_world, "Lin Yuan waits") == 1
        shown = status(flat_world)
        assert (shown["running"], shown["state"], shown["requests"]) == (True, "stopped", None)
        assert "stopped (SIGSTOP or Ctrl-Z)" in run(flat_world, "serve", "--status").stdout.decode()
        found = {f["name"]: f for f in json.loads(
            run(flat_world, "doctor", "--json").stdout)["findings"]}
        assert found["server"]["status"] == "warning"
        assert found["server"]["fix"] == f"kill -CONT {pid}, or narr serve --stop"
        assert run(flat_world, "serve", "--stop").returncode == 0
        wait_for(lambda: not alive(pid), "the stopped server stopped")
    finally:
        with_cont(pid)
        kill(pid)


def with_cont(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGCONT)


IMPOSTOR = textwrap.dedent("""
    # argv: git_dir, socket path, what it does (holds, listens, or both), narr's parent, file
    import fcntl, json, os, socket, sys, time
    sys.path.insert(0, sys.argv[4])
    from narrative import client

    git_dir, path, mode, heard = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[5]
    heard = open(heard, "ab", buffering=0)
    listener = None
    if "listens" in mode:
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
    if "holds" in mode:  # the world's lock and a record naming this process: a proven claim
        narr = os.path.join(git_dir, "narr")
        os.makedirs(narr, exist_ok=True)
        fd = os.open(os.path.join(narr, "server.lock"), os.O_RDWR | os.O_CREAT)
        fcntl.flock(fd, fcntl.LOCK_EX)
        identity = client.process_identity(os.getpid())
        os.ftruncate(fd, 0)
        os.pwrite(fd, client.holder_text(os.getpid(), identity).encode(), 0)
        record = {"pid": os.getpid(), "process": identity, "version": client.code_version(),
                  "socket": path, "root": os.path.dirname(git_dir), "git_dir": git_dir,
                  "port": None, "host": "127.0.0.1", "started": time.time()}
        with open(os.path.join(narr, "server.json"), "w") as fh:
            json.dump(record, fh)
    print("ready", flush=True)
    conns = []
    while True:
        if listener is None:
            time.sleep(1)
            continue
        conn, _ = listener.accept()  # never says a word; keeps what it hears
        conns.append(conn)
        conn.settimeout(2)
        try:
            while True:
                data = conn.recv(65536)
                if not data:
                    break
                heard.write(data)
        except OSError:
            pass
""")


def impostor_process(git_dir: str, sock: str, mode: str, heard: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", IMPOSTOR, git_dir, sock, mode,
                             str(Path(client.__file__).parent.parent), str(heard)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    if proc.stdout.readline() != "ready\n":
        proc.kill()
        proc.wait()
        proc.stdout.close()
        raise AssertionError("the impostor did not start")
    return proc


@pytest.mark.parametrize("impostor", ["listens and never answers", "another process listens",
                                      "its socket's path is too long"])
def test_a_record_naming_a_listener_that_is_not_narrs_server_hears_nothing(
        flat_world: Path, tmp_path: Path, impostor: str) -> None:
    """A process holding the world's lock and named by its record, but not narr's server:
    no command hands it argv, directory or environment, none waits for it for ever, and no
    signal reaches it."""
    git_dir = str((flat_world / ".git").resolve())
    sock = str(tmp_path / "impostor.sock")
    if impostor == "its socket's path is too long":
        sock = str(tmp_path / ("s" * 200) / "impostor.sock")
    heard = tmp_path / "heard"
    heard.touch()
    procs = []
    try:
        if impostor == "listens and never answers":
            procs.append(impostor_process(git_dir, sock, "holds+listens", heard))
        else:
            procs.append(impostor_process(git_dir, sock, "holds", heard))
        if impostor == "another process listens":
            procs.append(impostor_process(git_dir, sock, "listens", heard))
        assert client.proven_server(flat_world / ".git") is not None  # as proven as a record gets
        here = run(flat_world, "status", env=LOCAL)
        proc = run(flat_world, "status", env={"NARR_SECRET": "the environment"})
        assert (proc.returncode, proc.stdout, proc.stderr) == (
            here.returncode, here.stdout, here.stderr)
        stop = run(flat_world, "serve", "--stop")
        assert stop.returncode == 14, stop.stderr
        assert f"pid {procs[0].pid} holds this world's server lock but does not answer as " \
               "narr's server" in stop.stderr.decode()
        assert run(flat_world, "doctor", "--json").returncode in (0, 13)
        assert all(p.poll() is None for p in procs)  # nothing was signalled
        time.sleep(0.5)
        assert heard.read_bytes() == b""  # and nothing was said to it
    finally:
        for p in procs:
            p.kill()
            p.wait()
            if p.stdout is not None:
                p.stdout.close()


@pytest.mark.parametrize("fifo", ["server.json", "server.lock"])
def test_a_fifo_in_place_of_a_servers_file_holds_nothing_up(flat_world: Path, fifo: str,
                                                            server_on: None) -> None:
    narr = flat_world / ".git" / "narr"
    narr.mkdir(exist_ok=True)
    os.mkfifo(narr / fifo)
    try:
        here = run(flat_world, "status", env=LOCAL)
        for args in (("status",), ("log", "-n", "1")):
            proc = run(flat_world, *args)
            assert proc.returncode == 0, proc.stderr
        assert run(flat_world, "status").stdout == here.stdout
        assert run(flat_world, "serve", "--status", "--json").returncode == 0
        assert run(flat_world, "doctor", "--json").returncode in (0, 13)
    finally:
        info = client.read_server_file(flat_world / ".git")
        run(flat_world, "serve", "--stop")
        if info:
            kill(info.get("pid"))


def test_a_stale_record_with_a_socket_path_too_long_is_replaced_by_a_fresh_server(
        flat_world: Path, bystander: subprocess.Popen[bytes], servers: list[Path],
        server_on: None) -> None:
    """What a crash leaves (a record naming a process that is now another's, and a socket
    path no system takes): the command runs here, the process is left alone, and a fresh
    server takes over."""
    servers.append(flat_world)
    stale_record(flat_world, bystander.pid, socket="/tmp/" + "x" * 300 + ".sock")
    here = run(flat_world, "status", env=LOCAL)
    proc = run(flat_world, "status")
    assert (proc.returncode, proc.stdout) == (here.returncode, here.stdout)
    fresh = wait_for(lambda: proven(flat_world), "a fresh server started", world=flat_world)
    assert fresh["pid"] != bystander.pid and bystander.poll() is None
    before = status(flat_world)["requests"]
    assert run(flat_world, "status").returncode == 0
    assert status(flat_world)["requests"] == before + 1
    assert bystander.poll() is None


# --- a moved world ---------------------------------------------------------------------


def test_a_server_whose_world_moved_writes_nothing_at_the_old_path_and_exits(
        flat_world: Path, tmp_path: Path, sample_worlds: dict[str, Path], servers: list[Path],
        server_on: None) -> None:
    import urllib.error
    import urllib.request

    started = run(flat_world, "serve", "--detach", "--port", "0", "--json")
    assert started.returncode == 0, started.stderr
    old = json.loads(started.stdout)
    token = (flat_world / ".git" / "narr" / "token").read_text("ascii").strip()
    moved = tmp_path / "moved"
    servers += [flat_world, moved]
    flat_world.rename(moved)
    shutil.copytree(sample_worlds["flat"], flat_world, symlinks=True)  # narr init w, as it were
    genesis = git(flat_world, "rev-parse", "HEAD")
    request = urllib.request.Request(
        f"http://127.0.0.1:{old['port']}/api/events", method="POST",
        headers={"Authorization": f"Bearer {token}"},
        data=json.dumps({"content": "An open page writes", "ops": [
            {"op": "set", "target": "lin-yuan", "field": "/state/mood", "value": "lost"}]}).encode())
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            code = answer.status
    except urllib.error.HTTPError as exc:
        code = exc.code
    except OSError:
        code = None  # it had gone already
    assert code in (503, None)
    wait_for(lambda: not alive(old["pid"]), "the old server noticed and exited")
    assert "exits: its world moved or was replaced" in (
        moved / ".git" / "narr" / "serve.log").read_text("utf-8")
    assert git(flat_world, "rev-parse", "HEAD") == genesis  # the new world saw no write
    assert run(flat_world, "event", "In the new world", "--set",
               "lin-yuan.state.mood=new").returncode == 0
    here = run(moved, "status", env=LOCAL)
    proc = run(moved, "status")
    assert (proc.returncode, proc.stdout) == (here.returncode, here.stdout)
    fresh = wait_for(lambda: proven(moved), "a fresh server for the moved world", world=moved)
    assert fresh["pid"] != old["pid"] and fresh["root"] == str(moved.resolve())
    assert events(flat_world, "In the new world") == 1 and events(moved, "In the new world") == 0


# --- the first commands, all at once -----------------------------------------------------


@pytest.mark.slow
def test_parallel_first_events_with_no_server_all_wait_their_turn(flat_world: Path,
                                                                  servers: list[Path],
                                                                  server_on: None) -> None:
    servers.append(flat_world)
    n = 12
    env = {**os.environ, "NARR_LOCK_TIMEOUT": "3"}  # the usual timeout
    procs = [subprocess.Popen([sys.executable, "-m", "narrative", "-C", str(flat_world), "event",
                               f"Writer {i} writes", "--set", f"lin-yuan.state.mood=m{i}"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
             for i in range(n)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0] * n, [e.decode()[-300:] for _, e in outs]
    log = json.loads(run(flat_world, "log", "--json", env=LOCAL).stdout)["items"]
    assert sorted(e["content"] for e in log if e["content"].startswith("Writer")) == sorted(
        f"Writer {i} writes" for i in range(n))


# --- disks that take nothing -------------------------------------------------------------


def _namespaces() -> bool:
    """Whether this user may make a mount namespace of its own (``unshare -rm``): there a
    full or read-only disk can be real, without privileges."""
    try:
        return subprocess.run(["unshare", "-rm", "true"], capture_output=True,
                              timeout=30).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


NAMESPACED = textwrap.dedent("""
    import json, os, shutil, subprocess, sys

    mnt, source, what = sys.argv[1], sys.argv[2], sys.argv[3]
    os.makedirs(mnt, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", mnt], check=True)
    world = os.path.join(mnt, "w")
    shutil.copytree(source, world, symlinks=True)
    os.makedirs(os.path.join(world, ".git", "narr"), exist_ok=True)

    def narr(*args, **env):
        done = subprocess.run([sys.executable, "-m", "narrative", "-C", world, *args],
                              capture_output=True, env={**os.environ, **env}, timeout=120)
        return [done.returncode, done.stdout.decode(), done.stderr.decode()]

    narr("status", NARR_NO_SERVER="1")  # the catalog made, the index refreshed, while there is room
    if what == "full":
        fd = os.open(os.path.join(mnt, "fill"), os.O_WRONLY | os.O_CREAT)
        try:
            while True:
                os.write(fd, bytes(1 << 16))
        except OSError:
            pass
        os.close(fd)
    else:
        where = world if what == "read-only world" else os.path.join(world, ".git", "narr")
        subprocess.run(["mount", "--bind", where, where], check=True)
        subprocess.run(["mount", "-o", "remount,bind,ro", where], check=True)
    here = narr("status", NARR_NO_SERVER="1")
    runs = [narr("status") for _ in range(4)]
    print(json.dumps({"here": here, "runs": runs, "narr": sorted(os.listdir(
        os.path.join(world, ".git", "narr"))), "world": world}))
""")


@pytest.mark.skipif(not _namespaces(), reason="no mount namespace for this user (unshare -rm)")
@pytest.mark.parametrize("what", ["full", "read-only world", "read-only .git/narr"])
def test_a_disk_that_takes_nothing_costs_one_warning_and_no_server(
        flat_world: Path, tmp_path: Path, what: str, server_on: None) -> None:
    """A full disk, a read-only world, a read-only .git/narr (real ones, in a mount namespace
    of the test's own): every command runs here, the first says why once, and no server is
    started over and over to die at once."""
    done = subprocess.run(["unshare", "-rm", sys.executable, "-c", NAMESPACED,
                           str(tmp_path / "mnt"), str(flat_world), what],
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)
    here, runs = seen["here"], seen["runs"]
    assert [r[:2] for r in runs] == [here[:2]] * 4
    first = runs[0][2][len(here[2]):].splitlines()
    narr = os.path.join(seen["world"], ".git", "narr")
    if what == "full":
        assert len(first) == 1 and first[0].startswith(
            f"narr: warning: no narr server starts: the disk holding {narr} is full ("), first
        assert first[0].endswith("; commands run without one, and the next tries again in "
                                 "1 minute")
        assert "serve.log" not in seen["narr"]  # none was started to die at once
    else:
        assert first == [f"narr: warning: no narr server can start for this world: {narr} cannot "
                         "be written (a read-only disk or folder); commands run without one"]
    assert [r[2] for r in runs[1:]] == [here[2]] * 3  # said once


def test_a_server_that_dies_at_once_on_a_disk_that_takes_no_byte_is_started_once(
        flat_world: Path, servers: list[Path], server_on: None) -> None:
    """Files that may not grow by a byte (RLIMIT_FSIZE 0, as a full disk that still takes
    empty files): the server dies as it starts; the next command notes that it never served
    in a file's name, says so once, and no command starts another for a while."""
    import resource

    servers.append(flat_world)
    run(flat_world, "status", env=LOCAL)  # the catalog made while files may grow

    def no_bytes() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))

    def narr(**env: str) -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-m", "narrative", "-C", str(flat_world), "status"],
                              capture_output=True, env={**os.environ, **env}, timeout=120,
                              preexec_fn=no_bytes)

    here = narr(**LOCAL)
    first = narr()
    assert (first.returncode, first.stdout, first.stderr) == (
        here.returncode, here.stdout, here.stderr)
    spawned = wait_for(lambda: autostart_note(flat_world).get("pid"), "a start noted")
    wait_for(lambda: not alive(spawned), "the server died as it started")
    second = narr()
    assert (second.returncode, second.stdout) == (here.returncode, here.stdout)
    warning = second.stderr.decode()[len(here.stderr.decode()):].splitlines()
    assert len(warning) == 1 and "never served" in warning[0] and "in 1 minute" in warning[0]
    for _ in range(3):
        later = narr()
        assert (later.returncode, later.stdout, later.stderr) == (
            here.returncode, here.stdout, here.stderr)
    note = autostart_note(flat_world)
    assert note["failures"] == 1 and "pid" not in note  # waiting, and no start since
    assert proven(flat_world) is None


def autostart_note(root: Path) -> dict[str, Any]:
    from narrative.serve import autostart

    return autostart.read_state(root / ".git") or {}


def test_a_client_that_cannot_open_its_world_after_its_server_died_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The world gone from under the client too (moved, deleted): no traceback, no guess."""
    from narrative.interrupted import settle

    lost = client.Interrupted({"pid": 1}, "gone", True, "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
                              None, False)
    gone = tmp_path / "gone"
    code = settle(lost, ["-C", str(gone), "event", "Lin Yuan waits"], str(gone / ".git"), "narr")
    assert code == 1
    said = capsys.readouterr().err
    assert said.startswith("narr: error: the narr server stopped while it ran this event, and "
                           "whether it was recorded cannot be told here (not a narr world")
