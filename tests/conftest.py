"""Shared fixtures: git isolated from the machine, sample worlds in both layouts, a CLI runner.

Every test sees a fresh HOME with a fixed git identity and no system or global
git configuration, so results never depend on who runs them. narr starts no server
in a test (``NARR_NO_SERVER=1``) unless the test asks for one (``server_on``), and
the run fails if a test leaves a server running.

The suite runs on every core (pytest-xdist, ``-n auto`` in pyproject.toml: each
worker is a process with its own session fixtures, so the git isolation and
pygit2's settings hold per worker), with temporary directories on a tmpfs where
the machine has one (removing a world's tree there costs about 2 ms, against 40 ms
on a disk), and sample worlds made once per session per layout and copied for each
test (as Kart's archive fixtures are).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pygit2
import pytest
from helpers import CLI
from hypothesis import HealthCheck, settings
from studio_pages import browser, chromium

__all__ = ["browser", "chromium"]  # the studio's fixtures, for every module

settings.register_profile(
    "ci", max_examples=40, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.register_profile(
    "dev", max_examples=25, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

GIT_NAME = "Test Author"
GIT_EMAIL = "author@example.invalid"
TMPFS = Path("/dev/shm")


def _tmpfs() -> Path | None:
    """``/dev/shm`` when it is a tmpfs this user may write and run programs in, else None."""
    try:
        mounts = Path("/proc/mounts").read_text("utf-8")
    except OSError:
        return None
    for line in mounts.splitlines():
        fields = line.split()
        if (len(fields) >= 4 and fields[1] == str(TMPFS) and fields[2] == "tmpfs"
                and "noexec" not in fields[3].split(",")):
            return TMPFS if os.access(TMPFS, os.W_OK | os.X_OK) else None
    return None


def pytest_configure(config: pytest.Config) -> None:
    # tmp_path's root (pytest's numbered, locked, kept-for-a-while directories) on a tmpfs,
    # unless the run names its own (--basetemp, PYTEST_DEBUG_TEMPROOT). xdist's workers get
    # their directories from the controller.
    if config.option.basetemp or "PYTEST_DEBUG_TEMPROOT" in os.environ or hasattr(config, "workerinput"):
        return
    root = _tmpfs()
    if root is not None:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = str(root)


@pytest.fixture(scope="session", autouse=True)
def temporary_files_beside_tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``tempfile``'s directory in this process goes where tmp_path's do (the tests'
    TemporaryDirectory, hypothesis examples' worlds)."""
    place = tmp_path_factory.mktemp("tempfile")
    saved = tempfile.tempdir
    tempfile.tempdir = str(place)
    yield place
    tempfile.tempdir = saved


def _run_directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The run's temporary directory, which xdist's workers share (each has its own below it)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session", autouse=True)
def isolated_git(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text(
        f"[user]\n\tname = {GIT_NAME}\n\temail = {GIT_EMAIL}\n[init]\n\tdefaultBranch = main\n",
        encoding="utf-8",
    )
    saved = dict(os.environ)
    for key in list(os.environ):
        # COLUMNS and LINES: xdist's workers get 80x24 from execnet, which would size every
        # terminal a test opens.
        if key.startswith(("GIT_", "NARR_")) or key in ("EDITOR", "VISUAL", "COLUMNS", "LINES"):
            del os.environ[key]
    os.environ["HOME"] = str(home)
    os.environ["XDG_CONFIG_HOME"] = str(home / ".config")
    os.environ["GIT_CONFIG_NOSYSTEM"] = "1"
    os.environ["GIT_CONFIG_GLOBAL"] = str(home / ".gitconfig")
    os.environ["NARR_LOCK_TIMEOUT"] = "0.3"
    # As on a CI machine: no command starts a server, none is used (server_on turns it on).
    os.environ["NARR_NO_SERVER"] = "1"
    # The narr and python processes the tests start keep their bytecode, as an installed narr
    # has it: one cache for the run, outside the checkout. Where PYTHONDONTWRITEBYTECODE is set,
    # every one of those thousands of processes would compile each module it imports again.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(_run_directory(tmp_path_factory) / "pycache")
    levels = pygit2.enums.ConfigLevel
    saved_paths = {lvl: pygit2.settings.search_path[lvl]
                   for lvl in (levels.SYSTEM, levels.XDG, levels.GLOBAL)}
    pygit2.settings.search_path[levels.SYSTEM] = str(home / "nosystem")
    pygit2.settings.search_path[levels.XDG] = str(home / ".config")
    pygit2.settings.search_path[levels.GLOBAL] = str(home)
    # Where libgit2 expands ``~`` (an include's path, core.excludesFile): the HOME it found
    # when it started, not the one set above.
    saved_homedir, pygit2.settings.homedir = pygit2.settings.homedir, str(home)
    yield home
    for lvl, value in saved_paths.items():
        pygit2.settings.search_path[lvl] = value
    pygit2.settings.homedir = saved_homedir or ""
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def server_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """narr as installed: commands use this world's server, and the first one starts it."""
    monkeypatch.delenv("NARR_NO_SERVER", raising=False)
    monkeypatch.delenv("CI", raising=False)


@pytest.fixture
def servers_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands use a server someone started (narr serve), and none starts by itself (as
    on a CI machine, ``CI`` set)."""
    monkeypatch.delenv("NARR_NO_SERVER", raising=False)
    monkeypatch.setenv("CI", "1")


def servers_left(home: Path, temp: Path) -> list[tuple[int, str]]:
    """Running narr servers this session started (pid, command line): processes other than
    this one whose ``HOME`` is the session's or whose directory is under its temporary one."""
    found = []
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{name}/stat").read_bytes().rpartition(b")")[2].split()[0]
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
            cwd = os.readlink(f"/proc/{name}/cwd")
        except (OSError, IndexError):
            continue
        if b"serve" not in cmdline or state in (b"Z", b"X"):
            continue
        if f"HOME={home}".encode() in environ or Path(cwd).is_relative_to(temp):
            found.append((int(name), " ".join(a.decode("utf-8", "replace") for a in cmdline)))
    return found


