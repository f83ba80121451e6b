"""The story as a log: the events of the first-parent chain and their records.

Reads never wait for the write lock and change nothing; ``log -n 20`` reads
twenty commits, whatever the length of the story.

``log`` takes what ``git log`` takes for one line: a revision, or ``A..B`` (the
events on B's first-parent line that A does not reach; an empty side is HEAD).
``log_of`` also takes a node: the events that touched it (its changes, hand edits
recorded on it, relations other nodes' events pointed at it), read from
:func:`~narrative.engine.history_of.history_of`. The argument is a revision first,
then a node; text that is both is refused rather than guessed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import TypeAdapter

from narrative.answers import Answer, Items
from narrative.errors import InvalidInputError, NotFoundError
from narrative.shapes import PlainCommit, Record
from narrative.store import (
    WorldRepo,
    commit_summaries,
    decode_raw_record,
    decode_record,
    peel_commit,
    resolve_rev,
    summary_row,
)

if TYPE_CHECKING:
    from narrative.model import EventRecord
    from narrative.store import Commit


class Entry:
    """One commit of the story line and its record (None for a commit narr did not make).

    The record is shown from its JSON and validated into an
    :class:`~narrative.model.EventRecord` only when asked for, so reading the log
    never pays for building the models; a one-line listing reads only
    :attr:`summary`, kept in the catalog, and never parses the record at all.
    """

    def __init__(self, commit: Commit | str, wr: WorldRepo | None = None,
                 summary: dict[str, Any] | None = None) -> None:
        self._commit = commit  # a commit, or its id (with ``wr`` to read it when asked)
        self._wr = wr
        self._summary = summary
        self._raw: dict[str, Any] | None = None
        self._decoded = False
        self._record: EventRecord | None = None

    @property
    def commit_id(self) -> str:
        return self._commit if isinstance(self._commit, str) else self._commit.id

    @property
    def commit(self) -> Commit:
        if isinstance(self._commit, str):
            assert self._wr is not None
            found = peel_commit(self._wr, self._commit)
            if found is None:
                raise NotFoundError(f"commit {self._commit} is missing from this repository")
            self._commit = found
        return self._commit

    @property
    def raw(self) -> dict[str, Any] | None:
        if not self._decoded:
            self._raw = decode_raw_record(self.commit.message)
            self._decoded = True
        return self._raw

    @property
    def record(self) -> EventRecord | None:
        if self._record is None and self.raw is not None:
            self._record = decode_record(self.commit.message)
        return self._record

    @property
    def summary(self) -> dict[str, Any]:
        """``commit``, ``kind``, ``id``, ``content``, ``timestamp``, ``created_at`` and the
        numbers of ``changes`` and hand ``edits``: what one line of the log shows."""
        if self._summary is None:
            if self._wr is not None:
                self._summary = commit_summaries(self._wr, self.commit_id, 1)[0]
            else:
                self._summary = summary_row(self.commit_id, None, self.commit.message,
                                                    self.raw).to_json()
        return self._summary

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"commit": self.commit_id}
        if self.raw is not None:
            out.update(self.raw)
        else:
            out.update({"kind": "commit", "id": None, "content": self.commit.message.strip(),
                        "diffusions": [], "edits": []})
        return out


class LogEntries(Items[Record | PlainCommit]):
    """Events newest first along a story line (a plain git commit on it as what it is)."""

    NAME: ClassVar[str] = "log"
    VERSION: ClassVar[int] = 2  # 2: a page of the list (next), when one was asked for


class ShownEvent(Record, Answer):
    """One event: its words, its changes and what caused them."""

    NAME: ClassVar[str] = "show"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)


class ShownCommit(PlainCommit, Answer):
    """A commit made with plain git, shown as what it is: no record, its message."""

    NAME: ClassVar[str] = "show"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)


Shown = ShownEvent | ShownCommit
"""What :func:`show_answer` answers: an event, or a plain commit."""


def log_entries(wr: WorldRepo, what: str = "HEAD", limit: int | None = None, *,
                node: bool | None = None) -> LogEntries:
    """:func:`log_of` as an answer: every record read and checked."""
    return LogEntries.model_validate({"items": [e.to_json() for e in log_of(wr, what, limit,
                                                                                node=node)]})


def show_answer(wr: WorldRepo, rev: str = "HEAD") -> Shown:
    """:func:`show` as an answer."""
    found: Shown = TypeAdapter(Shown).validate_python(show(wr, rev).to_json())
    return found


def entry(commit: Commit, wr: WorldRepo | None = None) -> Entry:
    return Entry(commit, wr)


def log(wr: WorldRepo, limit: int | None = None, rev: str = "HEAD") -> list[Entry]:
    """Events along the first-parent chain from ``rev`` (or ``A..B``), newest first."""
    head = wr.head_id()
    if head is None:
        return []
    since: Commit | None = None
    if ".." in rev:
        left, _, right = rev.partition("..")
        if right.startswith("."):
            raise InvalidInputError(f"{rev!r}: A...B is not supported; narr log A..B lists "
                                    "the events on B's line that A does not reach")
        since = resolve_rev(wr, left or "HEAD")
        rev = right or "HEAD"
    # HEAD is named by its id, never read: it may be a bulk event of tens of megabytes
    start = head if rev == "HEAD" else resolve_rev(wr, rev).id
    return [Entry(s["commit"], wr, s) for s in commit_summaries(
        wr, start, limit, since=since.id if since is not None else None)]


def log_of(wr: WorldRepo, what: str = "HEAD", limit: int | None = None, *,
           node: bool | None = None) -> list[Entry]:
    """``log`` for a revision or range, or the events that touched a node, newest first.

    ``node`` None decides (a revision first, then a node name, alias or id; both is an
    error), True takes ``what`` as a node, False as a revision.
    """
    if node is False or ".." in what or wr.head_id() is None or (node is None and what == "HEAD"):
        return log(wr, limit, what)  # plain `narr log` asks nothing of the names: no walk
    from narrative.engine.naming import Names

    if node is True:
        return node_log(wr, Names(wr).resolve(what, must_exist=False), limit)
    try:
        commit = resolve_rev(wr, what)
    except NotFoundError:
        commit = None
    names = Names(wr)
    found = names.candidates(what.strip())
    if commit is None:
        if len(found) == 1:
            return node_log(wr, found[0], limit)
        if found:
            names.resolve(what)  # raises, naming the nodes that carry the name
        try:  # an id of a node that has ended
            return node_log(wr, names.resolve(what, must_exist=False), limit)
        except NotFoundError:
            raise NotFoundError(f"{what!r} is neither a revision nor a node of this story",
                                **names.hint(what)) from None
    if found:
        raise InvalidInputError(
            f"{what!r} is both a revision ({commit.id[:10]}) and a node ({', '.join(found)})",
            hint=f"narr log --node {what} for the node; narr log {what}^0 for the revision")
    return log(wr, limit, what)


def node_log(wr: WorldRepo, node_id: str, limit: int | None = None) -> list[Entry]:
    """The events on the story line that changed ``node_id``, recorded a hand edit on it or
    changed a relation pointing at it, newest first (mentions alone do not count)."""
    from narrative.engine.history_of import history_of

    touched = [e.commit for e in history_of(wr, node_id, with_mentions=False).events
               if e.changes]
    touched.reverse()
    if limit is not None:
        touched = touched[:limit]
    return [Entry(commit_id, wr) for commit_id in touched if wr.has_commit(commit_id)]


def show(wr: WorldRepo, rev: str = "HEAD") -> Entry:
    """The event at ``rev`` (an event id, a commit, ``HEAD~N``...): its record and its changes;
    ``chapter:N`` is chapter N's own commit (its record: the text, scenes and summary)."""
    from narrative.engine import chapters

    number = chapters.parse_rev(rev)
    if number is not None:
        return Entry(chapters.find(wr, number).commit, wr)
    return entry(resolve_rev(wr, rev), wr)
