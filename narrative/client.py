"""The ``narr`` entry point: hand the command to a running ``narr serve``, else run it here.

Starting Python and importing click, pygit2 and pydantic costs a command 80 to
200 ms before it does any work. When the world has a server (``narr serve``)
of exactly this code, this module, which imports only the standard library,
forwards the arguments, the working directory, a few environment variables and
whether stdout and stderr are terminals over the server's Unix socket, streams
back stdout and stderr, and exits with the server's exit code. The server runs
the same click command with the same error conversion, so the output is the
same bytes either way.

Anything doubtful runs in this process instead (:func:`narrative.cli.main`): no
world found, no server, a server of other code (an edited checkout counts) or of
another Python, a server that does not prove itself (below), a refused connection,
``NARR_NO_SERVER=1``, a shell asking for completions
(``_NARR_COMPLETE``), and the commands that need this process itself (``serve`` and ``mcp``;
``studio``, which starts one and opens a browser; ``edit``, which opens an editor on
the terminal; ``init``; and ``clone``, ``push`` and ``pull``, whose git needs the
caller's SSH agent and credential helpers).

The protocol (also spoken by :mod:`narrative.serve.server`): the server speaks first,
a frame on channel 7 naming itself (pid, git directory, version). The client sends
nothing until that frame came from the very process the world's record proves
(:func:`proven_server`; the kernel names the process at the other end of the
socket) and matches the record: a listener that is not this world's server never
sees a command's arguments, directory or environment, and a stopped one is not
waited for. The client then sends one frame holding a JSON request; the server
answers with a frame on channel 6 when the command begins (a connection that ends
before it ran nothing: the client runs the command itself), holding the id the
event will have when the command is ``narr event`` (so that a client whose server
died under it can tell whether the event was recorded), frames on channel 1
(stdout bytes), 2 (stderr bytes), 3 (a request for at most N bytes of standard input, N
in decimal, answered by the client with one channel-0 frame of what it read, empty at
the end), 5 (text for the client to show through a pager on its terminal: the pager's
shell command, a NUL, the text) and finally 9 (the exit code
as decimal text), or 4 alone when it ran nothing. A frame is one channel byte, a
4-byte big-endian length and the payload.

Every wait is bounded: connecting, the server's first frame, and, once the command
runs, a server that stops (SIGSTOP, Ctrl-Z) or dies. A server that dies while it
runs an event leaves the client to find out, after the world's journal is
recovered, whether the event was recorded: it says which, and runs it here when it
was not (:mod:`narrative.interrupted`), so the words typed are never lost.
"""

from __future__ import annotations

# Only built-in modules: ``json``, ``socket`` and ``struct`` load ``re`` and ``enum``,
# which cost a thin client more than its whole round trip to the server (``python -X
# importtime``). ``_json`` and ``_socket`` are their C halves.
import _json
import _socket
import os
import sys
import time

TYPE_CHECKING = False  # as typing.TYPE_CHECKING; importing typing costs a thin client ~5 ms
if TYPE_CHECKING:
    import socket
    from typing import Any

# Commands that must run in the caller's own process (studio starts a server and opens a
# browser where the caller sits); the transport commands run git,
# which reaches servers through the caller's SSH agent and credential helpers (variables a
# request does not carry), and a clone makes a directory where the caller stands.
LOCAL_COMMANDS = frozenset({"serve", "studio", "mcp", "edit", "init", "clone", "push", "pull"})
# Commands that ask the writer question after question on the terminal (a server reads a
# client's standard input whole, never line by line): here when they will ask, which is
# when standard input is a terminal and no flag says what to do.
ASKING_COMMANDS = {"chapter": ("--accept", "--dry-run", "--json", "--retry", "-h", "--help")}
# Commands that only read: a server runs them at once, each on its own thread, and a
# client may run one again itself when its server stops under it before it printed.
READERS = frozenset({"status", "log", "show", "get", "nodes", "why", "history", "search", "brief",
                     "threads", "graph", "chains", "reflog", "schema", "path", "check"})