@pytest.fixture(scope="session", autouse=True)
def no_server_left_running(isolated_git: Path, tmp_path_factory: pytest.TempPathFactory
                           ) -> Iterator[None]:
    """Fail the run when a test leaves a narr server running (and stop it: it is ours)."""
    yield
    import signal
    import time

    temp = tmp_path_factory.getbasetemp()
    deadline = time.monotonic() + 15  # servers asked to stop may take a moment to go
    left = servers_left(isolated_git, temp)
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = servers_left(isolated_git, temp)
    for pid, _ in left:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if left:
        pytest.fail("tests left narr servers running (stopped now):\n"
                    + "\n".join(f"  pid {pid}: {cmd}" for pid, cmd in left), pytrace=False)


LAYOUTS = ("flat", "sharded")
DEFAULT_LAYOUT = "flat"  # what `narr init` makes


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test that takes ``layout`` (or a world, which does) runs in both layouts where the
    layout can change the outcome: the modules marked ``both_layouts`` (the store's, time
    travel's, the kill sweeps and the property tests). Elsewhere the layout is a detail under
    the store, already proven equal there, and the test runs once in the default layout."""
    if "layout" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if "layout" in (names.replace(" ", "").split(",") if isinstance(names, str) else names):
            return  # the test names its own layouts
    both = metafunc.definition.get_closest_marker("both_layouts") is not None
    metafunc.parametrize("layout", LAYOUTS if both else (DEFAULT_LAYOUT,))


@pytest.fixture(scope="session")
def sample_worlds(tmp_path_factory: pytest.TempPathFactory, isolated_git: Path) -> dict[str, Path]:
    """The sample world in each layout, made once for the session: tests get copies."""
    from narrative.engine.init import init_world

    out = {}
    for layout in ("flat", "sharded"):
        root = tmp_path_factory.mktemp("sample-worlds") / layout
        init_world(root, sample=True, layout=layout)  # type: ignore[arg-type]
        out[layout] = root
    return out


def copy_world(template: Path, root: Path) -> Path:
    """A world of one's own, copied from a template (git's index stat data goes stale in
    the copy, which narr and git handle as after any copy: by rehashing the few files)."""
    shutil.copytree(template, root, symlinks=True)
    return root


@pytest.fixture
def world(tmp_path: Path, layout: str, sample_worlds: dict[str, Path]) -> Path:
    """A sample world in the parametrised layout."""
    return copy_world(sample_worlds[layout], tmp_path / "world")


@pytest.fixture
def flat_world(tmp_path: Path, sample_worlds: dict[str, Path]) -> Path:
    return copy_world(sample_worlds["flat"], tmp_path / "flat-world")


@pytest.fixture(scope="module")
def served_world(tmp_path_factory: pytest.TempPathFactory, sample_worlds: dict[str, Path]
                 ) -> Iterator[Path]:
    """A copy of the sample world with its studio server running, one for a module's tests that
    only read the world (``studio(served_world)`` uses the server; each test's pages are in a
    browser context of its own)."""
    from studio_pages import studio

    root = copy_world(sample_worlds["flat"], tmp_path_factory.mktemp("served") / "world")
    with studio(root):
        yield root


@pytest.fixture
def narr(world: Path) -> CLI:
    return CLI(world)




# --- the slow campaigns, reported on their own -------------------------------------------------

_TEST_TIME: dict[bool, dict[str, float]] = {True: {}, False: {}}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    times = _TEST_TIME["slow" in report.keywords]
    times[report.nodeid] = times.get(report.nodeid, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    """The campaigns marked ``slow`` (kills at every line, property tests with many examples,
    the benchmark and stress smoke runs): run with the rest, reported apart."""
    slow, rest = _TEST_TIME[True], _TEST_TIME[False]
    if not slow:
        return
    terminalreporter.write_sep("-", f"{len(slow)} slow campaigns: {sum(slow.values()):.1f} s of test "
                                    f"time; the other {len(rest)} tests: {sum(rest.values()):.1f} s")
    for nodeid, seconds in sorted(slow.items(), key=lambda kv: -kv[1]):
        terminalreporter.write_line(f"{seconds:7.1f} s  {nodeid}")
    terminalreporter.write_line("(-m 'not slow' leaves them out; -m slow runs only them)")
