"""A server that starts itself: the first command with no server starts one in the background
and still runs itself here; later commands use the server.

On unless a setting says otherwise: off when ``CI`` is set (CI machines and test suites
must not keep daemons), when ``narr.autoServe`` is false, read as git reads it (``git
config narr.autoServe false``: the world's config, ``--global``, ``git -c``) or else
from narr's own config file (``[narr] autoServe = false`` in
``~/.config/narr/config.toml``), and, for every server, with ``NARR_NO_SERVER=1``
(:func:`narrative.client.locate`). A command with no server pays for this: a look at
the few config files for the word, and a ``git config`` run only where one names it
(or includes others).

Never two servers for one world: a starter holds ``.git/narr/autostart.lock`` while it
looks and hands that lock to the server it spawns, which lets go once it holds the
world's ``server.lock`` and has written its record, just before the record can be read
(a command that finds the server proven finds the lock free). Ten commands starting at
once: one spawns, nine find the lock taken and simply run. A proven server of other code
(or of another Python) is asked to stop (over its socket, never by a signal); the new
one waits for its lock.

A server that fails to start (it crashes at once, or gives up before it serves, as on
a full disk) is not started again by every command, each paying for the attempt: the
starter notes each start, a server that serves removes the note, and the next starter
that finds a note of a start that never served counts a failure, says so once, and
waits before trying again (one minute, then twice as long after each failure, at most
an hour). A disk with less than a mebibyte free counts as a failed start without one.
The note lives in a file's name, not its bytes: a full disk, which refuses every
byte, still takes an empty file's name. ``narr serve --status`` says so; a server
started by hand (``narr serve --detach``) that serves ends the wait.

Nothing here may make a command fail: a world on a read-only disk or an unwritable
``.git/narr/`` runs in this process, with one warning the first time (remembered in
narr's cache directory, ``~/.cache/narr/``; where even that cannot be written, none).
Only the standard library is imported: this runs before narr's own start-up.
"""

from __future__ import annotations

import os
import sys
import time
import zlib

from narrative import client

AUTOSTART_LOCK = "autostart.lock"
STATE_PREFIX = "autostart-state-"  # + failures-pid-spawned_ms-retry_ms: the note, in a name
FIRST_RETRY_SECONDS = 60.0
LONGEST_RETRY_SECONDS = 3600.0
LEAST_ROOM = 1 << 20  # bytes free on the disk of .git/narr below which no server starts
LOG_FILE = "serve.log"  # as narr serve --detach
HANDOFF_VARIABLE = "NARR_SERVE_HANDOFF"  # the fd of the starter's lock, for the server to drop
STARTER_VARIABLE = "NARR_SERVE_STARTER"  # the starter's pid: the server starts once it is done
STARTER_WAIT_SECONDS = 2.0
DEFAULT_IDLE_MINUTES = 15.0
_TRUE = frozenset({"true", "yes", "on", "1"})
_FALSE = frozenset({"false", "no", "off", "0", ""})
# The variables that give git settings of their own (``git -c``, ``GIT_CONFIG_COUNT``) or
# another file to ``git config`` (``GIT_CONFIG``): with one set, only git can say. The
# others (``GIT_CONFIG_GLOBAL``, ``GIT_CONFIG_SYSTEM``, ``GIT_CONFIG_NOSYSTEM``) only move
# or leave out files the look below reads itself.
_CONFIG_FROM_ENV = ("GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_CONFIG")


def _read(path: str) -> str:
    data = client.read_regular(path, 1 << 20)
    return data.decode("utf-8", "replace") if data is not None else ""


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
    if not any(name in os.environ for name in _CONFIG_FROM_ENV):
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
    if not isinstance(table, dict):
        return None
    # as git's keys: autoServe, autoserve and AUTOSERVE are one setting
    return next((value for name, value in table.items() if name.lower() == key.lower()), None)


def auto_serve(git_dir: str) -> bool:
    """Whether a command with no server starts one for this world."""
    return off_because(git_dir) is None


def off_because(git_dir: str) -> str | None:
    """Why no server starts by itself for this world (``CI``, a setting), or None: it does."""
    if os.environ.get("NARR_NO_SERVER"):
        return "NARR_NO_SERVER is set"
    if os.environ.get("CI", "").strip().lower() not in _FALSE:
        return "CI is set"
    value = git_setting(git_dir, "autoServe", "bool")
    if value is not None:
        return None if value in _TRUE else "git config narr.autoServe is false"
    mine = user_setting("autoServe")
    if mine is False or (isinstance(mine, str) and mine.strip().lower() in _FALSE):
        return "autoServe is false in narr's config file"
    return None


