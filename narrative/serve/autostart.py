"""A server that starts itself: ``narr.autoServe`` set, the first command with no server
starts one in the background and still runs itself here; later commands use the server.

The setting is read as git reads it (``git config narr.autoServe``: the world's config,
``--global``, ``git -c``), else from narr's own config file (``[narr] autoServe = true`` in
``~/.config/narr/config.toml``). A command with no server pays for this: a look at the
few config files for the word, and a ``git config`` run only where one names it (or
includes others), so a user who never turned it on pays about nothing.

Never two servers for one world: a starter holds ``.git/narr/autostart.lock`` while it
looks and hands that lock to the server it spawns, which lets go once it holds the
world's ``server.lock`` and has written its record. Ten commands starting at once: one
spawns, nine find the lock taken and simply run. A proven server of other code is asked
to stop (over its socket, never by a signal); the new one waits for its lock.

A server that fails to start (it crashes at once, or gives up before it serves) is not
started again by every command, each paying for the attempt: the starter notes each start
in ``.git/narr/autostart.json``, a server that serves removes the note, and the next
starter that finds a note of a start that never served counts a failure and waits before
trying again (one minute, then twice as long after each failure, at most an hour).
``narr serve --status`` says so; a server started by hand (``narr serve --detach``) that
serves ends the wait.

Nothing here may make a command fail: a world on a read-only disk or an unwritable
``.git/narr/`` gets one warning and the command runs in this process. Only the standard
library is imported: this runs before narr's own start-up.
"""

from __future__ import annotations

import os
import sys
import time

from narrative import client

AUTOSTART_LOCK = "autostart.lock"
STATE_FILE = "autostart.json"  # the last start, and the failures since a server last served
FIRST_RETRY_SECONDS = 60.0
LONGEST_RETRY_SECONDS = 3600.0
LOG_FILE = "serve.log"  # as narr serve --detach
HANDOFF_VARIABLE = "NARR_SERVE_HANDOFF"  # the fd of the starter's lock, for the server to drop
DEFAULT_IDLE_MINUTES = 30.0
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0", ""})


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20)
    except OSError:
        return ""


