"""``narr serve``: one long-running process per world that runs narr commands for thin clients.

The server imports narr once and keeps it imported; each request runs the very
click command the client would have run (``narrative.cli.main``, standalone, so
click's own usage errors, ``--help`` and exit codes are untouched) with the
client's arguments, working directory, environment and terminal. Each command
opens its own :class:`~narrative.store.worldrepo.WorldRepo`, so two requests
never share a handle or its re-entrant write lock: writers exclude each other
through the world's ``flock`` exactly as two processes do.

Each request carries its client's working directory and environment into the
command (:mod:`narrative.invocation`): the process's own never change, so requests
from clients standing in different directories, with different variables, run
side by side. Commands that only read run at once, each on its own thread.
Every other command (events, resets, replays...) and the HTTP API's writes run
on one writer thread, one at a time, in the order they came, so the server's
clients queue for the world rather than turn each other away as busy; a read
never waits for a write. The main thread only waits for the signal to stop.

The server listens on a Unix socket (mode 0600, in ``.git/narr/``, made private
to the user, or under a private directory in the temporary directory when that
path is too long for a socket) and records itself in ``.git/narr/server.json``:
pid, code version (:func:`narrative.client.code_version`), socket and port, and,
where it watches narr's own files, the code identity it vouches for while they are
unchanged (:mod:`narrative.serve.codewatch`). It names itself first on every
connection, before a client sends anything.

A server serves the world it was started in, not a path: when the world's
directory or its ``.git`` is no longer the one it started with (the device and inode
differ: ``mv w w2 && narr init w``, a world deleted or restored from a backup), it
refuses every request and exits, so neither a client nor an open studio page nor an
agent holding the token writes through it into whatever now stands at the old path.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import queue
import secrets
import signal
import socket
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from narrative import client, invocation
from narrative.errors import ConflictError, InvalidInputError, NarrError
from narrative.ids import new_event_id
from narrative.serve import autostart, streams
from narrative.store import collecting

READERS = client.READERS
TOKEN_FILE = "token"
REQUEST_TIMEOUT = 30.0  # a connection that never sends its request holds a thread no longer
REFUSED = client.REFUSED
_MAX_SOCKET_PATH = 100


def narr_dir(git_dir: Path) -> Path:
    """``.git/narr``, made private to the user: the socket and the token live there."""
    path = git_dir / "narr"
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


def socket_path(git_dir: Path) -> Path:
    path = git_dir / "narr" / "server.sock"
    if len(os.fsencode(path)) <= _MAX_SOCKET_PATH:
        return path
    # A Unix socket's path is limited to about 100 bytes; a deep world gets one in a
    # directory only this user can enter.
    private = Path(tempfile.gettempdir()) / f"narr-{os.getuid()}"
    private.mkdir(mode=0o700, exist_ok=True)
    st = private.lstat()
    if st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise ConflictError(f"{private} is not private to this user; narr will not put its socket "
                            "there", hint="remove it, or serve a world with a shorter path")
    digest = hashlib.sha1(os.fsencode(git_dir)).hexdigest()[:16]
    return private / f"{digest}.sock"


def token(git_dir: Path) -> str:
    """The world's bearer token for the HTTP API, made on first use (mode 0600)."""
    path = narr_dir(git_dir) / TOKEN_FILE
    try:
        existing = path.read_text("ascii").strip()
    except FileNotFoundError:
        existing = ""
    if existing:
        return existing
    value = secrets.token_urlsafe(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value + "\n")
    os.chmod(path, 0o600)
    return value


def running(git_dir: Path) -> dict[str, Any] | None:
    """The record of this world's live server (whatever its version), proven
    (:func:`narrative.client.proven_server`), or None."""
    return client.proven_server(git_dir)


