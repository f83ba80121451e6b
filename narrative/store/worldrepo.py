"""The handle on one world: its git repository, its settings and its private state.

narr's private state (lock, journal, derived catalog, set-aside edits, failed
events) lives under ``.git/narr/``: never tracked, never cloned, and recoverable
from the history when it is lost.
"""

from __future__ import annotations

import contextlib
import os
from datetime import UTC, datetime
from functools import cached_property, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from narrative.config import CONFIG_FILE, WorldConfig, parse_config
from narrative.errors import (
    ConflictError,
    InvalidInputError,
    InvalidWorldError,
    NotAWorldError,
    Step,
)
from narrative.ids import WORLD_DIR
from narrative.store.gitconfig import settings_stamp
from narrative.store.libgit import pygit2
from narrative.store.lock import WriteLock
from narrative.store.objects import Commit, Tree, git_tree
from narrative.store.trees import EMPTY_TREE
from narrative.store.watch import FileSig, file_sig

if TYPE_CHECKING:
    from collections.abc import Callable, Hashable, Iterator
    from types import TracebackType

    from narrative.store.batch import Batch
    from narrative.store.catalog import Catalog
    from narrative.store.private import PrivateState
    from narrative.store.watch import WorldWatcher
    from narrative.store.worktree import HandEdits


_CACHE_TUNED = False


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


def load_config(root: Path) -> WorldConfig:
    """The world's ``narr.toml``, read and checked (:func:`narrative.config.parse_config`)."""
    from narrative import bounded
    from narrative.store.confine import inside

    path = inside(root, CONFIG_FILE)  # settings from the world, not from where a link points
    try:
        text = bounded.read(path, bounded.MAX_SETTINGS, label=CONFIG_FILE,
                            error=InvalidWorldError).decode("utf-8")
    except FileNotFoundError:
        raise InvalidWorldError(f"{CONFIG_FILE} is missing from {root}") from None
    except UnicodeDecodeError:
        raise InvalidWorldError(f"{CONFIG_FILE}: not UTF-8 text") from None
    return _parsed_config(text)


@lru_cache(maxsize=16)
def _parsed_config(text: str) -> WorldConfig:
    """:func:`parse_config` of ``text``, parsed once: a server opens the world for every
    command, and the settings of one text are one frozen value."""
    return parse_config(text)


