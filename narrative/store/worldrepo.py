"""The handle on one world: its git repository, its settings and its private state.

narr's private state (lock, journal, derived catalog, set-aside edits, failed
events) lives under ``.git/narr/``: never tracked, never cloned, and recoverable
from the history when it is lost.
"""

from __future__ import annotations

import contextlib
import os
import threading
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from narrative.config import CONFIG_FILE, WorldConfig, load_config
from narrative.errors import (
    ConflictError,
    InvalidInputError,
    InvalidWorldError,
    NotAWorldError,
)
from narrative.ids import WORLD_DIR
from narrative.store.libgit import pygit2
from narrative.store.lock import WriteLock
from narrative.store.objects import Commit, Tree, git_tree
from narrative.store.trees import EMPTY_TREE

if TYPE_CHECKING:
    from types import TracebackType

    from narrative.store.batch import Batch
    from narrative.store.catalog import Catalog
    from narrative.store.watch import WorldWatcher
    from narrative.store.worktree import HandEdits


_CACHE_TUNED = False
MERGE_STATE = "merge.json"  # under .git/narr/: a merge stopped on conflicts


def _tune_object_cache() -> None:
    """Let libgit2 keep large trees in its object cache (a process-wide setting).

    libgit2 caches trees of at most 4 KiB; a layer or bucket tree of a large world is
    bigger, so every path lookup and every tree comparison inflated it again from
    the pack (63 us a lookup in narr check). The cache's total stays bounded.
    """
    global _CACHE_TUNED
    if not _CACHE_TUNED:
        pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, 16 * 1024 * 1024)
        pygit2.settings.cache_max_size(64 * 1024 * 1024)
        _CACHE_TUNED = True


def require(*, git: bool = True) -> None:
    """What narr needs of pygit2 and SQLite (:func:`narrative.store.environment.require`),
    checked before libgit2 opens or makes a repository; imported then, not by every read."""
    from narrative.store.environment import require as check

    check(git=git)


def init_repository(root: Path) -> pygit2.Repository:
    """A new git repository at ``root`` whose first branch is ``main``."""
    require()
    return pygit2.init_repository(str(root), initial_head="main")


def open_repository(root: Path) -> pygit2.Repository | None:
    """The git repository whose working tree is exactly ``root``, or None."""
    require()
    found = pygit2.discover_repository(str(root))
    if found is None:
        return None
    repo = pygit2.Repository(found)
    if repo.workdir is None or Path(repo.workdir).resolve() != root.resolve():
        return None
    return repo