def control(git_dir: Path, what: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """Ask this world's proven server for ``status`` (or to ``stop``); its answer, or None
    when there is none or it does not answer as this world's server."""
    info = running(git_dir)
    return client.ask(info, what, timeout) if info is not None else None


def stop(git_dir: Path, timeout: float = 10.0) -> dict[str, Any] | None:
    """Stop this world's server (any version); its record, or None when none was running.

    Only a proven server is stopped, and it is asked over its socket first. A signal goes
    only to the very process that recorded itself (same pid and start) while it still holds
    the world's lock, runs narr's server by its command line, and only when asking did not
    make it go (it is stopped, or does not answer). A record that proves nothing is removed,
    never acted on.
    """
    info = running(git_dir)
    if info is None:
        remove_stale_record(git_dir)
        return None
    pid = int(info["pid"])
    answered = control(git_dir, "stop") is not None
    if not answered and not _runs_narr_serve(pid):
        raise ConflictError(f"pid {pid} holds this world's server lock but does not answer as "
                            "narr's server; narr leaves it alone",
                            hint=f"see what it is (ps -p {pid} -f) and stop it yourself")
    deadline = time.monotonic() + timeout
    # One that heard goes by itself; one that could not hear (stopped) is told by a signal.
    for sig in (None, signal.SIGTERM, signal.SIGKILL) if answered else (signal.SIGTERM,
                                                                       signal.SIGKILL):
        if sig is not None:
            if not _still_ours(git_dir, info) or not _runs_narr_serve(pid):
                break
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
                if sig == signal.SIGTERM:
                    os.kill(pid, signal.SIGCONT)  # a stopped server hears nothing until it goes on
            deadline = time.monotonic() + timeout
        while _still_ours(git_dir, info) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.02)
        if not _still_ours(git_dir, info):
            break
    remove_stale_record(git_dir)
    return info


def _still_ours(git_dir: Path, info: dict[str, Any]) -> bool:
    """Whether the server of ``info`` still runs and still is who it recorded itself as."""
    pid = int(info["pid"])
    if not _running(pid):
        return False
    identity = client.process_identity(pid)
    if identity is None:  # no /proc: the pid is proven only by what answers on its socket
        answer = control(git_dir, "status", timeout=1.0)
        return answer is not None and answer.get("pid") == pid
    proven = client.proven_server(git_dir)
    return proven is not None and proven.get("pid") == pid and identity == info.get("process")


def _runs_narr_serve(pid: int) -> bool:
    """Whether ``pid``'s command line is narr's server (``narr serve``, ``python -m narrative
    ... serve``, or as a command starts one); True where the system does not say (the other
    proofs then stand alone)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            argv = fh.read().split(b"\0")
    except FileNotFoundError:
        return not os.path.isdir("/proc")
    except OSError:
        return False
    narr = any(os.path.basename(arg) == b"narr" or b"narrative" in arg for arg in argv)
    return narr and b"serve" in argv


def _running(pid: int) -> bool:
    """Whether ``pid`` still runs: a detached server that has exited stays a zombie until
    whoever adopted it reaps it (a second and more in some containers), and has stopped."""
    if not client.pid_alive(pid):
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rpartition(b")")[2].split()[0]
    except (OSError, IndexError):
        return True  # no /proc: as alive as kill(pid, 0) says
    return state not in (b"Z", b"X")


def _reap(pid: int) -> None:
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def remove_stale_record(git_dir: Path) -> bool:
    """Remove ``server.json`` and this world's socket when no server holds the world's lock
    (taken here for the moment it takes, so a server starting now cannot lose its record);
    whether there was one to remove. The socket removed is the one this world's path maps
    to, never a path the record names: a copied world's record names the original's."""
    lock_path = git_dir / "narr" / client.LOCK_FILE
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    except OSError:
        return False  # an unwritable .git/narr: nothing can be removed there either
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a server holds it: the record is its own, or about to be
        removed = False
        with contextlib.suppress(OSError):
            (git_dir / "narr" / client.SERVER_FILE).unlink()
            removed = True
        with contextlib.suppress(OSError, ConflictError):
            sock = socket_path(git_dir)
            if sock.is_socket():
                sock.unlink()
        return removed
    finally:
        os.close(fd)


def _take_lock(path: Path, wait: float) -> int | None:
    """The world's server lock, held through the returned fd; None when another server has
    it after ``wait`` seconds (a starter or ``narr serve --status`` holds it for an instant)."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    deadline = time.monotonic() + wait
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(0.02)
            continue
        # Name the holder: a record proves a server only while the lock names its writer
        # (a server starting after one was killed holds the lock before it records itself).
        os.ftruncate(fd, 0)
        os.pwrite(fd, client.holder_text(os.getpid(), client.process_identity(os.getpid()))
                  .encode(), 0)
        return fd


