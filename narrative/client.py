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
world found, no server, a server of other code (an edited checkout counts),
a refused connection, ``NARR_NO_SERVER=1``, a shell asking for completions
(``_NARR_COMPLETE``), and the commands that need this process itself (``serve`` and ``mcp``;
``studio``, which starts one and opens a browser; ``edit``, which opens an editor on
the terminal; ``init``; and ``clone``, ``push`` and ``pull``, whose git needs the
caller's SSH agent and credential helpers).

The protocol (also spoken by :mod:`narrative.serve.server`): the client sends one
frame holding a JSON request; the server answers with an empty frame on channel 6
when the command begins (a connection that ends before it ran nothing: the client
runs the command itself), frames on channel 1 (stdout bytes), 2 (stderr bytes),
3 (a request for standard input, answered by the client with channel-0 frames, the
empty one marking its end), 5 (text for the client to show through a pager on its
terminal: the pager's shell command, a NUL, the text) and finally 9 (the exit code
as decimal text), or 4 alone when it ran nothing. A frame is one channel byte, a
4-byte big-endian length and the payload.
"""

from __future__ import annotations

# Only built-in modules: ``json``, ``socket`` and ``struct`` load ``re`` and ``enum``,
# which cost a thin client more than its whole round trip to the server (``python -X
# importtime``). ``_json``, ``_socket`` and ``zlib`` are their C halves.
import _json
import _socket
import os
import sys
import zlib

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
SERVER_FILE = "server.json"
STDIN, STDOUT, STDERR, WANT_STDIN, REFUSED, PAGE, STARTED, EXIT = 0, 1, 2, 3, 4, 5, 6, 9
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
    (worked out once per process).

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
    text = "".join(listing).encode()
    return f"{__version__}+{zlib.crc32(text):08x}{zlib.adler32(text):08x}{len(listing)}"


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


def find_git_dir(start: str) -> str | None:
    """The git directory of the repository holding ``start``, searching upwards as git does.

    A ``.git`` file (a linked worktree, a submodule) names the real one. (Paths are
    strings: importing pathlib would cost a thin client more than this whole search.)
    """
    directory = os.path.abspath(start)
    while True:
        dot_git = os.path.join(directory, ".git")
        if os.path.isdir(dot_git):
            return dot_git
        if os.path.isfile(dot_git):
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
    """What ``server.json`` says, or None when it is missing or not a JSON object (a record
    cut short by a crash or a full disk included). A claim, proven by :func:`proven_server`."""
    try:
        with open(os.path.join(git_dir, "narr", SERVER_FILE), encoding="utf-8") as fh:
            info = loads(fh.read(1 << 16))
    except (OSError, ValueError, UnicodeDecodeError, RecursionError):
        return None
    return info if isinstance(info, dict) else None


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
    import fcntl  # built in; only a client that finds no usable server asks

    try:
        fd = os.open(os.path.join(git_dir, "narr", LOCK_FILE), os.O_RDONLY | os.O_NOFOLLOW)
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
    try:
        with open(os.path.join(git_dir, "narr", LOCK_FILE), encoding="utf-8",
                  errors="replace") as fh:
            return fh.read(200)
    except OSError:
        return ""


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
        return find_git_dir(os.path.realpath(directory if directory is not None else "."))
    except OSError:
        return None


def _will_ask(argv: list[str], command: str) -> bool:
    """Whether ``command`` will ask questions on this terminal (see :data:`ASKING_COMMANDS`)."""
    if not _isatty(sys.stdin) or "-" in argv:
        return False
    told = ASKING_COMMANDS[command]
    return not any(a in told or a.split("=", 1)[0] in told for a in argv)


def connect(git_dir: str) -> _socket.socket | None:
    """A connection to this world's server of this very code, or None."""
    info = read_server_file(git_dir)
    if info is None or not names_this_world(info, git_dir) or not pid_alive(info.get("pid")):
        return None
    if info.get("version") != code_version():
        return None
    path = info.get("socket")
    if not isinstance(path, str):
        return None
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    return sock


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
            "version": code_version()}


def forward(sock: _socket.socket, argv: list[str], git_dir: str | None = None) -> int | None:
    """Run ``argv`` on the server; its exit code, or None when the request could not be sent."""
    out = sys.stdout.buffer
    err = sys.stderr.buffer
    try:
        send_frame(sock, STDIN, dumps(request(argv, git_dir)).encode())
    except OSError:
        sock.close()
        return None  # the request never left: nothing ran
    started = False  # the server says when the command begins: before that, nothing ran
    try:
        while True:
            frame = recv_frame(sock)
            if frame is None:
                break
            channel, payload = frame
            started = True if channel == STARTED else started
            try:
                if channel == STDOUT:
                    out.write(payload)
                elif channel == STDERR:
                    out.flush()
                    err.write(payload)
                    err.flush()
                elif channel == EXIT:
                    out.flush()
                    return int(payload.decode())
                elif channel == PAGE:
                    out.flush()
                    command, _, text = payload.partition(b"\0")
                    run_pager(command.decode("utf-8", "replace"), text)
            except BrokenPipeError:
                # The reader went away (narr log | head): exit as click does then.
                _quiet_stdout()
                return 1
            if channel == WANT_STDIN:
                data = sys.stdin.buffer.read() if sys.stdin is not None else b""
                for i in range(0, len(data), 1 << 20):
                    send_frame(sock, STDIN, data[i:i + (1 << 20)])
                send_frame(sock, STDIN, b"")
            elif channel == REFUSED:
                return None  # the server ran nothing (it is stopping): run it here
    except OSError:
        pass
    finally:
        sock.close()
    if not started:
        return None  # the server went (killed, stopping) before the command began: run it here
    # The command began, so it may have written: running it again here could record an
    # event twice.
    out.flush()
    err.write(b"narr: error: the narr server stopped while running this command; "
              b"run narr status to see where the story stands\n")
    err.flush()
    return 1


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


def _leave(code: int) -> None:
    """Exit at once once the server has answered: this process holds nothing to clean up,
    and the interpreter's own shutdown (freeing every module) costs a served command more
    than a tenth of its time."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 (contextlib costs a thin client more than the flush)
            stream.flush()
        except (OSError, ValueError):  # a reader gone (narr log | head): as click does then
            pass
    os._exit(code)


def main() -> None:
    argv = sys.argv[1:]
    git_dir = None if completing(os.environ) else locate(argv)
    if git_dir is not None:
        sock = connect(git_dir)
        if sock is not None:
            code = forward(sock, argv, os.path.realpath(git_dir))
            if code is not None:
                _leave(code)
        else:
            from narrative.serve.autostart import start_if_wanted

            start_if_wanted(git_dir, split_globals(argv)[0])
    from narrative.cli import main as cli_main

    cli_main(prog_name=program_name())


if __name__ == "__main__":
    main()