SERVER_FILE = "server.json"
STDIN, STDOUT, STDERR, WANT_STDIN, REFUSED, PAGE, STARTED, HELLO, EXIT = 0, 1, 2, 3, 4, 5, 6, 7, 9
CONNECT_TIMEOUT = 2.0  # a listener whose queue is full: connecting would otherwise wait for ever
HELLO_TIMEOUT = 5.0  # a live server names itself at once; a loaded machine may take a moment
STOPPED_PATIENCE = 10.0  # a server stopped (SIGSTOP, Ctrl-Z) while it runs a command
GONE_PATIENCE = 5.0  # a server whose connection ended: how long it may take to die
INTERRUPT_PATIENCE = 10.0  # after Ctrl-C: how long to wait for the server to say what it did
SEND_TIMEOUT = 60.0
_POLL = 0.1  # how often a waiting client looks at its server's process
_HEADER_SIZE = 5  # a frame's header: its channel (1 byte) and length (4 bytes, big-endian)
# The environment a command can read: narr's settings, where the user's config
# lives, what an exec diffuser runs with, and API keys an llm diffuser names.
ENV_NAMES = frozenset({"HOME", "XDG_CONFIG_HOME", "PATH", "LANG", "LC_ALL", "LC_CTYPE",
                       "EDITOR", "VISUAL", "TZ", "GIT_DIR", "GIT_WORK_TREE", "NO_COLOR", "PAGER"})


def forwarded_env(environ: dict[str, str] | os._Environ[str]) -> dict[str, str]:
    """The variables a request carries (and a server compares with its own)."""
    return {k: v for k, v in environ.items()
            if k in ENV_NAMES or k.startswith("NARR_") or k.endswith("_API_KEY")}


_VERSION: list[str] = []


def code_version() -> str:
    """``__version__`` plus a checksum of the package's source files' names, sizes and mtimes
    and of the Python running them (worked out once per process).

    An edited checkout is different code: its server must not answer for it.
    """
    if not _VERSION:
        _VERSION.append(current_code_version())
    return _VERSION[0]


def current_code_version() -> str:
    """:func:`code_version` as the files on disk stand now (a server compares it with its own
    to notice that narr was upgraded or edited under it)."""
    from narrative import __version__

    package = os.path.dirname(os.path.realpath(__file__))
    listing = []
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith(".py"):
                path = os.path.join(dirpath, name)
                try:
                    st = os.stat(path)
                except OSError:  # removed while we walk: an upgrade under way
                    continue
                listing.append(f"{path[len(package):]}\0{st.st_size}\0{st.st_mtime_ns}\n")
    # Another Python (a new venv, an upgraded interpreter) is other code too.
    listing.append(f"{interpreter()}\0{sys.version}\n")
    import zlib  # (a library of its own: loaded only where the version is worked out)

    text = "".join(listing).encode()
    return f"{__version__}+{zlib.crc32(text):08x}{zlib.adler32(text):08x}{len(listing) - 1}"


def code_identity() -> str:
    """Which code this is, read from no file: narr's version, where its package lies and the
    Python running it. Enough to trust a server that watches its own package's files and
    says they are unchanged (:mod:`narrative.serve.codewatch`); anything less needs the
    whole :func:`code_version`."""
    if not _IDENTITY:
        from narrative import __version__

        package = os.path.dirname(os.path.realpath(__file__))
        _IDENTITY.append(f"{__version__} {package} {interpreter()} {sys.version}")
    return _IDENTITY[0]


def interpreter() -> str:
    """Which Python this is: the program itself and the environment it runs in. Not the
    name it was started by: a virtual environment's ``python`` and ``python3`` are one
    interpreter (the ``narr`` script names one, ``python -m narrative`` whichever was typed),
    and two names for it must not replace each other's server at every command."""
    return f"{os.path.realpath(sys.executable)} in {sys.prefix}"


_IDENTITY: list[str] = []