class _Counted:
    """The HTTP app with each request counted as the socket's are, from its first byte to
    its last: a page of the studio is activity, so a server with an idle limit stays while
    one is used. A page's change-notice stream is a request under way for as long as the
    page is open and listening; a page open is someone who may save or record at any moment,
    and a server gone idle under it would leave it dead and out of date. The stream ends
    when the page closes (the browser hangs up), and the idle time counts from then."""

    def __init__(self, app: Any, server: Server) -> None:
        self.app = app
        self.server = server

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        if self.server.moved():  # a page or agent of the world that was here: it is gone
            from narrative.errors import NotAWorldError

            gone = NotAWorldError("this narr server's world was moved or replaced: the server "
                                  "stops, and writes nothing to what stands at its old path",
                                  hint="open the studio again from the world (narr studio)")
            body = json.dumps(gone.to_json()).encode()
            await send({"type": "http.response.start", "status": 503,
                        "headers": [(b"content-type", b"application/json"),
                                    (b"content-length", str(len(body)).encode())]})
            await send({"type": "http.response.body", "body": body})
            return
        self.server.begin_request()
        try:
            await self.app(scope, receive, send)
        finally:
            self.server.end_request()


@dataclass
class Server:
    root: Path
    git_dir: Path
    port: int | None = None
    host: str = "127.0.0.1"
    version: str = field(default_factory=client.code_version)
    idle_minutes: float | None = None  # exit after this long without a request (None: never)
    auto: bool = False  # started by a command (narr.autoServe), not by narr serve
    started_by: str = "narr serve"  # what started it: "a narr command", "narr serve", "narr studio"

    def __post_init__(self) -> None:
        self.root = self.root.resolve()
        self.git_dir = self.git_dir.resolve()
        self.socket = socket_path(self.git_dir)
        self.jobs: queue.Queue[_Job] = queue.Queue()
        self._writer: threading.Thread | None = None
        self.stopping = threading.Event()
        self.home_cwd = str(self.root)
        # A request's environment: the variables a client forwards are its own; the
        # server's other variables stay as the server was started with them.
        forwarded = client.forwarded_env(os.environ)
        self.base_env = {k: v for k, v in os.environ.items() if k not in forwarded}
        self.http_port: int | None = None
        self.watcher: Any = None
        self.started = time.time()
        self.requests = 0
        self.last_request = time.monotonic()
        self.active = 0  # requests under way: a server is idle only with none
        self._counting = threading.Lock()
        self.exit_reason: str | None = None
        self.profile_dir = os.environ.get("NARR_SERVE_PROFILE") or None
        self._http: Any = None
        self._lock_fd = -1
        self._catalog: Any = None
        self._narr_fd = -1  # .git/narr itself, wherever the world is moved to
        self._home = _place(self.root, self.git_dir)  # the world it serves, by device and inode
        self._socket_inode: tuple[int, int] | None = None
        self._code_watch: Any = None  # narr's own files, where they can be watched
        self.code: str | None = None  # the code identity the watch vouches for

    # --- running --------------------------------------------------------------------

    def run(self, ready: Callable[[dict[str, Any]], None] | None = None) -> None:
        """Serve until SIGTERM, SIGINT or ``narr serve --stop``."""
        existing = running(self.git_dir)
        if existing is not None and existing.get("pid") != os.getpid() and (
                not self.auto or existing.get("version") == self.version):
            autostart.clear_state(self.git_dir)  # the world is served: this start did not fail
            raise ConflictError(f"a narr server already serves this world (pid {existing['pid']})",
                                hint="narr serve --status shows it; narr serve --stop stops it")
        narr_dir(self.git_dir)
        # Held for the server's life (the kernel drops it when the process dies, however it
        # dies): the proof that a record names a live server, and why two servers started
        # at once cannot both serve the world. One started by a command waits for a server
        # of other code it asked to go.
        fd = _take_lock(self.git_dir / "narr" / client.LOCK_FILE, 15.0 if self.auto else 1.0)
        if fd is None:
            autostart.clear_state(self.git_dir)  # another server holds the world
            _drop_handoff()
            raise ConflictError("another narr server is starting or running for this world",
                                hint="narr serve --status shows it")
        self._lock_fd = fd
        self._narr_fd = os.open(self.git_dir / "narr", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        os.chdir(self.home_cwd)
        self._keep_catalog_open()
        from narrative.serve.pools import lend_repositories_to_readers

        lend_repositories_to_readers()
        streams.install()
        from narrative.cli import main as cli  # imported once, warm for every request

        for name in list(cli.commands):  # every command's module too (they load lazily)
            cli.commands[name]

        previous = {sig: signal.signal(sig, self._on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}
        listener: socket.socket | None = None
        writer = self._writer = threading.Thread(target=self._write_jobs, name="narr-writer",
                                                 daemon=True)
        try:
            self._start_watcher()
            self._watch_code()
            writer.start()
            listener = self._listen()
            if self.port is not None:
                self._start_http()
            threading.Thread(target=self._accept, args=(listener,), name="narr-accept",
                             daemon=True).start()
            record = self._write_record()
            with self._counting:  # nobody could reach it before: idle from now, not from its start
                self.last_request = time.monotonic()
            if self.auto:
                print(f"narr serve: pid {os.getpid()} started automatically for {self.root}"
                      + (f"; exits after {self.idle_minutes:g} minutes without a request"
                         if self.idle_minutes else ""), file=sys.__stderr__, flush=True)
            if ready is not None:
                ready(record)
            threading.Thread(target=_import_engine, name="narr-warm", daemon=True).start()
            self._wait_for_the_end()
        finally:
            self.stopping.set()
            if listener is not None:
                listener.close()
            if writer.is_alive():
                writer.join()  # a write under way finishes before the server goes
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if self._http is not None:
                self._http.should_exit = True
            if self.watcher is not None:
                from narrative.store import let_go

                let_go(self.watcher)
            if self._code_watch is not None:
                self._code_watch.close()
            if self._catalog is not None:
                self._catalog.close()
            self._remove_own_record()
            os.close(self._narr_fd)
            os.close(self._lock_fd)
            if self.exit_reason:
                print(f"narr serve: pid {os.getpid()} exits: {self.exit_reason}", file=sys.__stderr__)

    def _wait_for_the_end(self) -> None:
        """Wait for a stop: a signal, ``narr serve --stop``, ``idle_minutes`` without a request,
        or narr's code changing on disk (an upgrade or an edit: clients of the new code would
        never use this server again, and it would hold old code's state)."""
        checked = time.monotonic()
        while not self.stopping.wait(0.2):
            if self.moved():
                self.stopping.set()
                break
            now = time.monotonic()
            if now - checked < 2.0:
                continue
            checked = now
            if self.idle_minutes is not None and not self.active \
                    and now - self.last_request >= self.idle_minutes * 60:
                self.exit_reason = f"no request for {self.idle_minutes:g} minutes"
            elif not self.code_unchanged():
                self.exit_reason = "narr's code changed"
            elif not self._reachable():
                self.exit_reason = "its socket was removed or replaced"
            if self.exit_reason:
                self.stopping.set()

    def _reachable(self) -> bool:
        """Whether clients can still find this server: its socket is the one it bound, and
        its record names it, written again if it is gone or names another (removed by hand,
        or by a tidy-up: with no record every command would take it that no server runs,
        and start none while this one holds the world's lock). An unreachable server
        exits, and the next command starts one."""
        try:
            st = os.stat(self.socket, follow_symlinks=False)
        except OSError:
            return False
        if (st.st_dev, st.st_ino) != self._socket_inode:
            return False
        if not self._recorded():
            try:
                self._place_record(self._draft_record(self._identity()))
            except OSError:
                return False
        return True

    def _draft_record(self, record: dict[str, Any]) -> str:
        """Write ``record`` beside the record's place, in the ``.git/narr`` this server holds
        open (wherever the world went); the draft's name."""
        draft = f".{client.SERVER_FILE}.{os.getpid()}"
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600,
                     dir_fd=self._narr_fd)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(record, indent=2) + "\n")
        return draft

    def _place_record(self, draft: str) -> None:
        os.replace(draft, client.SERVER_FILE, src_dir_fd=self._narr_fd, dst_dir_fd=self._narr_fd)

    def _recorded(self) -> bool:
        """Whether the record in the ``.git/narr`` this server holds open names it."""
        try:
            fd = os.open(client.SERVER_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK,
                         dir_fd=self._narr_fd)
            with os.fdopen(fd, "rb") as fh:
                return bool(json.loads(fh.read(1 << 16)).get("pid") == os.getpid())
        except (OSError, ValueError, AttributeError):
            return False

    def moved(self) -> bool:
        """Whether the world's directory or its ``.git`` is no longer the one this server
        started in (moved, replaced, deleted): then it serves nobody, and exits."""
        if self.exit_reason is None and _place(self.root, self.git_dir) != self._home:
            self.exit_reason = "its world moved or was replaced"
            self.stopping.set()
        return self.exit_reason == "its world moved or was replaced"

    def _remove_own_record(self) -> None:
        """Remove the record and socket this server made (and nothing another made): the
        record in the ``.git/narr`` it holds open, wherever the world went; the socket only
        while it is the one this server bound (a world made since at the old path may have
        a server of its own there)."""
        if self._recorded():
            with contextlib.suppress(OSError):
                os.unlink(client.SERVER_FILE, dir_fd=self._narr_fd)
        with contextlib.suppress(OSError):
            st = os.stat(self.socket, follow_symlinks=False)
            if (st.st_dev, st.st_ino) == self._socket_inode:
                self.socket.unlink()

    def _write_jobs(self) -> None:
        """The writer thread: every command that may write, one at a time, in order.

        Once the server stops, what is still queued is cancelled: its clients are told
        nothing ran, and run the command themselves.
        """
        from narrative.serve.pools import keep_repositories_warm

        keep_repositories_warm()  # the writers share this thread's repository handles
        try:
            while not self.stopping.is_set():
                try:
                    job = self.jobs.get(timeout=0.2)
                except queue.Empty:
                    continue
                try:
                    job.run()
                except Exception:  # our bug, in one request: the others still get written
                    traceback.print_exc(file=sys.__stderr__)
                job.finish()
        finally:
            while True:
                try:
                    self.jobs.get_nowait().cancel()
                except queue.Empty:
                    break

    def _wait(self, job: _Job) -> bool:
        """Queue ``job`` for the writer and wait for it; False when it was cancelled unrun."""
        self.jobs.put(job)
        while not job.done.wait(0.5):
            writer = self._writer
            if self.stopping.is_set() and (writer is None or not writer.is_alive()):
                job.cancel()  # queued after the writer's last look: it never runs
        return job.ran

    def _keep_catalog_open(self) -> None:
        """Hold a connection to the catalog for the server's life.

        SQLite checkpoints and removes the write-ahead log when the last connection
        closes; each command opens and closes its own, so each paid for that (10 ms and
        more). With this one open no command's close is the last.
        """
        try:
            from narrative.store import Catalog

            self._catalog = Catalog(self.git_dir / "narr" / "catalog.sqlite")
            self._catalog.tree()  # connected, in WAL mode, holding its share of the log
        except Exception:  # a cache: without it every close checkpoints, as without a server
            self._catalog = None

    def _on_signal(self, signum: int, frame: Any) -> None:
        self.stopping.set()

    def _start_watcher(self) -> None:
        try:
            from narrative.store import keep_watching

            watcher = keep_watching(self.root, self.git_dir)
        except Exception as exc:  # no watcher: every scan is a full one, as without a server
            print(f"narr serve: not watching files ({exc})", file=sys.__stderr__)
            return
        self.watcher = watcher

    def _watch_code(self) -> None:
        from narrative.serve.codewatch import watch_code

        self._code_watch = watch_code(self.version)
        if self._code_watch is not None:
            self.code = client.code_identity()

    def code_unchanged(self) -> bool:
        """Whether narr's files are still those this server runs (by its watch where it has
        one, else by working the version out again)."""
        if self._code_watch is not None:
            return bool(self._code_watch.unchanged())
        return client.current_code_version() == self.version

    def _vouched_code(self) -> str | None:
        """The code identity this server vouches for now: None without a watch, or once its
        files changed (then a client compares versions, or runs the command itself)."""
        if self._code_watch is None or not self._code_watch.unchanged():
            return None
        return self.code

    def _listen(self) -> socket.socket:
        with contextlib.suppress(FileNotFoundError):
            self.socket.unlink()
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o177)
        try:
            listener.bind(str(self.socket))
        finally:
            os.umask(old)
        os.chmod(self.socket, 0o600)
        st = os.stat(self.socket, follow_symlinks=False)
        self._socket_inode = (st.st_dev, st.st_ino)
        listener.listen(64)
        return listener

    def _write_record(self) -> dict[str, Any]:
        """Record this server, and let go of the starter's lock before the record can be
        read: a command that finds this server proven may start the next one at once (a
        server of other code is replaced by the first command of this code), where the
        lock still held would turn it away as though a start were under way. Meanwhile
        commands see ``server.lock`` held by a live process and start none either."""
        record = self._identity()
        draft = self._draft_record(record)  # a full disk fails here: the note kept
        autostart.clear_state(self.git_dir)  # serving: no failed start is waited out
        _drop_handoff()
        self._place_record(draft)
        return record

    def _start_http(self) -> None:
        import uvicorn

        from narrative.serve.http import make_app

        app = _Counted(make_app(self, token(self.git_dir)), self)
        config = uvicorn.Config(app, host=self.host, port=self.port or 0, log_level="warning",
                                lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, name="narr-http", daemon=True)
        thread.start()
        deadline = time.monotonic() + 10
        while not server.started and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not server.started:
            raise InvalidInputError(f"narr serve: cannot listen on {self.host}:{self.port}",
                                    hint="choose another --port (or --host)")
        self._http = server
        self.http_port = int(server.servers[0].sockets[0].getsockname()[1])
        from narrative.serve.studio import warm

        threading.Thread(target=warm, args=(self.root,), name="narr-warm", daemon=True).start()

    def _identity(self) -> dict[str, Any]:
        """What the record says: who the server is (pid and its start, for
        :func:`narrative.client.proven_server`), for which world, and how to reach it."""
        return {"pid": os.getpid(), "process": client.process_identity(os.getpid()),
                "version": self.version, "code": self.code,
                "socket": str(self.socket), "root": str(self.root),
                "git_dir": str(self.git_dir), "port": self.http_port, "host": self.host,
                "started": self.started, "auto": self.auto, "started_by": self.started_by,
                "idle_minutes": self.idle_minutes}

    def status(self) -> dict[str, Any]:
        quiet = 0.0 if self.active else time.monotonic() - self.last_request
        idle_exit = None
        if self.idle_minutes is not None:  # (with a request under way: at the earliest)
            idle_exit = time.time() + max(0.0, self.idle_minutes * 60 - quiet)
        return {**self._identity(), "requests": self.requests, "active": self.active,
                "idle_s": round(quiet, 1), "exits_at": idle_exit,
                "memory_mib": client.resident_mib(os.getpid()),
                "watcher": self.watcher.describe() if self.watcher is not None else None}

    # --- requests -------------------------------------------------------------------

    def _accept(self, listener: socket.socket) -> None:
        while not self.stopping.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.settimeout(REQUEST_TIMEOUT)
                client.send_frame(conn, client.HELLO, json.dumps(
                    {"pid": os.getpid(), "git_dir": str(self.git_dir),
                     "version": self.version, "code": self._vouched_code()}).encode())
                frame = client.recv_frame(conn)
                conn.settimeout(None)
                if frame is None:
                    return
                req = json.loads(frame[1])
                if "control" in req:
                    self._control(conn, req["control"])
                    return
                if self.stopping.is_set() or self.moved() or not self._same_code(req) \
                        or req.get("git_dir") not in (None, str(self.git_dir)):
                    client.send_frame(conn, REFUSED, b"")  # not for this server: run it there
                    return
                self.begin_request()
                try:
                    self.run_request(conn, req)
                finally:
                    self.end_request()
            except (OSError, ValueError):
                return

    def _same_code(self, req: dict[str, Any]) -> bool:
        """Whether a request comes from a client of this server's code: the same version, or
        the same identity while this server's files are unchanged."""
        if req.get("version") == self.version:
            return True
        code = req.get("code")
        return code is not None and code == self._vouched_code()

    def begin_request(self) -> None:
        """A request under way, over the socket or HTTP: the server is idle only with none."""
        with self._counting:
            self.requests += 1
            self.active += 1

    def end_request(self) -> None:
        with self._counting:
            self.active -= 1
            self.last_request = time.monotonic()

    def _control(self, conn: socket.socket, what: str) -> None:
        if what == "stop":
            self.stopping.set()
        client.send_frame(conn, client.STDOUT, json.dumps(self.status()).encode())

    def run_request(self, conn: socket.socket, req: dict[str, Any]) -> None:
        lock = threading.Lock()  # the stdin request and the output share the connection

        def write(channel: int, data: bytes) -> None:
            with lock, contextlib.suppress(OSError):
                client.send_frame(conn, channel, data)

        def read_stdin(most: int) -> bytes:
            write(client.WANT_STDIN, str(most).encode())
            frame = client.recv_frame(conn)
            if frame is None:
                # The client went (Ctrl-C, killed, or it gave up on a stopped server) before
                # the input ended: what was read is not the command's input. As Ctrl-C in a
                # process of its own: nothing more runs.
                raise KeyboardInterrupt
            return frame[1][:most]

        def page(command: str, text: str) -> None:
            write(client.PAGE, command.encode() + b"\0" + text.encode())

        request_io = streams.RequestIO(
            write, read_stdin, stdout_tty=bool(req.get("stdout_tty")),
            stderr_tty=bool(req.get("stderr_tty")), stdin_tty=bool(req.get("stdin_tty")),
            columns=int(req.get("columns", 80)), lines=int(req.get("lines", 24)), page=page)
        argv = [str(a) for a in req.get("argv", [])]
        _, command = client.split_globals(argv)
        cwd = str(req.get("cwd") or self.home_cwd)
        env = {**self.base_env, **{str(k): str(v) for k, v in dict(req.get("env", {})).items()}}
        code: list[int] = [1]
        let_go = [False]

        gone = threading.Event()  # the client hung up: a long reading stops at its next check

        def work() -> None:
            from narrative.engine.calloff import watching

            if _hung_up(conn) or self.moved():
                let_go[0] = True  # its client gave up waiting (this server was stopped), or
                return  # the world it was for is gone: it never began
            # From here on the command may write. An event's id is named now, so that its
            # client can tell, should this server die, whether the event was recorded.
            event_id = new_event_id() if command == "event" else None
            write(client.STARTED, (event_id or "").encode())
            from narrative.store import call_off_writes, give_up_waiting

            # A write whose client goes (Ctrl-C, killed, or it gave up on this server while
            # it was stopped) before the write writes anything writes nothing, as a process
            # stopped by Ctrl-C then would: a client that gave up kept the event's words for
            # a retry, which must not meet the same event recorded by this server going on.
            writes = None if command in READERS else gone.is_set
            give_up_waiting(writes)
            call_off_writes(writes)
            try:
                with invocation.running(cwd, env, event_id), streams.serving(request_io), \
                        _profiled(self.profile_dir, command, self.requests), \
                        collecting() as afterwards, watching(gone.is_set):
                    code[0] = run_cli(argv, str(req.get("prog_name", "narr")))
            finally:
                give_up_waiting(None)
                call_off_writes(None)
            job.afterwards = afterwards

        job = _Job(work)
        threading.Thread(target=_watch_hangup, args=(conn, job.done, gone), daemon=True).start()
        try:
            if command in READERS:
                job.run()
            elif not self._wait(job):
                write(REFUSED, b"")  # stopped before it ran: nothing happened, say so
                return
            if let_go[0]:
                write(REFUSED, b"")
                return
            write(client.EXIT, str(code[0]).encode())
        finally:
            job.answered.set()
        if command in READERS:
            job.finish()

    def submit(self, work: Callable[[], Any]) -> Any:
        """Run ``work`` on the writer thread (for the HTTP API's writes); its result or its error."""
        result: list[Any] = []
        error: list[BaseException] = []

        def run() -> None:
            try:
                result.append(work())
            except BaseException as exc:
                error.append(exc)

        if not self._wait(_Job(run)):
            raise NarrError("the narr server is stopping")
        if error:
            raise error[0]
        return result[0]