def _git_config_files(git_dir: str) -> list[str]:
    env = os.environ
    home = env.get("HOME") or os.path.expanduser("~")
    xdg = env.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    common = _read(os.path.join(git_dir, "commondir")).strip()
    repo = os.path.join(git_dir, common) if common else git_dir
    files = [os.path.join(repo, "config"), os.path.join(xdg, "git", "config"),
             env.get("GIT_CONFIG_GLOBAL") or os.path.join(home, ".gitconfig"),
             env.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"]
    if common:
        files.append(os.path.join(git_dir, "config.worktree"))
    return files


def git_setting(git_dir: str, key: str, kind: str | None = None) -> str | None:
    """``git config --get narr.<key>`` for the world at ``git_dir`` (None when unset), asked
    of git only when a config file could hold it."""
    word = key.lower()
    if not any(k.startswith("GIT_CONFIG") for k in os.environ):
        texts = "".join(_read(path) for path in _git_config_files(git_dir)).lower()
        if word not in texts and "include" not in texts:
            return None
    import subprocess  # only where a config file names the key

    args = ["git", f"--git-dir={git_dir}", "config", "--get"]
    if kind is not None:
        args.append(f"--type={kind}")
    try:
        done = subprocess.run([*args, f"narr.{key}"], capture_output=True, timeout=10,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None  # unset (1), or a value git refuses for the type: not set
    return done.stdout.decode("utf-8", "replace").strip()


def user_setting(key: str) -> object:
    """``[narr] <key>`` from narr's user config file (None when absent or unreadable)."""
    env = os.environ
    path = env.get("NARR_CONFIG") or os.path.join(
        env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                   ".config"), "narr", "config.toml")
    text = _read(path)
    if key.lower() not in text.lower():
        return None
    import tomllib

    try:
        table = tomllib.loads(text).get("narr")
    except (tomllib.TOMLDecodeError, RecursionError):
        return None  # narr's own start-up names what is wrong with the file
    return table.get(key) if isinstance(table, dict) else None


def auto_serve(git_dir: str) -> bool:
    """Whether ``narr.autoServe`` is on for this world (git config first, then narr's file)."""
    value = git_setting(git_dir, "autoServe", "bool")
    if value is not None:
        return value in _TRUE
    mine = user_setting("autoServe")
    if isinstance(mine, str):
        return mine.strip().lower() in _TRUE
    return mine is True


def idle_minutes(git_dir: str) -> float:
    """``narr.serveIdle``: minutes without a request before a server started this way exits
    (30 unless set; a value that is not a positive number counts as unset)."""
    value: object = git_setting(git_dir, "serveIdle")
    if value is None:
        value = user_setting("serveIdle")
    try:
        minutes = float(value) if isinstance(value, (str, int, float)) else DEFAULT_IDLE_MINUTES
    except ValueError:
        return DEFAULT_IDLE_MINUTES
    return minutes if minutes > 0 and minutes == minutes else DEFAULT_IDLE_MINUTES


def _warn(message: str) -> None:
    try:
        sys.stderr.write(f"narr: warning: {message}\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass


def start_if_wanted(git_dir: str, directory: str | None) -> int | None:
    """Start this world's server in the background when ``narr.autoServe`` asks for one and
    none runs; the new server's pid, or None when none was started."""
    if not auto_serve(git_dir):
        return None
    import fcntl

    narr = os.path.join(git_dir, "narr")
    try:
        os.makedirs(narr, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(narr, AUTOSTART_LOCK),
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        _warn(f"narr.autoServe: cannot start a server ({exc.strerror}: {exc.filename or narr}); "
              "this command runs without one")
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return None  # another command is starting it at this moment
        live = client.proven_server(git_dir)
        if live is not None:
            if live.get("version") == client.code_version():
                return None  # it runs (and turned this command away, or was busy): leave it
            ask_to_stop(live)  # other code: make way; the new server waits for its lock
        elif client.lock_held(git_dir):
            return None  # a server is starting (by hand, or not yet recorded)
        state = read_state(git_dir) or {}
        failures = state.get("failures")
        failures = failures if isinstance(failures, int) and failures > 0 else 0
        now = time.time()
        if state.get("pid") is not None and not _recorded(git_dir, state["pid"]):
            # The last start let go of the lock (its process ended, or gave up) without
            # ever serving: it failed. Wait before the next try rather than pay for one in
            # every command. (One that recorded itself did serve, and died before it could
            # clear the note: killed, say, between the two writes.)
            failures += 1
            delay = min(FIRST_RETRY_SECONDS * 2 ** min(failures - 1, 12), LONGEST_RETRY_SECONDS)
            _write_state(git_dir, {"failures": failures, "failed_at": now, "retry_at": now + delay})
            _warn(f"narr.autoServe: the server started {_ago(state.get('spawned'), now)} never "
                  f"served (see {os.path.join(narr, LOG_FILE)}); commands run without one, and "
                  f"the next tries again in {_minutes(delay)} (narr serve --detach starts one now)")
            return None
        retry_at = state.get("retry_at")
        if isinstance(retry_at, (int, float)) and now < retry_at:
            return None  # waiting after a failed start
        pid = _spawn(git_dir, directory, fd)
        if pid is not None:
            _write_state(git_dir, {"failures": failures, "pid": pid, "spawned": now})
        return pid
    finally:
        os.close(fd)


def _recorded(git_dir: str, pid: object) -> bool:
    """Whether the server spawned as ``pid`` wrote this world's record: it got to serve."""
    info = client.read_server_file(git_dir)
    return info is not None and client.names_this_world(info, git_dir) and info.get("pid") == pid


def read_state(git_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """``autostart.json``: the last automatic start (``pid``, ``spawned``) while it has not
    served, and the failures since a server last served (``failures``, ``failed_at``,
    ``retry_at``, seconds since the epoch); None when there is none (or it is unreadable)."""
    path = os.path.join(git_dir, "narr", STATE_FILE)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(fd, encoding="utf-8", errors="replace") as fh:
            value = client.loads(fh.read(1 << 16))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def waiting(git_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """The failures an automatic start is waiting out (``narr serve --status``), or None."""
    state = read_state(git_dir)
    retry_at = state.get("retry_at") if state else None
    if not state or not isinstance(retry_at, (int, float)) or retry_at <= time.time():
        return None  # nothing waited out: the next command starts one
    return {k: state[k] for k in ("failures", "failed_at", "retry_at") if k in state}


def clear_state(git_dir: str | os.PathLike[str]) -> None:
    """A server serves this world: no start is pending, no failure is waited out."""
    try:  # noqa: SIM105 (contextlib is one more import before a command starts)
        os.unlink(os.path.join(git_dir, "narr", STATE_FILE))
    except OSError:
        pass


def _write_state(git_dir: str, state: dict[str, object]) -> None:
    path = os.path.join(git_dir, "narr", STATE_FILE)
    part = f"{path}.{os.getpid()}"
    try:
        fd = os.open(part, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC,
                     0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(client.dumps(state) + "\n")
        os.replace(part, path)
    except OSError:  # not remembered: the next command simply tries again
        try:  # noqa: SIM105
            os.unlink(part)
        except OSError:
            pass


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _ago(when: object, now: float) -> str:
    if not isinstance(when, (int, float)):
        return "last"
    return f"{max(0, round(now - when))} s ago"


def ask_to_stop(info: dict[str, object]) -> bool:
    """Ask a proven server to stop, over its socket; whether it heard."""
    import _socket

    path = info.get("socket")
    if not isinstance(path, str):
        return False
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(5.0)
    try:
        sock.connect(path)
        client.send_frame(sock, client.STDIN, client.dumps({"control": "stop"}).encode())
        return client.recv_frame(sock) is not None
    except OSError:
        return False
    finally:
        sock.close()


def _spawn(git_dir: str, directory: str | None, lock_fd: int) -> int | None:
    """``narr serve --auto`` in a session of its own, its output in ``.git/narr/serve.log``,
    holding the starter's lock until it serves. (``posix_spawn``: the subprocess module
    costs a command with no server more than this whole start.)"""
    log_path = os.path.join(git_dir, "narr", LOG_FILE)
    # This very code, wherever the command stands (``-m narrative`` would take a
    # ``narrative`` folder in the current directory first).
    package_parent = os.path.dirname(os.path.dirname(os.path.realpath(client.__file__)))
    args = [sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv.pop(1)); "
            "from narrative.cli import main; main(prog_name='narr')", package_parent]
    if directory is not None:
        args += ["-C", directory]
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                      | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        _warn(f"narr.autoServe: cannot start a server ({exc.strerror}: {log_path}); "
              "this command runs without one")
        return None
    try:
        os.set_inheritable(lock_fd, True)
        return os.posix_spawn(
            sys.executable, [*args, "serve", "--auto"],
            {**os.environ, HANDOFF_VARIABLE: str(lock_fd)},
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2)],
            setsid=True)
    except OSError as exc:
        _warn(f"narr.autoServe: cannot start a server ({exc.strerror}); "
              "this command runs without one")
        return None
    finally:
        os.close(log)