def dumps(value: Any) -> str:
    """JSON text of what a request holds (strings, numbers, booleans, None, lists, dicts)."""
    if isinstance(value, str):
        return str(_json.encode_basestring_ascii(value))
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and value - value == 0:  # finite: JSON has no inf or NaN
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{dumps(str(k))}:{dumps(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(dumps(v) for v in value) + "]"
    raise TypeError(f"cannot send {type(value).__name__}")


class _Scanner:
    """What ``_json.make_scanner`` reads from a decoder (json.JSONDecoder's defaults)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int

    @staticmethod
    def parse_constant(name: str) -> float:
        return float(name.lower().replace("infinity", "inf"))


def loads(text: str) -> Any:
    """A JSON document (the C scanner of the standard library's json, without its imports)."""
    body = text.strip()
    try:
        value, end = _json.make_scanner(_Scanner())(body, 0)  # type: ignore[arg-type]
    except (StopIteration, SystemError):
        # The C scanner reports a document cut short (a truncated server.json) as a
        # SystemError when json.decoder is not imported to name it: not JSON all the same.
        raise ValueError("not JSON") from None
    if end != len(body):
        raise ValueError("extra data after the JSON document")
    return value


def world_git_dir(start: str) -> str | None:
    """The git directory of the world holding ``start``, searching upwards as git does;
    None when the repository found there is not a world (no ``narr.toml`` beside its
    ``.git``): no server is looked for or started in a stranger's repository, and nothing
    is written into its ``.git``.

    A ``.git`` file (a linked worktree, a submodule) names the real one. (Paths are
    strings: importing pathlib would cost a thin client more than this whole search.)
    """
    directory = os.path.abspath(start)
    while True:
        dot_git = os.path.join(directory, ".git")
        if os.path.isdir(dot_git):
            return dot_git if os.path.isfile(os.path.join(directory, "narr.toml")) else None
        if os.path.isfile(dot_git):
            if not os.path.isfile(os.path.join(directory, "narr.toml")):
                return None
            try:
                with open(dot_git, encoding="utf-8") as fh:
                    text = fh.read().strip()
            except OSError:
                return None
            if text.startswith("gitdir:"):
                return os.path.normpath(os.path.join(directory, text[len("gitdir:"):].strip()))
            return None
        parent = os.path.dirname(directory)
        if parent == directory:
            return None
        directory = parent


def split_globals(argv: list[str]) -> tuple[str | None, str | None]:
    """``(-C directory, the command's name)`` from narr's arguments (None where absent)."""
    directory = None
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "-C":
            if i + 1 >= len(argv):
                return directory, None
            directory = argv[i + 1]
            i += 2
            continue
        if arg.startswith("-C"):
            directory = arg[2:]
        elif arg == "--":
            return directory, argv[i + 1] if i + 1 < len(argv) else None
        elif not arg.startswith("-"):
            return directory, arg
        i += 1
    return directory, None


def read_server_file(git_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """What ``server.json`` says, or None when it is missing, not a regular file (a FIFO
    would hold every command up) or not a JSON object (a record cut short by a crash or a
    full disk included). A claim, proven by :func:`proven_server`."""
    data = read_regular(os.path.join(git_dir, "narr", SERVER_FILE), 1 << 16)
    if data is None:
        return None
    try:
        info = loads(data.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None
    return info if isinstance(info, dict) else None


def read_regular(path: str, limit: int) -> bytes | None:
    """The first ``limit`` bytes of the regular file at ``path``, or None (absent, a link, a
    FIFO, a device, a directory: nothing that could make a reader wait or read for ever)."""
    import stat  # built in (_stat)

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        chunks = []
        while limit > 0:
            chunk = os.read(fd, limit)
            if not chunk:
                break
            chunks.append(chunk)
            limit -= len(chunk)
        return b"".join(chunks)
    except OSError:
        return None
    finally:
        os.close(fd)


def pid_alive(pid: object) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OverflowError:
        return False
    return True


def process_state(pid: int) -> str | None:
    """The state ``/proc`` gives ``pid`` (``R`` running, ``S`` sleeping, ``T`` stopped, ``Z``
    a zombie...), or None where the system does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rpartition(b")")[2].split()[0].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def process_identity(pid: int) -> str | None:
    """Who ``pid`` is: the boot and the clock tick the process started at (``/proc``), which no
    later process with the same pid shares; None where the system does not say."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rpartition(b")")[2].split()
        with open("/proc/sys/kernel/random/boot_id", "rb") as fh:
            boot = fh.read().strip()
        if fields[0] in (b"Z", b"X"):
            return "exited"  # a zombie's fields still name it, but it serves nobody
        return f"{boot.decode()}:{int(fields[19])}"
    except (OSError, IndexError, ValueError, UnicodeDecodeError):
        return None


LOCK_FILE = "server.lock"


def lock_held(git_dir: str | os.PathLike[str]) -> bool:
    """Whether some process holds this world's ``server.lock``: a server takes it before it
    records itself and the kernel drops it when the server dies, however it dies. A copied
    world's lock file is another file, held by nobody."""
    import fcntl

    try:
        fd = os.open(os.path.join(git_dir, "narr", LOCK_FILE),
                     os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing drops the shared lock taken to look
    return False


def names_this_world(info: dict[str, Any], git_dir: str | os.PathLike[str]) -> bool:
    """Whether a record was written by a server of the world whose git directory is
    ``git_dir`` (a copied world holds its original's record, naming the original)."""
    return info.get("git_dir") == os.path.realpath(git_dir)


def proven_server(git_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The record of this world's live server, or None: the record names this world, its
    pid is the very process that wrote it (same start, where the system says), and that
    server still holds the world's lock. Anything less proves nothing: a record left by a
    crash, a reboot or a copy of the world, whose pid may now be anyone's."""
    info = read_server_file(git_dir)
    if info is None or not names_this_world(info, git_dir):
        return None
    pid = info.get("pid")
    if not pid_alive(pid):
        return None
    assert isinstance(pid, int)
    identity = process_identity(pid)
    if identity is not None and info.get("process") != identity:
        return None
    if lock_holder(git_dir) != holder_text(pid, identity) or not lock_held(git_dir):
        return None  # no server, or a new one starting: the lock names its holder
    return info


def holder_text(pid: int, identity: str | None) -> str:
    """What a server writes into ``server.lock`` once it holds it."""
    return f"{pid} {identity}\n"


def lock_holder(git_dir: str | os.PathLike[str]) -> str:
    """The text in ``server.lock``: the last server to take it (whether it still holds the
    lock is :func:`lock_held`'s question)."""
    data = read_regular(os.path.join(git_dir, "narr", LOCK_FILE), 200)
    return data.decode("utf-8", "replace") if data is not None else ""


def send_frame(sock: socket.socket | _socket.socket, channel: int, payload: bytes) -> None:
    sock.sendall(bytes((channel,)) + len(payload).to_bytes(4, "big") + payload)


def recv_exact(sock: socket.socket | _socket.socket, n: int) -> bytes | None:
    chunks = []
    while n:
        chunk = sock.recv(min(n, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_frame(sock: socket.socket | _socket.socket) -> tuple[int, bytes] | None:
    head = recv_exact(sock, _HEADER_SIZE)
    if head is None:
        return None
    channel, length = head[0], int.from_bytes(head[1:], "big")
    payload = recv_exact(sock, length) if length else b""
    return None if payload is None else (channel, payload)


def locate(argv: list[str]) -> str | None:
    """The git directory of the world a command may be handed over for, or None when it
    must run in this process whatever runs (``NARR_NO_SERVER``, a local command, no world)."""
    if os.environ.get("NARR_NO_SERVER"):
        return None
    directory, command = split_globals(argv)
    if command in LOCAL_COMMANDS or (command in ASKING_COMMANDS and _will_ask(argv, command)):
        return None
    try:
        return world_git_dir(os.path.realpath(directory if directory is not None else "."))
    except OSError:
        return None


def _will_ask(argv: list[str], command: str) -> bool:
    """Whether ``command`` will ask questions on this terminal (see :data:`ASKING_COMMANDS`)."""
    if not _isatty(sys.stdin) or "-" in argv:
        return False
    told = ASKING_COMMANDS[command]
    return not any(a in told or a.split("=", 1)[0] in told for a in argv)


class Frames:
    """Frames read from a connection whose every read is bounded: a frame a time-out cuts
    short is kept and completed by the next read."""

    def __init__(self, sock: _socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()

    def next(self, timeout: float | None) -> tuple[int, bytes] | None:
        """The next frame; None when the connection ends (or breaks); ``TimeoutError`` when
        ``timeout`` seconds pass without a read."""
        self.sock.settimeout(timeout)
        while True:
            if len(self.buffer) >= _HEADER_SIZE:
                end = _HEADER_SIZE + int.from_bytes(self.buffer[1:_HEADER_SIZE], "big")
                if len(self.buffer) >= end:
                    frame = (self.buffer[0], bytes(self.buffer[_HEADER_SIZE:end]))
                    del self.buffer[:end]
                    return frame
            try:
                chunk = self.sock.recv(1 << 20)
            except TimeoutError:
                raise
            except OSError:
                return None
            if not chunk:
                return None
            self.buffer += chunk


def serving(info: dict[str, Any]) -> str:
    """Whether the server of the record ``info`` can still answer: ``"yes"``, ``"stopped"``
    (SIGSTOP, Ctrl-Z: it answers once it goes on) or ``"gone"`` (its process ended, or
    another now has its pid)."""
    pid = info.get("pid")
    if not pid_alive(pid):
        return "gone"
    assert isinstance(pid, int)
    identity = process_identity(pid)
    if identity == "exited" or (identity is not None and identity != info.get("process")):
        return "gone"
    return "stopped" if process_state(pid) in ("T", "t") else "yes"


def peer_pid(sock: _socket.socket) -> int | None:
    """The pid of the process at the other end of a Unix socket, as the kernel says (None
    where it does not)."""
    option = getattr(_socket, "SO_PEERCRED", None)
    if option is None:
        return None
    try:
        creds = sock.getsockopt(_socket.SOL_SOCKET, option, 12)  # struct ucred: pid, uid, gid
    except OSError:
        return None
    return int.from_bytes(creds[:4], sys.byteorder, signed=True)


def hello(info: dict[str, Any], timeout: float = HELLO_TIMEOUT,
          code: str | None = None) -> tuple[_socket.socket, Frames] | None:
    """A connection to the server of the proven record ``info``, once the server has named
    itself on it (its first frame) and the kernel agrees who it is; None otherwise, after
    at most ``timeout`` seconds (at once for a stopped server). With ``code``, the server
    must also say that its files are still those of that :func:`code_identity`."""
    path = info.get("socket")
    pid = info.get("pid")
    if not isinstance(path, str) or not isinstance(pid, int):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(CONNECT_TIMEOUT)
        sock.connect(path)
        if peer_pid(sock) not in (None, pid):
            raise OSError("another process listens there")
        frames = Frames(sock)
        deadline = time.monotonic() + timeout
        while True:
            try:
                frame = frames.next(_POLL)
                break
            except TimeoutError:
                if serving(info) != "yes" or time.monotonic() >= deadline:
                    raise OSError("the server does not answer") from None
        if frame is None or frame[0] != HELLO:
            raise OSError("not a narr server")
        said = loads(frame[1].decode("utf-8"))
        if not isinstance(said, dict) or said.get("pid") != pid \
                or said.get("git_dir") != info.get("git_dir"):
            raise OSError("another server answers there")
        if code is not None and said.get("code") != code:
            raise OSError("the server's code changed")
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        sock.close()
        return None
    return sock, frames


def ask(info: dict[str, Any], what: str, timeout: float = 5.0) -> dict[str, Any] | None:
    """Ask the server of the proven record ``info`` for ``status`` (or to ``stop``); its
    answer, or None when it does not answer as that server within ``timeout`` seconds (a
    stopped server is not waited for)."""
    opened = hello(info, timeout)
    if opened is None:
        return None
    sock, frames = opened
    try:
        sock.settimeout(timeout)
        send_frame(sock, STDIN, dumps({"control": what}).encode())
        frame = frames.next(timeout)
        answer = loads(frame[1].decode("utf-8")) if frame is not None else None
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    finally:
        sock.close()
    if not isinstance(answer, dict) or answer.get("pid") != info.get("pid") \
            or answer.get("git_dir") != info.get("git_dir"):
        return None
    return answer


def resident_mib(pid: int) -> float | None:
    """The memory ``pid`` holds (its resident set, ``VmRSS``), in MiB; None where the system
    does not say."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        return None
    return None


def connect(git_dir: str) -> tuple[_socket.socket, Frames, dict[str, Any]] | None:
    """A connection to this world's proven server of this very code, which has named
    itself on it; None when there is none (or it does not answer).

    A server that watches its own files records the :func:`code_identity` they are of and
    says, when a client connects, whether they are still unchanged: a client of that
    identity takes its word. Any other needs the whole :func:`code_version` to match."""
    info = proven_server(git_dir)
    if info is None:
        return None
    code: str | None = code_identity()
    if info.get("code") != code:
        code = None
        if info.get("version") != code_version():
            return None
    opened = hello(info, code=code)
    return (*opened, info) if opened is not None else None


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


def program_name() -> str:
    """What click would call this program in its messages (its own detection, spelt out)."""
    main_module = sys.modules.get("__main__")
    package = getattr(main_module, "__package__", None)
    path = sys.argv[0] if sys.argv and sys.argv[0] else "narr"
    if not package:
        return os.path.basename(path)
    name = os.path.splitext(os.path.basename(path))[0]
    module = package if name == "__main__" else f"{package}.{name}"
    return f"python -m {module.lstrip('.')}"


def terminal_size() -> tuple[int, int]:
    """``shutil.get_terminal_size()`` (COLUMNS and LINES first, then stdout's terminal,
    else 80x24), without importing shutil."""
    def env(name: str) -> int:
        try:
            return int(os.environ[name])
        except (KeyError, ValueError):
            return 0

    columns, lines = env("COLUMNS"), env("LINES")
    if columns <= 0 or lines <= 0:
        try:
            size = os.get_terminal_size(sys.__stdout__.fileno())  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            size = os.terminal_size((0, 0))
        columns = columns if columns > 0 else size.columns or 80
        lines = lines if lines > 0 else size.lines or 24
    return columns, lines


def request(argv: list[str], git_dir: str | None = None) -> dict[str, Any]:
    columns, lines = terminal_size()
    return {"argv": argv, "git_dir": git_dir, "prog_name": program_name(), "cwd": os.getcwd(),
            "env": forwarded_env(os.environ),
            "stdout_tty": _isatty(sys.stdout), "stderr_tty": _isatty(sys.stderr),
            "stdin_tty": _isatty(sys.stdin), "columns": columns, "lines": lines,
            # The version when this client worked it out, else the identity a server
            # watching its files vouches for (see connect).
            "version": _VERSION[0] if _VERSION else None, "code": code_identity()}


class Interrupted:
    """A command the server began and did not finish: it died, or stopped (SIGSTOP, Ctrl-Z)
    for longer than a client waits. What the client knows to settle it."""

    def __init__(self, info: dict[str, Any], state: str, started: bool, event_id: str | None,
                 stdin: bytes | None, printed: bool) -> None:
        self.info = info  # the server's record
        self.state = state  # "gone" or "stopped" (see serving)
        self.started = started  # False: queued (a stopped server may still run it when it goes on)
        self.event_id = event_id  # the id the event takes, when the command is an event
        self.stdin = stdin  # what the command had read of standard input, if it asked
        self.printed = printed  # whether it wrote anything to stdout or stderr


def forward(opened: tuple[_socket.socket, Frames, dict[str, Any]], argv: list[str],
            git_dir: str | None = None) -> int | Interrupted | None:
    """Run ``argv`` on the server; its exit code, None when nothing ran (run it here), or
    :class:`Interrupted` when it began and the server went or stopped under it."""
    sock, frames, info = opened
    out = sys.stdout.buffer
    err = sys.stderr.buffer
    try:
        sock.settimeout(SEND_TIMEOUT)
        send_frame(sock, STDIN, dumps(request(argv, git_dir)).encode())
    except OSError:
        sock.close()
        return None  # the request never left whole: nothing ran
    started = False  # the server says when the command begins: before that, nothing ran
    event_id: str | None = None
    stdin: bytearray | None = None
    printed = False
    stopped_since: float | None = None
    interrupted: float | None = None  # when Ctrl-C came: the command is called off
    try:
        while True:
            try:
                try:
                    frame = frames.next(1.0)
                except TimeoutError:
                    if interrupted is not None:
                        if time.monotonic() - interrupted < INTERRUPT_PATIENCE:
                            continue
                        return _left_to_the_server()
                    state = serving(info)
                    if state == "yes":
                        stopped_since = None
                        continue
                    if state == "stopped":
                        now = time.monotonic()
                        stopped_since = stopped_since or now
                        if now - stopped_since < STOPPED_PATIENCE:
                            continue
                    out.flush()
                    if started or (state == "stopped" and split_globals(argv)[1] not in READERS):
                        return Interrupted(info, state, started, event_id, _bytes(stdin), printed)
                    return None  # it never began, and will not: run it here
                if frame is None:
                    break
                channel, payload = frame
                if channel == STARTED:
                    started = True
                    event_id = payload.decode("ascii", "replace") or None
                try:
                    if channel == STDOUT:
                        printed = True
                        out.write(payload)
                    elif channel == STDERR:
                        printed = True
                        out.flush()
                        err.write(payload)
                        err.flush()
                    elif channel == EXIT:
                        out.flush()
                        return int(payload.decode())
                    elif channel == PAGE:
                        printed = True
                        out.flush()
                        command, _, text = payload.partition(b"\0")
                        run_pager(command.decode("utf-8", "replace"), text)
                except BrokenPipeError:
                    # The reader went away (narr log | head): exit as click does then.
                    _quiet_stdout()
                    return 1
                if channel == WANT_STDIN and interrupted is None:
                    chunk = read_stdin(payload)
                    if stdin is None:
                        stdin = bytearray()
                    stdin += chunk  # kept, to read again here should the server go
                    sock.settimeout(SEND_TIMEOUT)
                    send_frame(sock, STDIN, chunk)
                elif channel == REFUSED:
                    if interrupted is not None:
                        return 130
                    return None  # the server ran nothing (it is stopping): run it here
            except KeyboardInterrupt:
                # Ctrl-C: say so to the server by closing this end for writing (it calls the
                # command off unless its write has begun) and print what it answers; Ctrl-C
                # again, or no answer for a while, leaves it to the server.
                if interrupted is not None:
                    return _left_to_the_server()
                interrupted = time.monotonic()
                try:  # noqa: SIM105 (contextlib is not loaded by the thin client)
                    sock.shutdown(_socket.SHUT_WR)
                except OSError:
                    pass  # the server is gone already: what follows says so
    except (OSError, ValueError):
        pass
    finally:
        sock.close()
    out.flush()
    if interrupted is not None:
        return _left_to_the_server()  # never run here what Ctrl-C called off
    if not started:
        return None  # the server went (killed, stopping) before the command began: run it here
    # The command began, so it may have written: whether it did is known once the server
    # cannot write any more.
    deadline = time.monotonic() + GONE_PATIENCE
    state = serving(info)
    while state == "yes" and time.monotonic() < deadline:
        time.sleep(0.02)
        state = serving(info)
    return Interrupted(info, state, True, event_id, _bytes(stdin), printed)


def _left_to_the_server() -> int:
    """Ctrl-C, and the server did not say how the command ended: say what it does."""
    try:
        sys.stdout.flush()
        sys.stderr.write("narr: left to the server, which writes nothing it had not begun to "
                         "write when Ctrl-C came (narr log shows whether the event was "
                         "recorded)\n")
        sys.stderr.flush()
    except (OSError, ValueError):
        pass
    return 130


def _bytes(data: bytearray | None) -> bytes | None:
    return bytes(data) if data is not None else None


def read_stdin(asked: bytes) -> bytes:
    """Standard input for the server: at most the bytes it asked for (decimal ``asked``) and a
    frame's worth, as they come (a line typed on a terminal, a pipe's next chunk); empty at the
    end. Never more than the command reads: it may stop at a bound (``narr event - <
    /dev/zero``)."""
    try:
        most = min(int(asked), 1 << 20)
    except ValueError:
        most = 1 << 20
    if most <= 0 or sys.stdin is None:
        return b""
    try:
        return bytes(sys.stdin.buffer.read1(most))  # type: ignore[union-attr]
    except (OSError, ValueError, AttributeError):  # closed, or not a byte stream: the end
        return b""


def run_pager(command: str, text: bytes) -> None:
    """Show ``text`` through the pager ``command`` (run by the shell), as narr itself does
    (:func:`narrative.cli.terminal.run_pager`)."""
    import subprocess  # only when a pager runs: it costs a thin client's start-up ~5 ms

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    proc = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    try:
        proc.stdin.write(text)
        proc.stdin.close()
    except BrokenPipeError:  # the reader quit the pager before the end
        pass
    while True:
        try:
            proc.wait()
            return
        except KeyboardInterrupt:  # ^C belongs to the pager, as with git
            continue


def _quiet_stdout() -> None:
    """After a broken pipe, let the interpreter's final flush of stdout fail silently."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass


def completing(environ: dict[str, str] | os._Environ[str]) -> bool:
    """Whether the shell asks for completions (``_NARR_COMPLETE``, click's name for this
    program's variable): they are answered here, where the shell's variables are."""
    return f"_{program_name()}_COMPLETE".replace("-", "_").upper() in environ


def _leave(code: int, *, at_exit: bool = False) -> None:
    """Exit at once once the server has answered: this process holds nothing to clean up,
    and the interpreter's own shutdown (freeing every module) costs a served command more
    than a tenth of its time. ``at_exit``: run what was registered to run at exit first
    (a command that ran here may have)."""
    if at_exit:
        import atexit

        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 (contextlib costs a thin client more than the flush)
            stream.flush()
        except (OSError, ValueError):  # a reader gone (narr log | head): as click does then
            pass
    os._exit(code)


def _run_here() -> None:
    """Run the command in this process (:mod:`narrative.cli`), then leave as a served command
    does (:func:`_leave`): freeing pygit2's objects and every module at the interpreter's
    shutdown costs a command that ran here a fifth of its time. What was registered to run at
    exit runs first; a thread the interpreter would wait for, or an exit with a message
    rather than a code, leaves as Python does."""
    from narrative.cli import main as cli_main

    try:
        cli_main(prog_name=program_name())
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code
        threading = sys.modules.get("threading")
        waited_for = threading is not None and any(
            t.is_alive() and not t.daemon for t in threading.enumerate()
            if t is not threading.main_thread())
        if isinstance(code, int) and not waited_for:
            _leave(code, at_exit=True)
        raise


def main() -> None:
    argv = sys.argv[1:]
    git_dir = None if completing(os.environ) else locate(argv)
    if git_dir is not None:
        opened = connect(git_dir)
        if opened is not None:
            outcome = forward(opened, argv, os.path.realpath(git_dir))
            if isinstance(outcome, Interrupted):
                from narrative.interrupted import settle

                code = settle(outcome, argv, git_dir, program_name())
                if code is not None:
                    _leave(code)
            elif outcome is not None:
                _leave(outcome)
        else:
            from narrative.serve.autostart import start_if_wanted

            start_if_wanted(git_dir, split_globals(argv)[0])
    _run_here()


if __name__ == "__main__":
    main()