def _watch_hangup(conn: socket.socket, done: threading.Event, gone: threading.Event) -> None:
    """Set ``gone`` when the client's end of ``conn`` closes before ``done``: poll for the
    peer's hang-up without reading (the command may read its standard input meanwhile)."""
    import select

    if not hasattr(select, "poll"):
        return
    hangup = getattr(select, "POLLRDHUP", 0) | select.POLLHUP | select.POLLERR
    poller = select.poll()
    try:
        poller.register(conn, hangup)
    except (OSError, ValueError):
        return
    while not done.is_set():
        try:
            events = poller.poll(250)
        except (OSError, ValueError):
            return
        if any(mask & hangup for _, mask in events):
            gone.set()
            return


def _hung_up(conn: socket.socket) -> bool:
    """Whether the client at the other end of ``conn`` has gone (closed its end)."""
    try:
        return conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _place(root: Path, git_dir: Path) -> tuple[tuple[int, int], ...] | None:
    """The world's directory and its ``.git`` by device and inode (None: one is gone)."""
    try:
        return tuple((st.st_dev, st.st_ino) for st in (os.stat(root), os.stat(git_dir)))
    except OSError:
        return None


def _drop_handoff() -> None:
    """Let go of the lock of the command that started this server (``narr.autoServe``)."""
    value = os.environ.pop(autostart.HANDOFF_VARIABLE, None)
    if value is not None and value.isdigit():
        with contextlib.suppress(OSError):
            os.close(int(value))


