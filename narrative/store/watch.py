"""What changed in a world since its last scan, from inotify: a hint that lets the scan skip the walk.

Finding hand edits (:func:`narrative.store.worktree.changed_paths`) costs a
``stat`` of every file in the world. A long-running ``narr serve`` watches the
world's directory instead (inotify, read by :mod:`narrative.store.inotify` on Linux;
``watchfiles`` elsewhere) and keeps the paths that may differ from git's index: the
ones a full scan found changed, plus every path touched since. A scan then examines
only those, as git's fsmonitor does.

The hint is only trusted when it provably covers everything; otherwise the scan
walks the whole tree. It is not trusted:

- before one full scan has run with the watcher listening (the server just started);
- after the watcher overflowed (more than ``NARR_WATCH_LIMIT`` pending paths) or stopped;
- when git's index file is not the one narr last saw: a plain ``git add``, ``git reset``,
  ``git commit`` or ``git status`` beside the server may change what the index holds, so
  files nobody touched can now differ from it. Indexes narr writes itself are known
  (:func:`index_written`);
- when git's settings changed since (:func:`narrative.store.gitconfig.settings_stamp`): what
  a file hashes to, and whether an untracked one is ignored, may depend on them;
- when the watcher cannot show that it has seen every change made before the scan
  began. With inotify read here, the scan drains the kernel's queue itself, which holds
  every earlier change; with ``watchfiles`` a cookie file is written and the scan waits
  up to a second for its event, which comes after all the earlier ones.

Whether the index equals HEAD's tree is always checked in full (a cached-tree lookup),
so commits and resets that move HEAD are seen whatever the watcher says.
"""

from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Hashable

COOKIES = "watch-cookies"
DEFAULT_LIMIT = 5000
_SYNC_TIMEOUT = 1.0
_DELETED = 3  # watchfiles.Change.deleted

IndexSig = tuple[int, int, int, int] | None
FileSig = tuple[int, int, int, int] | None

# The watchers of this process, by git directory: scans look theirs up here, so
# nothing above the store has to carry a hint around.
_WATCHERS: dict[str, WorldWatcher] = {}
_KEEPING = threading.Lock()


def keep_watching(root: Path, git_dir: Path) -> WorldWatcher:
    """The watcher of the world at ``root`` in this process, started by its first keeper (a
    server, a world a long-lived program keeps open with ``watch=True``) and shared by the
    others; each keeper lets go with :func:`let_go`, and the last one stops it. A start that
    fails leaves scans walking everything, as without one (the error says why)."""
    with _KEEPING:
        watcher = _WATCHERS.get(os.path.realpath(git_dir))
        if watcher is None:
            watcher = WorldWatcher(root, git_dir)
            watcher.start()
        watcher.keepers += 1
        return watcher


def let_go(watcher: WorldWatcher) -> None:
    """One keeper fewer (see :func:`keep_watching`): the last one stops the watcher."""
    with _KEEPING:
        watcher.keepers -= 1
        if watcher.keepers <= 0:
            watcher.stop()


def index_sig(git_dir: Path) -> IndexSig:
    """Enough of the index file's ``stat`` to tell that it was rewritten."""
    try:
        st = os.stat(git_dir / "index")
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def for_git_dir(git_dir: Path) -> WorldWatcher | None:
    if not _WATCHERS:
        return None
    return _WATCHERS.get(os.path.realpath(git_dir))


