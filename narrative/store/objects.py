"""What the store hands out instead of git objects: a commit and a tree, named by id.

The engine reasons about events, not about libgit2: it needs a commit's id, its
parents, the world it holds and its record, and nothing else. These two small
values carry exactly that. Ids are text, so they compare, hash and print like the
ids every result already reports. Each value keeps the git object it was read from,
so a walk of ten thousand commits reads each one once, as it did when the engine
held pygit2 objects itself (the message, the parents and the tree are read only
when asked for); only modules of the store look inside.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from narrative.store.libgit import pygit2

if TYPE_CHECKING:
    from narrative.model import EventRecord


class Tree:
    """A commit's tree: the world (and ``narr.toml``, rules...) as that commit holds it."""

    __slots__ = ("_git", "_id")

    def __init__(self, git: pygit2.Tree) -> None:
        self._git = git
        self._id = str(git.id)

    @property
    def id(self) -> str:
        return self._id

    def blob_id(self, path: str) -> str | None:
        """The id of the file at ``path`` (None: no file there)."""
        blob = _blob(self._git, path)
        return str(blob.id) if blob is not None else None

    def read(self, path: str) -> bytes | None:
        """The bytes of the file at ``path`` (None: no file there)."""
        blob = _blob(self._git, path)
        return blob.data if blob is not None else None

    def has(self, path: str) -> bool:
        return self.blob_id(path) is not None

    def entry_id(self, name: str) -> str | None:
        """The id of the entry ``name`` directly in this tree (a file or a folder), or None."""
        try:
            return str(self._git[name].id)
        except KeyError:
            return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Tree) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Tree({self.id[:10]})"


class Commit:
    """One commit: its id, parents, tree and message (a narr event's record inside it).

    Equal by id; made only by the store, and read-only.
    """

    __slots__ = ("_git", "_id", "_tree")

    def __init__(self, git: pygit2.Commit) -> None:
        self._git = git
        self._id = str(git.id)
        self._tree: Tree | None = None

    @property
    def id(self) -> str:
        return self._id

    @property
    def parent_ids(self) -> tuple[str, ...]:
        return tuple(str(p) for p in self._git.parent_ids)

    @property
    def parents(self) -> tuple[Commit, ...]:
        return tuple(Commit(p) for p in self._git.parents)

    @property
    def first_parent(self) -> Commit | None:
        if not self._git.parent_ids:
            return None
        return Commit(self._git.parents[0])

    @property
    def is_merge(self) -> bool:
        return len(self._git.parent_ids) > 1

    @property
    def tree(self) -> Tree:
        if self._tree is None:
            self._tree = Tree(self._git.tree)
        return self._tree

    @property
    def tree_id(self) -> str:
        return str(self._git.tree_id)

    @property
    def message(self) -> str:
        return self._git.message

    @property
    def subject(self) -> str:
        """The message's first line (a plain commit's title; an event's content, shortened)."""
        lines = self._git.message.strip().splitlines()
        return lines[0] if lines else ""

    @property
    def commit_time(self) -> int:
        return self._git.commit_time

    def record(self) -> EventRecord | None:
        """The event record this commit seals, validated (None: not a narr event)."""
        from narrative.store.records import decode

        return decode(self._git.message)

    def checked_record(self) -> dict[str, Any] | None:
        """The record as the model's JSON, validated, read without the model where it plainly
        holds (None: not a narr event; see :func:`records.decode_checked`)."""
        from narrative.store.records import decode_checked

        return decode_checked(self._git.message)

    def raw_record(self) -> dict[str, Any] | None:
        """The record as plain JSON, without validation (see :func:`records.decode_raw`)."""
        from narrative.store.records import decode_raw

        return decode_raw(self._git.message)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Commit) and other.id == self.id

    def __hash__(self) -> int:
        return hash(self.id)

    def __repr__(self) -> str:
        return f"Commit({self.id[:10]})"


def _blob(tree: pygit2.Tree, path: str) -> pygit2.Blob | None:
    try:
        obj = tree[path]
    except KeyError:
        return None
    return obj if isinstance(obj, pygit2.Blob) else None


def git_tree(tree: Tree | pygit2.Tree | None) -> pygit2.Tree | None:
    """The git tree behind a store tree (the store's own modules only)."""
    return tree._git if isinstance(tree, Tree) else tree


def git_commit(commit: Commit | pygit2.Commit) -> pygit2.Commit:
    """The git commit behind a store commit (the store's own modules only)."""
    return commit._git if isinstance(commit, Commit) else commit