class _Job:
    """One command for the writer thread: run once, or cancelled before it started."""

    def __init__(self, work: Callable[[], None]) -> None:
        self._work = work
        self._lock = threading.Lock()
        self._state = "queued"
        self.done = threading.Event()
        self.answered = threading.Event()  # the client has its answer
        self.afterwards: list[Callable[[], None]] = []  # what the command left until then

    def finish(self) -> None:
        """Do what the command left for after its answer (:mod:`narrative.store.deferred`),
        once the answer is out, so that the work does not hold it up."""
        if not self.afterwards:
            return
        self.answered.wait(5.0)
        for work in self.afterwards:
            try:
                work()
            except Exception:  # our bug, in work nobody waits for: the server goes on
                traceback.print_exc(file=sys.__stderr__)

    def run(self) -> None:
        with self._lock:
            if self._state != "queued":
                return
            self._state = "running"
        try:
            self._work()
        finally:
            self.done.set()

    def cancel(self) -> None:
        with self._lock:
            if self._state != "queued":
                return
            self._state = "cancelled"
        self.done.set()

    @property
    def ran(self) -> bool:
        return self._state == "running"


def _import_engine() -> None:
    """Import the engine's modules now, not in a user's first command of each kind (a
    reset's modules cost 20 ms)."""
    import importlib
    import pkgutil
    import warnings

    import narrative.engine

    for info in pkgutil.iter_modules(narrative.engine.__path__):
        with warnings.catch_warnings(), contextlib.suppress(Exception):
            warnings.simplefilter("ignore")
            importlib.import_module(f"narrative.engine.{info.name}")