class WorldRepo:
    """One open world. A context manager: leaving the block closes the catalog and the
    repository handle (``with WorldRepo.open(path) as wr: ...``)."""

    def __init__(self, root: Path, repo: pygit2.Repository, config: WorldConfig) -> None:
        self.root = root
        self.repo = repo
        self.config: WorldConfig = config
        self.git_dir = Path(repo.path)
        self.narr_dir = self.git_dir / "narr"
        self.lock = WriteLock(self.narr_dir / "lock", taken=self._lock_taken)
        # The batch this handle runs in (narrative.store.batch), or None: one object with
        # its own state, set and cleared only by ``batch()``.
        self.batch: Batch | None = None
        # A scan of the hand edits made under the write lock, for the event that follows it
        # under the same hold: set by worktree.scan_for_reader, taken by worktree.scan_for_event.
        self.kept_scan: tuple[tuple[object, ...], HandEdits] | None = None
        self._scratch: Path | None = None  # a reader's copy of the catalog (read-only world)
        self._found: str | None = None  # the repository as discovered: where a lent handle goes back
        self._stamp: Hashable = None  # the config files' stamp the handle was taken under
        self._lent_back = False
        self._watcher: WorldWatcher | None = None  # kept while open (watch)
        self._commands = 0  # commands under way on this handle (see command)
        self._config_sig: FileSig = None  # narr.toml's signature when ``config`` was read

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
        stamp = settings_stamp(found)  # before the handle looks any setting up
        repo = _kept_repository(found, stamp)
        if repo.is_bare or repo.workdir is None:
            raise NotAWorldError(f"not a narr world: {found} is a bare repository")
        root = Path(repo.workdir).resolve()
        if not (root / CONFIG_FILE).is_file():
            raise NotAWorldError(
                f"not a narr world: {root} is a git repository without {CONFIG_FILE}",
                hint="create a world with: narr init DIR",
            )
        config_sig = file_sig(root / CONFIG_FILE)
        config = load_config(root)
        _refuse_layout_change(repo, config)
        wr = cls(root, repo, config)
        wr._found, wr._stamp, wr._config_sig = found, stamp, config_sig
        return wr

    # --- git's settings ---------------------------------------------------------------

    @property
    def settings(self) -> Hashable:
        """The stamp of git's config files the repository handle was opened under
        (:func:`narrative.store.gitconfig.settings_stamp`)."""
        return self._stamp

    @contextlib.contextmanager
    def command(self) -> Iterator[WorldRepo]:
        """One command on this world, from its start to its end: it begins by following git's
        settings (:meth:`follow_settings`), and nothing inside it reopens the handle again, so
        every object it reads comes from one handle."""
        if not self._commands:
            self.follow_settings()
        self._commands += 1
        try:
            yield self
        finally:
            self._commands -= 1

    def follow_settings(self) -> None:
        """Reopen the repository handle if git's config files changed since it was opened,
        and read ``narr.toml`` again if it changed since it was read.

        A world kept open between commands (a notebook's, an agent's) keeps its handle, and
        libgit2 keeps each setting the handle looked up for its lifetime: after ``git config
        core.autocrlf true`` it went on hashing and writing files by the old line endings.
        Each command's start (:meth:`command`), each hold of the write lock and each reader's
        scan ask here: a few ``stat`` calls when nothing changed. Inside a command or under
        the lock (a write, a batch) the handle stays: one operation reads through one handle.
        """
        if not (self._commands or self.lock.held):
            self._follow()

    def _lock_taken(self) -> None:
        if not self._commands:
            self._follow()

    def _follow(self) -> None:
        if self._found is None:
            return  # closed
        stamp = settings_stamp(self._found)
        if stamp != self._stamp:
            self.repo = _kept_repository(self._found, stamp)
            self._stamp = stamp
            self.kept_scan = None  # what the old handle saw
            # (the old handle is not freed here: objects read through it may still be in
            # use, and a pool's other worlds may hold it; it goes with the last of them)
        config_sig = file_sig(self.root / CONFIG_FILE)
        if config_sig != self._config_sig:  # edited by hand, or another branch's
            config = load_config(self.root)
            _refuse_layout_change(self.repo, config)
            self.config, self._config_sig = config, config_sig

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
        if not merging and self.private.merging():
            raise ConflictError(
                "a narr merge is in progress (it stopped on conflicts); narr will not move the "
                "story under it", hint="{0} lists them: {1} each, then {2}, or {3}",
                steps=[Step("conflicts"), Step("resolve", cli="narr resolve"),
                       Step("continue_merge"), Step("abort_merge")])

    def require_branch(self, *, merging: bool = False) -> str:
        """The current branch's ref; events and resets only move branches.

        ``merging``: the caller is the stopped merge itself, going on.
        """
        self.require_no_git_operation(merging=merging)
        ref = self.head_ref()
        if ref is None:
            raise InvalidInputError(
                "HEAD is detached: narr only moves story branches",
                hint="{0} ({1} lists them)",
                steps=[Step("switch", {"name": "BRANCH"}), Step("branches")],
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
    def private(self) -> PrivateState:
        """narr's own files under ``.git/narr/`` (failed events, the last reset, a stopped
        merge, the server's record...), asked for by what they are."""
        from narrative.store.private import PrivateState

        return PrivateState(self.narr_dir)

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
        found, self._found = self._found, None
        if found is not None and _POOL is not None and _POOL.give_back(found, self.repo, self._stamp):
            self._lent_back = True
            return
        if not self._lent_back:  # once given back, the handle is another reader's
            self.repo.free()

    def __enter__(self) -> WorldRepo:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


class RepositoryPool(Protocol):
    """Where a long-lived process keeps repository handles between commands (a server:
    :mod:`narrative.serve.pools`). A fresh handle pays for reading git's index and attribute
    files at its first use; a kept one re-reads only what changed on disk."""

    def take(self, found: str, opener: Callable[[str], pygit2.Repository],
             stamp: Hashable) -> pygit2.Repository:
        """A handle on the repository ``found``: one kept whose ``stamp`` (the settings it
        read, :func:`settings_stamp`) is the same, or ``opener(found)``."""
        ...

    def give_back(self, found: str, repo: pygit2.Repository, stamp: Hashable) -> bool:
        """Take ``repo`` (taken with ``stamp``) back when its world closes; False: the pool
        does not keep it (freed)."""
        ...


_POOL: RepositoryPool | None = None


def use_pool(pool: RepositoryPool | None) -> None:
    """Open every world of this process through ``pool`` (None: a handle per world, freed
    when it closes, as a command run once needs)."""
    global _POOL
    _POOL = pool


def _kept_repository(found: str, stamp: Hashable) -> pygit2.Repository:
    if _POOL is None:
        return pygit2.Repository(found)
    return _POOL.take(found, pygit2.Repository, stamp)


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