def file_sig(path: Path | str) -> FileSig:
    """A file's identity and times (None when it is absent): rewritten means different."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return stat_sig(st)


def stat_sig(st: os.stat_result) -> tuple[int, int, int, int]:
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def index_written(git_dir: Path, before: IndexSig, read: IndexSig, after: IndexSig,
                  tree: str | None = None, steady: dict[str, FileSig] | None = None,
                  differing: set[str] | None = None) -> None:
    """narr wrote the index: ``before``/``read`` around reading it, ``after`` once written,
    holding ``tree`` (its root tree, when known); ``steady`` names paths whose index entry
    was made from the working-tree file of that signature (None: both absent).

    When what narr read was the index the watcher knew, the new one is known too:
    narr's own writes keep index and working tree in step for every path but the
    ones it wrote, and those the watcher saw being written. The watcher sees narr's
    own writes too; a path of ``steady`` whose file still has that signature is in
    step with the index, so the next scan need not load the index to know it. The
    paths of ``differing`` are the exception: narr set their index entry and left the
    file as it was (a move that keeps hand edits, an adopted plain commit), so no file
    event will ever name them; they are marked for the next scan here.
    """
    watcher = for_git_dir(git_dir)
    if watcher is not None:
        if differing:
            watcher.mark_dirty(differing)
        watcher.own_index_write(before, read, after)
        if tree is not None:
            watcher.remember_index_tree(after, tree)
        if steady and before == read and after is not None:
            watcher.remember_steady(after, steady)


def limit() -> int:
    try:
        return max(1, int(os.environ.get("NARR_WATCH_LIMIT", DEFAULT_LIMIT)))
    except ValueError:
        return DEFAULT_LIMIT


@dataclass
class Ticket:
    """One scan in progress: what it may look at (None: everything) and when it began."""

    candidates: set[str] | None
    seq: int
    epoch: int
    sig: IndexSig
    settings: Hashable = None
    reason: str = ""


@dataclass
class Stats:
    full: int = 0
    hinted: int = 0
    last_full_reason: str = ""
    events: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"full_scans": self.full, "hinted_scans": self.hinted,
                "last_full_reason": self.last_full_reason, "events": self.events}


@dataclass
class WorldWatcher:
    root: Path
    git_dir: Path
    max_paths: int = field(default_factory=limit)
    # Read inotify's queue in the scan's own thread (Linux); else ``watchfiles`` and a cookie
    # round trip. None: inotify where the system has it.
    use_inotify: bool | None = None

    def __post_init__(self) -> None:
        self.root = Path(os.path.realpath(self.root))
        self.git_dir = Path(os.path.realpath(self.git_dir))
        self.cookie_dir = self.git_dir / "narr" / COOKIES
        self._mutex = threading.Condition()
        self._dirty: dict[str, int] = {}
        self._seq = 0
        self._epoch = 0
        self._valid = False
        self._why = "the server has just started"
        self._base: IndexSig = None
        self._settings: Hashable = None  # git's settings the last full scan ran under
        self._index_trees: dict[tuple[int, int, int, int], str] = {}
        self._steady: dict[str, FileSig] = {}
        self._steady_for: IndexSig = None
        self._cookies: set[str] = set()
        self._counter = itertools.count()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._running = False
        self._inotify: Any = None
        self._wake: tuple[int, int] | None = None
        self.stats = Stats()
        self.keepers = 0  # see keep_watching
        self._kept: tuple[Any, Hashable, Any] | None = None  # see keep

    # --- the watching thread --------------------------------------------------------

    def start(self) -> None:
        from narrative.store import inotify

        if self.use_inotify is None:
            self.use_inotify = inotify.available()
        if self.use_inotify:
            # Watching starts here, before the thread runs: nothing made from now on is missed.
            self._inotify = inotify.Inotify(str(self.root), str(self.git_dir))
            self._wake = os.pipe()
            self._running = True
            self._thread = threading.Thread(target=self._run_inotify, name="narr-watch",
                                            daemon=True)
            self._thread.start()
            _WATCHERS[str(self.git_dir)] = self
            return
        from watchfiles._rust_notify import RustNotify

        self.cookie_dir.mkdir(parents=True, exist_ok=True)
        for stale in self.cookie_dir.iterdir():
            stale.unlink(missing_ok=True)
        # Watching starts here, before the thread runs: nothing made from now on is missed.
        notify = RustNotify([str(self.root)], False, False, 50, True, False)
        self._running = True
        self._thread = threading.Thread(target=self._run, args=(notify,), name="narr-watch",
                                        daemon=True)
        self._thread.start()
        _WATCHERS[str(self.git_dir)] = self

    def stop(self) -> None:
        _WATCHERS.pop(str(self.git_dir), None)
        self._stop.set()
        if self._wake is not None:
            os.write(self._wake[1], b"x")
        if self._thread is not None:
            self._thread.join(timeout=2)
        if self._wake is not None and (self._thread is None or not self._thread.is_alive()):
            for fd in self._wake:
                os.close(fd)
            self._wake = None
            with self._mutex:
                self._inotify.close()

    def _run_inotify(self) -> None:
        """Read the queue as it fills, so that it never overflows between scans (a scan
        reads it too, :meth:`_sync`)."""
        import select

        assert self._wake is not None
        try:
            while not self._stop.is_set() and self._running:
                try:
                    ready, _, _ = select.select([self._inotify.fd, self._wake[0]], [], [], 1.0)
                except (OSError, ValueError):
                    continue  # a scan replaced the queue meanwhile (see _drain)
                if self._wake[0] in ready:
                    break
                if ready:
                    self._drain()
        except Exception as exc:  # the watcher is a hint: losing it only costs full scans
            self._distrust(f"the watcher stopped ({exc})")
        finally:
            self._ended()

    def _ended(self) -> None:
        """The watching thread is gone: every scan from now on walks everything."""
        with self._mutex:
            self._running = False
            self._valid = False
            self._why = self._why or "the watcher stopped"
            self._mutex.notify_all()

    def _drain(self) -> None:
        from narrative.store import inotify

        with self._mutex:
            if not self._running:
                return
            try:
                paths = self._inotify.read()
            except (inotify.Trouble, OSError) as exc:
                # Events were lost, so the watches may miss directories made meanwhile: watch
                # afresh, and let the next scan walk everything.
                self._distrust_locked(str(exc) if isinstance(exc, inotify.Trouble)
                                      else f"the watcher failed ({exc})")
                self._inotify.close()
                try:
                    self._inotify = inotify.Inotify(str(self.root), str(self.git_dir))
                except (inotify.Trouble, OSError) as again:
                    self._running = False
                    self._why = f"the watcher stopped ({again})"
                    self._mutex.notify_all()
                return
            self._note_locked(paths, len(paths))

    def _run(self, notify: Any) -> None:
        try:
            with notify:
                while not self._stop.is_set():
                    changes = notify.watch(20, 1, 200, self._stop)
                    if isinstance(changes, set):
                        self._absorb(changes)
        except Exception as exc:  # the watcher is a hint: losing it only costs full scans
            self._distrust(f"the watcher stopped ({exc})")
        finally:
            self._ended()

    def _absorb(self, changes: set[tuple[int, str]]) -> None:
        cookies = str(self.cookie_dir) + os.sep
        with self._mutex:
            paths = []
            for kind, path in changes:
                if not path.startswith(cookies):
                    paths.append(path)
                elif kind != _DELETED:  # a cookie's removal is no news
                    self._cookies.add(path[len(cookies):])
            self._note_locked(paths, len(changes))
            self._mutex.notify_all()

    def _note_locked(self, paths: Iterable[str], events: int) -> None:
        git = str(self.git_dir) + os.sep
        root = str(self.root) + os.sep
        self.stats.events += events
        for path in paths:
            if path.startswith(git) or path == str(self.git_dir) or not path.startswith(root):
                if path == str(self.root) or path == str(self.git_dir):
                    self._distrust_locked("the world's directory itself changed")
                continue  # git's own files: the index signature covers them
            rel = path[len(root):].replace(os.sep, "/")
            self._seq += 1
            self._dirty[rel] = self._seq
        if len(self._dirty) > self.max_paths:
            self._distrust_locked(f"the watcher overflowed (more than {self.max_paths} "
                                  "changed paths)")

    def mark_dirty(self, paths: set[str]) -> None:
        """Paths that differ from the index without having been written since (see index_written)."""
        with self._mutex:
            for path in paths:
                self._seq += 1
                self._dirty[path] = self._seq

    def _distrust(self, why: str) -> None:
        with self._mutex:
            self._distrust_locked(why)

    def _distrust_locked(self, why: str) -> None:
        self._valid = False
        self._why = why
        self._epoch += 1
        self._dirty.clear()

    def overflow(self) -> None:
        """Behave as if inotify's queue overflowed: the next scan walks everything."""
        self._distrust("the watcher overflowed")

    # --- what scans ask -------------------------------------------------------------

    def _sync(self) -> bool:
        """Wait until every change made before now has reached :meth:`_absorb`."""
        if self._inotify is not None:
            self._drain()  # the kernel queued every earlier change before its call returned
            return self._running
        name = f"{os.getpid()}-{threading.get_ident()}-{next(self._counter)}"
        path = self.cookie_dir / name
        try:
            path.write_bytes(b"")
        except OSError:
            return False
        try:
            with self._mutex:
                return self._mutex.wait_for(
                    lambda: name in self._cookies or not self._running, timeout=_SYNC_TIMEOUT
                ) and name in self._cookies
        finally:
            with self._mutex:
                self._cookies.discard(name)
            path.unlink(missing_ok=True)

    def begin_scan(self, settings: Hashable = None) -> Ticket:
        """A scan starts, by git's ``settings`` (the stamp of its config files)."""
        sig = index_sig(self.git_dir)
        synced = self._running and self._valid and self._sync()
        with self._mutex:
            ticket = Ticket(None, self._seq, self._epoch, sig, settings)
            if not self._running:
                ticket.reason = "the watcher is not running"
            elif not self._valid:
                ticket.reason = self._why
            elif sig != self._base:
                ticket.reason = "git's index changed outside narr"
            elif settings != self._settings:
                ticket.reason = "git's settings changed"
            elif not synced:
                ticket.reason = "the watcher did not confirm it was up to date"
            else:
                ticket.candidates = set(self._dirty)
            return ticket

    def end_scan(self, ticket: Ticket, differing: set[str]) -> None:
        """The scan ``ticket`` found ``differing`` (working tree against the index) and nothing else."""
        with self._mutex:
            if ticket.epoch != self._epoch:
                return  # distrusted meanwhile: the paths it knew are gone anyway
            considered = self._dirty.keys() if ticket.candidates is None else ticket.candidates
            for path in [p for p in considered if p not in differing]:
                if self._dirty.get(path, ticket.seq + 1) <= ticket.seq:
                    del self._dirty[path]
            for path in differing:
                self._dirty.setdefault(path, ticket.seq)
            if ticket.candidates is None:
                self.stats.full += 1
                self.stats.last_full_reason = ticket.reason
                if self._running:
                    self._valid = True
                    self._base = ticket.sig
                    self._settings = ticket.settings
            else:
                self.stats.hinted += 1

    def remember_steady(self, sig: IndexSig, paths: dict[str, FileSig]) -> None:
        with self._mutex:
            if self._steady_for != sig:
                self._steady.clear()
                self._steady_for = sig
            self._steady.update(paths)

    def unsettled(self, candidates: set[str], sig: IndexSig, root: Path) -> set[str]:
        """``candidates`` less the paths narr itself last wrote into the index file of ``sig``
        and that nobody touched since (their file has the signature it had then)."""
        with self._mutex:
            if sig is None or sig != self._steady_for:
                return candidates
            known = {p: self._steady[p] for p in candidates if p in self._steady}
        return {p for p in candidates if p not in known or file_sig(root / p) != known[p]}

    def mark(self) -> tuple[int, int, IndexSig] | None:
        """Where the watcher stands once every change made before now has reached it: its
        count of changes, its epoch and the index file's signature; None when it cannot
        vouch for that (not running, not yet trusted, distrusted, or not up to date)."""
        sig = index_sig(self.git_dir)
        if not (self._running and self._valid and self._sync()):
            return None
        with self._mutex:
            return (self._seq, self._epoch, sig) if self._valid and self._running else None

    def keep(self, mark: tuple[int, int, IndexSig] | None, key: Hashable, found: Any) -> None:
        """Remember what a scan that began at ``mark`` found, under ``key`` (what else it
        depends on), for :meth:`recall`."""
        if mark is None or mark[2] is None:
            return
        with self._mutex:
            self._kept = (mark, key, found)

    def recall(self, key: Hashable) -> Any:
        """What the scan kept under ``key`` found, if nothing under the world changed since it
        began (nor git's index file, nor the watcher's trust); else None."""
        with self._mutex:
            kept = self._kept
        if kept is None or kept[1] != key:
            return None
        return kept[2] if self.mark() == kept[0] else None

    def trusted(self) -> bool:
        """Whether the next scan is likely to be a narrowed one (a hint, not a promise)."""
        with self._mutex:
            return self._running and self._valid

    def index_tree(self, sig: IndexSig) -> str | None:
        """The tree the index file of ``sig`` was found to hold, if a scan found it."""
        with self._mutex:
            return self._index_trees.get(sig) if sig is not None else None

    def remember_index_tree(self, sig: IndexSig, tree: str) -> None:
        """A scan found that the index file of ``sig`` holds ``tree`` (a file's identity and
        times name its content: narr and git replace the index, never edit it in place)."""
        if sig is None:
            return
        with self._mutex:
            if len(self._index_trees) > 64:
                self._index_trees.clear()
            self._index_trees[sig] = tree

    def own_index_write(self, before: IndexSig, read: IndexSig, after: IndexSig) -> None:
        with self._mutex:
            if self._valid and before == read == self._base:
                self._base = after

    def describe(self) -> dict[str, Any]:
        with self._mutex:
            return {"running": self._running, "trusted": self._valid,
                    "pending_paths": len(self._dirty), **self.stats.to_json()}