@contextlib.contextmanager
def _profiled(where: str | None, command: str | None, number: int) -> Iterator[None]:
    """With ``NARR_SERVE_PROFILE=DIR`` in the server's environment when it started, each
    request's profile (cProfile, of the thread that runs it) goes to
    ``DIR/<number>-<command>.prof``."""
    if not where:
        yield
        return
    import cProfile

    profile = cProfile.Profile()
    profile.enable()
    try:
        yield
    finally:
        profile.disable()
        os.makedirs(where, exist_ok=True)
        profile.dump_stats(os.path.join(where, f"{number:05d}-{command or 'none'}.prof"))


def run_cli(argv: list[str], prog_name: str) -> int:
    """Run one narr command as the ``narr`` process would, on this thread's streams; its exit code.

    click's standalone mode does the work the process would do (usage errors,
    ``--help``, ``Aborted!``) and ends in ``SystemExit``, caught here.
    """
    from narrative.cli import main
    from narrative.store import running_command

    # A writer turned away names the holder: "narr event ...", not "narr serve".
    running_command(["narr", *argv])
    from narrative.engine.calloff import CalledOff
    from narrative.store import Abandoned

    try:
        main.main(args=argv, prog_name=prog_name, standalone_mode=True)
    except (Abandoned, CalledOff):
        # Its client went before it wrote anything: what click says of Ctrl-C, and its code.
        print("\nAborted!", file=sys.stderr)
        return 1
    except SystemExit as exc:
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        print(exc.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc(file=sys.stderr)
        return 1
    finally:
        running_command(None)
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
    return 0