def idle_minutes(git_dir: str) -> float:
    """``narr.serveIdle``: minutes without a request before a server started this way exits
    (15 unless set; a value that is not a positive number counts as unset)."""
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
    """Start this world's server in the background unless a setting says not to or one runs;
    the new server's pid, or None when none was started."""
    if not auto_serve(git_dir):
        return None
    import fcntl

    narr = os.path.join(git_dir, "narr")
    if not os.access(narr if os.path.isdir(narr) else git_dir, os.W_OK):
        _warn_once(git_dir, f"no narr server can start for this world: {narr} cannot be "
                            "written (a read-only disk or folder); commands run without one")
        return None
    try:
        os.makedirs(narr, mode=0o700, exist_ok=True)
        fd = os.open(os.path.join(narr, AUTOSTART_LOCK),
                     os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        _warn_once(git_dir, f"no narr server can start for this world ({exc.strerror}: "
                            f"{exc.filename or narr}); commands run without one")
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
        elif client.lock_held(git_dir) and not _holder_ended(git_dir):
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
            delay = _failed(git_dir, failures + 1, now)
            _warn(f"the narr server started {_ago(state.get('spawned'), now)} never served "
                  f"(see {os.path.join(narr, LOG_FILE)}); commands run without one, and the "
                  f"next tries again in {_minutes(delay)} (narr serve --detach starts one now)")
            return None
        retry_at = state.get("retry_at")
        if isinstance(retry_at, (int, float)) and now < retry_at:
            return None  # waiting after a failed start
        room = _room(narr)
        if room is not None and room < LEAST_ROOM:
            delay = _failed(git_dir, failures + 1, now)
            _warn(f"no narr server starts: the disk holding {narr} is full ({room} bytes "
                  f"free); commands run without one, and the next tries again in "
                  f"{_minutes(delay)}")
            return None
        pid = _spawn(git_dir, directory, fd)
        if pid is not None:
            _write_state(git_dir, failures, pid, now, None)
        return pid
    finally:
        os.close(fd)


def _holder_ended(git_dir: str) -> bool:
    """Whether the process ``server.lock`` names has ended though the lock is still held: a
    killed server's pid turns zombie while its other threads are still letting go of their
    files, the lock among them. A server started now waits for the lock (it gives a lock
    held a while), where turning away would leave the world without one until some later
    command. A holder that cannot be told (no ``/proc``) is taken to be alive."""
    pid, _, identity = client.lock_holder(git_dir).strip().partition(" ")
    if not pid.isdigit() or identity in ("", "None"):
        return False
    return client.process_identity(int(pid)) != identity


def _failed(git_dir: str, failures: int, now: float) -> float:
    """Note the ``failures``-th failed start in a row; the seconds until the next try."""
    delay = _delay(failures)
    _write_state(git_dir, failures, None, None, now + delay)
    return delay


def _delay(failures: int) -> float:
    """Seconds to wait after ``failures`` failed starts in a row."""
    return min(FIRST_RETRY_SECONDS * 2.0 ** min(max(failures, 1) - 1, 12), LONGEST_RETRY_SECONDS)


def _room(narr: str) -> int | None:
    """Bytes free for this user on the disk of ``narr`` (None where the system does not say)."""
    try:
        st = os.statvfs(narr)
    except (OSError, AttributeError):
        return None
    return st.f_bavail * st.f_frsize


def _recorded(git_dir: str, pid: object) -> bool:
    """Whether the server spawned as ``pid`` wrote this world's record: it got to serve."""
    info = client.read_server_file(git_dir)
    return info is not None and client.names_this_world(info, git_dir) and info.get("pid") == pid


def read_state(git_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """The note of automatic starts: the last start (``pid``, ``spawned``) while it has not
    served, and the failures since a server last served (``failures``, ``failed_at``,
    ``retry_at``, seconds since the epoch); None when there is none (or it is unreadable)."""
    found = _state_names(os.path.join(git_dir, "narr"))
    if not found:
        return None
    failures, pid, spawned, retry = max(found.values(), key=lambda v: (v[2], v[3]))
    state: dict[str, object] = {"failures": failures}
    if pid:
        state.update(pid=pid, spawned=spawned / 1000)
    if retry:
        state.update(retry_at=retry / 1000, failed_at=retry / 1000 - _delay(failures))
    return state


def _state_names(narr: str) -> dict[str, tuple[int, int, int, int]]:
    """The notes in ``narr`` by file name: (failures, pid, spawned ms, retry ms) each."""
    try:
        names = os.listdir(narr)
    except OSError:
        return {}
    found = {}
    for name in names:
        if name.startswith(STATE_PREFIX):
            parts = name[len(STATE_PREFIX):].split("-")
            if len(parts) == 4 and all(part.isdigit() for part in parts):
                failures, pid, spawned, retry = (int(part) for part in parts)
                found[name] = (failures, pid, spawned, retry)
    return found


def waiting(git_dir: str | os.PathLike[str]) -> dict[str, object] | None:
    """The failures an automatic start is waiting out (``narr serve --status``), or None."""
    state = read_state(git_dir)
    retry_at = state.get("retry_at") if state else None
    if not state or not isinstance(retry_at, (int, float)) or retry_at <= time.time():
        return None  # nothing waited out: the next command starts one
    return {k: state[k] for k in ("failures", "failed_at", "retry_at") if k in state}


def clear_state(git_dir: str | os.PathLike[str]) -> None:
    """A server serves this world: no start is pending, no failure is waited out, and an
    unwritable world that stops a server is worth a warning again."""
    narr = os.path.join(git_dir, "narr")
    for name in _state_names(narr):
        try:  # noqa: SIM105 (contextlib is one more import before a command starts)
            os.unlink(os.path.join(narr, name))
        except OSError:
            pass
    try:  # noqa: SIM105
        os.unlink(_warned_path(str(git_dir)))
    except OSError:
        pass


def _write_state(git_dir: str, failures: int, pid: int | None, spawned: float | None,
                 retry_at: float | None) -> None:
    """Replace the note: an empty file named for what it says (see the module's doc)."""
    narr = os.path.join(git_dir, "narr")
    earlier = _state_names(narr)
    name = (f"{STATE_PREFIX}{failures}-{pid or 0}-{round((spawned or 0) * 1000)}-"
            f"{round((retry_at or 0) * 1000)}")
    try:
        os.close(os.open(os.path.join(narr, name),
                         os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    except OSError:
        return  # not remembered: the next command simply tries again
    for old in earlier:
        if old != name:
            try:  # noqa: SIM105
                os.unlink(os.path.join(narr, old))
            except OSError:
                pass


def _warned_path(git_dir: str) -> str:
    """Where narr remembers that it told the user no server can start for ``git_dir``."""
    env = os.environ
    cache = env.get("XDG_CACHE_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"),
                                                       ".cache")
    key = os.path.realpath(git_dir).encode("utf-8", "surrogateescape")
    return os.path.join(cache, "narr", "no-server", f"{zlib.crc32(key):08x}{zlib.adler32(key):08x}")


def _warn_once(git_dir: str, message: str) -> None:
    """``message``, the first time for this world only (never, where that cannot be kept)."""
    path = _warned_path(git_dir)
    if os.path.lexists(path):
        return
    try:
        os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    except OSError:
        return  # it could not be remembered: quiet, rather than the same words every command
    _warn(message)


def _minutes(seconds: float) -> str:
    minutes = round(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


def _ago(when: object, now: float) -> str:
    if not isinstance(when, (int, float)):
        return "last"
    return f"{max(0, round(now - when))} s ago"


def ask_to_stop(info: dict[str, object]) -> bool:
    """Ask a proven server to stop, over its socket; whether it heard. (A server of other
    code may not name itself first: its first frame is skipped when it does, not awaited.)"""
    import _socket

    path = info.get("socket")
    if not isinstance(path, str) or client.serving(info) != "yes":
        return False  # a stopped server cannot hear: the new one waits for its lock, in vain
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    sock.settimeout(client.CONNECT_TIMEOUT)
    try:
        sock.connect(path)
        if client.peer_pid(sock) not in (None, info.get("pid")):
            return False
        client.send_frame(sock, client.STDIN, client.dumps({"control": "stop"}).encode())
        frames = client.Frames(sock)
        frame = frames.next(5.0)
        if frame is not None and frame[0] == client.HELLO:
            frame = frames.next(5.0)
        return frame is not None
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
            "from narrative.serve.autostart import after_starter; after_starter(); "
            "from narrative.cli import main; main(prog_name='narr')", package_parent]
    if directory is not None:
        args += ["-C", directory]
    try:
        log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW
                      | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        _warn_once(git_dir, f"no narr server can start for this world ({exc.strerror}: "
                            f"{log_path}); commands run without one")
        return None
    try:
        os.set_inheritable(lock_fd, True)
        return os.posix_spawn(
            sys.executable, [*args, "serve", "--auto"],
            {**os.environ, HANDOFF_VARIABLE: str(lock_fd), STARTER_VARIABLE: str(os.getpid())},
            file_actions=[(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                          (os.POSIX_SPAWN_DUP2, log, 1), (os.POSIX_SPAWN_DUP2, log, 2)],
            setsid=True)
    except OSError as exc:
        _warn_once(git_dir, f"no narr server can start for this world ({exc.strerror}); "
                            "commands run without one")
        return None
    finally:
        os.close(log)


def after_starter(limit: float = STARTER_WAIT_SECONDS) -> None:
    """Wait (in the server being started, before its own start-up) until the command that
    started it has ended, at most ``limit`` seconds.

    That command runs in process while the server starts, and the server's start-up (its
    imports, a watch on every folder) takes as much processor time as the command or more:
    where no core is free for it (a busy machine), the command the user waits for took up
    to twice as long. Commands that come meanwhile run in process, as they do while
    a server starts; none starts another (this process holds the starter's lock). The
    starter is this process's parent until it ends (a new session keeps the parent)."""
    value = os.environ.pop(STARTER_VARIABLE, None)
    if value is None or not value.isdigit():
        return
    starter, deadline = int(value), time.monotonic() + limit
    while os.getppid() == starter and time.monotonic() < deadline:
        time.sleep(0.01)