class WorldRepo:
    """One open world. A context manager: leaving the block closes the catalog and the
    repository handle (``with WorldRepo.open(path) as wr: ...``)."""

    def __init__(self, root: Path, repo: pygit2.Repository, config: WorldConfig) -> None:
        self.root = root
        self.repo = repo
        self.config = config
        self.git_dir = Path(repo.path)
        self.narr_dir = self.git_dir / "narr"
        self.lock = WriteLock(self.narr_dir / "lock")
        # The batch this handle runs in (narrative.store.batch), or None: one object with
        # its own state, set and cleared only by ``batch()``.
        self.batch: Batch | None = None
        # A scan of the hand edits made under the write lock, for the event that follows it
        # under the same hold: set by worktree.scan_for_reader, taken by worktree.scan_for_event.
        self.kept_scan: tuple[tuple[object, ...], HandEdits] | None = None
        self._scratch: Path | None = None  # a reader's copy of the catalog (read-only world)
        self._found: str | None = None  # the repository as discovered: where a lent handle goes back
        self._lent_back = False
        self._watcher: WorldWatcher | None = None  # kept while open (watch)

    # --- opening ----------------------------------------------------------------------

    @classmethod
    def open(cls, path: str | os.PathLike[str] = ".") -> WorldRepo:
        """Open the world containing ``path`` (searching upwards, as git does)."""
        require()  # a too-old pygit2 or an SQLite without FTS5 trigram: one error, nothing touched
        _tune_object_cache()
        start = Path(path).resolve()
        found = pygit2.discover_repository(str(start))
        if found is None:
            raise NotAWorldError(
                f"not a narr world: no git repository at {start} or above",
                hint="create one with: narr init DIR --sample",
            )
        repo = _kept_repository(found)
        if repo.is_bare or repo.workdir is None:
            raise NotAWorldError(f"not a narr world: {found} is a bare repository")
        root = Path(repo.workdir).resolve()
        if not (root / CONFIG_FILE).is_file():
            raise NotAWorldError(
                f"not a narr world: {root} is a git repository without {CONFIG_FILE}",
                hint="create a world with: narr init DIR",
            )
        config = load_config(root)
        _refuse_layout_change(repo, config)
        wr = cls(root, repo, config)
        wr._found = found
        return wr

    # --- HEAD -------------------------------------------------------------------------

    def head_ref(self) -> str | None:
        """The branch HEAD points at (``refs/heads/...``), or None when detached."""
        head = self.repo.references.get("HEAD")
        if head is None or head.type != pygit2.enums.ReferenceType.SYMBOLIC:
            return None
        target = head.target
        return target if isinstance(target, str) else None

    def branch(self) -> str | None:
        ref = self.head_ref()
        return ref.removeprefix("refs/heads/") if ref else None

    def head_commit(self) -> Commit | None:
        """HEAD's commit, or None before the first commit."""
        if self.repo.head_is_unborn:
            return None
        return Commit(self.repo.head.peel(pygit2.Commit))

    def head_id(self) -> str | None:
        """HEAD's commit id, without reading the commit (it may be a bulk event of tens of
        megabytes), or None before the first commit."""
        if self.repo.head_is_unborn:
            return None
        return str(self.repo.head.target)

    def has_commit(self, commit_id: str) -> bool:
        """Whether this repository holds the object ``commit_id`` (a shallow or damaged
        clone may not)."""
        try:
            return commit_id in self.repo
        except ValueError:
            return False

    def is_shallow(self) -> bool:
        return bool(self.repo.is_shallow)

    def require_no_git_operation(self, *, merging: bool = False) -> None:
        """Refuse to move the story while git is half-way through a merge, rebase or the like.

        Moving the branch then would leave git's own state (MERGE_HEAD...) pointing at
        a story that is gone, and the user's next git commit would be a surprise.
        """
        state = self.repo.state()
        if state != pygit2.enums.RepositoryState.NONE:
            what = pygit2.enums.RepositoryState(state).name.lower().replace("_", " ")
            raise ConflictError(
                f"a git {what} is in progress in this repository; narr will not move the story "
                "under it", hint="finish it (git commit, git rebase --continue) or abort it "
                                 "(git merge --abort, git rebase --abort) first")
        if not merging and (self.narr_dir / MERGE_STATE).exists():
            raise ConflictError(
                "a narr merge is in progress (it stopped on conflicts); narr will not move the "
                "story under it", hint="narr conflicts lists them: narr resolve each, then "
                                       "narr merge --continue, or narr merge --abort")

    def require_branch(self, *, merging: bool = False) -> str:
        """The current branch's ref; events and resets only move branches.

        ``merging``: the caller is the stopped merge itself, going on.
        """
        self.require_no_git_operation(merging=merging)
        ref = self.head_ref()
        if ref is None:
            raise InvalidInputError(
                "HEAD is detached: narr only moves story branches",
                hint="narr switch BRANCH (narr branch lists them)",
            )
        return ref

    def world_tree_id(self, tree: Tree | pygit2.Tree | None) -> str:
        """The id of ``world/`` inside a commit tree (the empty tree when there is none)."""
        if isinstance(tree, Tree):
            return tree.entry_id(WORLD_DIR) or EMPTY_TREE
        tree = git_tree(tree)
        if tree is None:
            return EMPTY_TREE
        try:
            entry = tree[WORLD_DIR]
        except KeyError:
            return EMPTY_TREE
        return str(entry.id)

    # --- objects ----------------------------------------------------------------------

    def blob_bytes(self, oid: str) -> bytes:
        obj = self.repo[oid]
        assert isinstance(obj, pygit2.Blob)
        return obj.data

    def checkout_bytes(self, path: str, data: bytes) -> bytes:
        """The bytes git would check out at ``path`` for a blob holding ``data``.

        Line-ending settings (``core.autocrlf``, ``eol``/``text`` attributes) make the
        working-tree file differ from the blob; narr writes what ``git checkout``
        would, or every file it wrote would look changed by hand.
        """
        filters = self.repo.load_filter_list(path, pygit2.enums.FilterMode.TO_WORKTREE)
        return filters.apply_to_buffer(data) if filters is not None else data

    @staticmethod
    def blob_id_of(data: bytes) -> str:
        """The blob id git gives ``data`` as it is (no filters), without writing it: the
        SHA-1 of git's object header and the bytes, computed here, not by libgit2."""
        import hashlib

        return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()

    def worktree_oid(self, path: str, data: bytes) -> str:
        """The blob id ``git add`` would store for ``data`` found at ``path`` (filters applied)."""
        return str(pygit2.hash(self.stored_bytes(path, data)))

    def stored_bytes(self, path: str, data: bytes) -> bytes:
        """The bytes ``git add`` would store for ``data`` found at ``path``."""
        filters = self.repo.load_filter_list(path, pygit2.enums.FilterMode.TO_ODB)
        return filters.apply_to_buffer(data) if filters is not None else data

    def signature(self, when: datetime | None = None) -> pygit2.Signature:
        """The configured git identity, or a neutral one so a fresh machine can still write."""
        when = when or datetime.now(UTC)
        ts = int(when.timestamp())
        delta = when.utcoffset()
        offset = int(delta.total_seconds() // 60) if delta is not None else 0
        try:
            default = self.repo.default_signature
            return pygit2.Signature(default.name, default.email, ts, offset)
        except (KeyError, pygit2.GitError):
            return pygit2.Signature("narr", "narr@localhost", ts, offset)

    # --- private state ----------------------------------------------------------------

    @cached_property
    def catalog(self) -> Catalog:
        from narrative.store.catalog import Catalog

        if self.read_only():
            return Catalog(self._private_copy_of_cache())
        return Catalog(self.narr_dir / "catalog.sqlite")

    def catalog_at(self, tree: Tree | None) -> Catalog:
        """The derived catalog, brought up to the world of ``tree`` (a commit's tree)."""
        cache = self.catalog
        target = self.world_tree_id(tree)
        if cache.tree() != target:  # up to date already: libgit2 is not needed
            cache.sync(self.repo, target, self.config.layout)
        return cache

    def read_only(self) -> bool:
        """Whether narr's private state cannot be written (a read-only mount, no permission)."""
        where = self.narr_dir if self.narr_dir.is_dir() else self.git_dir
        return not os.access(where, os.W_OK)

    def _private_copy_of_cache(self) -> Path:
        """A copy of the derived catalog a reader of a read-only world may update.

        The catalog is a cache, so a reader works on a throw-away copy (rebuilt from
        the history when there is none) rather than fail or write into the world.
        """
        import shutil
        import tempfile

        self._scratch = Path(tempfile.mkdtemp(prefix="narr-readonly-"))
        copy = self._scratch / "catalog.sqlite"
        for suffix in ("", "-wal"):
            with contextlib.suppress(OSError):
                shutil.copyfile(self.narr_dir / f"catalog.sqlite{suffix}", f"{copy}{suffix}")
        return copy

    def abs(self, relpath: str) -> Path:
        return self.root / relpath

    def inside(self, relpath: str) -> Path:
        """``abs(relpath)`` for reading or writing world content: refused, naming the link,
        when a part of the way is a symbolic link (:mod:`narrative.store.confine`)."""
        from narrative.store.confine import inside

        return inside(self.root, relpath)

    def watch(self) -> None:
        """Keep a file watcher on this world while it is open (the one a server keeps,
        :mod:`narrative.store.watch`): a long-lived program's scans for hand edits then
        examine only the files touched since the last one, not every file."""
        if self._watcher is None:
            from narrative.store.watch import keep_watching

            self._watcher = keep_watching(self.root, self.git_dir)

    def close(self) -> None:
        if self._watcher is not None:
            from narrative.store.watch import let_go

            watcher, self._watcher = self._watcher, None
            let_go(watcher)
        if "catalog" in self.__dict__:
            self.catalog.close()
        if self._scratch is not None:
            import shutil

            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if _WARM.repos is not None and any(kept is self.repo for kept in _WARM.repos.values()):
            return
        found, self._found = self._found, None
        if found is not None and _LENT.give_back(found, self.repo):
            self._lent_back = True
            return
        if not self._lent_back:  # once given back, the handle is another reader's
            self.repo.free()

    def __enter__(self) -> WorldRepo:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class _Warm(threading.local):
    repos: dict[str, pygit2.Repository] | None = None


_WARM = _Warm()


def keep_repositories_warm() -> None:
    """Keep each repository this thread opens open for its next command (``narr serve``).

    A fresh handle pays, at its first attribute lookup, for reading git's index (1 MB
    at 10k nodes, 10 MB at 100k) and the attribute files, and again before it writes
    the index. A kept handle re-reads only what changed on disk: libgit2 checks the
    index's, the attribute files' and the config's stamps, reads refs from disk every
    time and looks for objects written by others when one is missing, so plain git run
    beside the server is seen as it is by a fresh handle. Per thread: the server's
    writers, which run one at a time on its writer thread, share one; readers on other
    threads open their own.
    """
    if _WARM.repos is None:
        _WARM.repos = {}


class _Lent:
    """Repository handles a server lends its readers, one command at a time each.

    Readers run on a thread of their own per request, so a thread's kept handle
    (:func:`keep_repositories_warm`) would be opened afresh every time: a status with
    hand edits paid for git's index again (3 ms of its 10 at 10k nodes, 10 MB to read
    at 100k). A handle taken from here is the taker's alone until its world closes and
    gives it back; libgit2 re-reads from disk what changed since, as for a kept one.
    """

    IDLE = 4  # handles kept per world between commands

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.enabled = False
        self.idle: dict[str, list[pygit2.Repository]] = {}

    def take(self, found: str) -> pygit2.Repository | None:
        with self.lock:
            if not self.enabled:
                return None
            free = self.idle.get(found)
            return free.pop() if free else None

    def give_back(self, found: str, repo: pygit2.Repository) -> bool:
        with self.lock:
            if not self.enabled:
                return False
            free = self.idle.setdefault(found, [])
            if len(free) >= self.IDLE or any(r is repo for r in free):
                return False
            free.append(repo)
            return True


_LENT = _Lent()


def lend_repositories_to_readers() -> None:
    """In a server: let reader threads reuse the handles earlier readers closed."""
    _LENT.enabled = True


def _kept_repository(found: str) -> pygit2.Repository:
    if _WARM.repos is None:
        return _LENT.take(found) or pygit2.Repository(found)
    repo = _WARM.repos.get(found)
    if repo is None:
        repo = _WARM.repos[found] = pygit2.Repository(found)
    return repo


def _refuse_layout_change(repo: pygit2.Repository, config: WorldConfig) -> None:
    """A layout edited in narr.toml would make every node file look misplaced (or absent).

    The files are where the world's history put them; narr does not move them, so
    it refuses a layout that disagrees with the committed files (their shape, not
    narr.toml's history: a layout change committed with plain git is caught too).
    """
    if repo.head_is_unborn:
        return
    try:
        world = repo.head.peel(pygit2.Commit).tree[WORLD_DIR]
    except KeyError:
        return
    if not isinstance(world, pygit2.Tree):
        return
    for layer in world:
        layer_tree = repo[layer.id]
        if not isinstance(layer_tree, pygit2.Tree) or not len(layer_tree):
            continue
        first = next(iter(layer_tree))
        committed = "sharded" if first.type == pygit2.enums.ObjectType.TREE else "flat"
        if committed != config.layout:
            raise InvalidWorldError(
                f"{CONFIG_FILE}: layout is {config.layout!r}, but this world's node files are laid "
                f"out {committed!r}; narr cannot change a world's layout",
                hint=f"put layout = \"{committed}\" back in {CONFIG_FILE}",
            )
        return
