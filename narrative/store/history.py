"""Walking the story line and naming its commits: revisions, event ids, the first-parent chain.

The story is the first-parent chain from a branch tip; every command that reads
or rewinds it walks that chain with :func:`first_parent`. Event ids resolve
through the catalog's event table, filled from history when it misses (a world
that came by clone or pull carries events this clone never recorded).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from narrative.errors import PAST_THE_START, InvalidInputError, NotFoundError
from narrative.store import records
from narrative.store.libgit import pygit2
from narrative.store.objects import Commit, git_commit
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    from narrative.model import EventRecord

_EVENT_PREFIX = re.compile(r"^[0-9a-f]{8}-[0-9a-f-]*$|^[0-9a-f]{6,}$")


def first_parent(commit: Commit | None, *, stop: str | None = None) -> Iterator[Commit]:
    """``commit`` and its first parents, newest first, until the root (or ``stop``, excluded)."""
    while commit is not None and commit.id != stop:
        yield commit
        commit = commit.first_parent


def chain_commits(wr: WorldRepo, tip: Commit, head: str | None) -> list[Commit]:
    """``tip``'s first-parent commits that the story line at ``head`` does not hold, oldest
    first: an abandoned chain's own events."""
    outside = _outside_history(wr, tip.id, head) if head is not None else None
    out: list[Commit] = []
    for commit in first_parent(tip):
        if outside is not None and commit.id not in outside:
            break
        out.append(commit)
    out.reverse()
    return out


def _outside_history(wr: WorldRepo, tip: str, head: str) -> set[str]:
    """The commits ``tip`` reaches that ``head``'s history does not hold.

    One walk, down to where the two meet; asking of each of the chain's commits whether
    ``head`` descends from it walked from ``head`` to the fork once per commit, so listing
    chains abandoned long ago cost their length times the story's since.
    """
    walker = wr.repo.walk(pygit2.Oid(hex=tip), pygit2.enums.SortMode.NONE)
    walker.hide(pygit2.Oid(hex=head))
    return {str(commit.id) for commit in walker}


def plain_world_commits(wr: WorldRepo, head: Commit) -> list[Commit]:
    """The plain git commits between the last event and ``head`` on the first-parent line,
    newest first, when together they changed ``world/`` (what ``narr adopt`` turns back into
    hand edits); empty when ``head`` is an event or the commits left ``world/`` alone."""
    plain: list[Commit] = []
    for commit in first_parent(head):
        if records.has_marker(commit.message):
            if plain and wr.world_tree_id(commit.tree) != wr.world_tree_id(head.tree):
                return plain
            return []
        plain.append(commit)
    return []


def told_on_line(wr: WorldRepo, marks: Iterable[str], head: str, originals: set[str]
                 ) -> dict[str, str]:
    """Which of the events ``originals`` (record ids) the story line at ``head`` holds a
    replayed copy of: original id -> the copy's commit. A replay's copies end at its mark;
    where the mark's history meets the story line, the copies below are the story's."""
    told: dict[str, str] = {}
    for mark in marks:
        try:
            base = wr.repo.merge_base(head, mark)
        except (KeyError, ValueError, pygit2.GitError):
            continue  # a mark whose commit is gone (pruned) holds nothing of the story
        if base is None:
            continue
        for commit in first_parent(Commit(wr.repo[base].peel(pygit2.Commit))):
            rec = commit.checked_record()
            if rec is None or rec["replay_of"] not in originals:
                break
            told.setdefault(rec["replay_of"], commit.id)
    return told


def replayed_copies(wr: WorldRepo, marks: Iterable[str], tip: str, originals: set[str]) -> set[str]:
    """Which of the events ``originals`` (record ids) of the chain at ``tip`` a replay told
    again: the copies lie on the first-parent line of its mark, above where the mark's history
    meets the chain's. A replay stopped half-way, or one ``--to`` an event, told only some."""
    told: set[str] = set()
    for mark in marks:
        try:
            base = wr.repo.merge_base(mark, tip)
            start = wr.repo[mark].peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            continue  # a mark whose commit is gone holds nothing
        for commit in first_parent(Commit(start), stop=str(base) if base is not None else None):
            rec = commit.checked_record()
            if rec is not None and rec["replay_of"] in originals:
                told.add(rec["replay_of"])
            if len(told) == len(originals):
                break
    return told


def undone_chain(wr: WorldRepo, head: Commit, target: Commit) -> list[Commit]:
    """Commits a move of the story line from ``head`` back to ``target`` undoes, newest first
    (first-parent line)."""
    if head.id == target.id:
        return []
    repo = wr.repo
    base = repo.merge_base(head.id, target.id)
    out: list[Commit] = []
    for commit in first_parent(head, stop=str(base) if base is not None else None):
        if commit.id == target.id or repo.descendant_of(target.id, commit.id):
            break  # reached the target's own history through a merge: nothing older is undone
        out.append(commit)
    return out


def merge_base(wr: WorldRepo, a: str, b: str) -> Commit | None:
    """The best common ancestor of two commits, or None when their histories never meet."""
    base = wr.repo.merge_base(a, b)
    return peel_commit(wr, str(base)) if base is not None else None


# A commit object larger than this (its record, mostly) is summarised from the catalog;
# a smaller one is read and parsed at once, cheaper than opening the catalog.
LARGE_COMMIT = 16 * 1024


def summaries(wr: WorldRepo, start: str, limit: int | None = None, *,
              since: str | None = None) -> list[dict[str, Any]]:
    """One-line summaries (:class:`~narrative.store.records.Summary`, as JSON) of
    ``start`` and its first parents, newest first, at most ``limit``, stopping at the first
    that ``since`` reaches.

    A large commit's summary comes from the catalog: its record is parsed only the first
    time it is listed (narr summarises its own events when it makes them), so a bulk
    event of tens of megabytes among them costs a row, not a parse. The size is read
    from the object's header, without inflating it.
    """
    out: list[dict[str, Any]] = []
    fresh: list[records.Summary] = []
    current: str | None = start
    try:
        while current is not None and (limit is None or len(out) < limit):
            if since is not None and is_ancestor(wr, current, since):
                break
            row = None
            large = wr.repo.odb.read_header(pygit2.Oid(hex=current))[1] > LARGE_COMMIT
            if large:
                row = wr.catalog.summaries([current]).get(current)
            if row is None:
                row = summary_row_of(wr.repo[current].peel(pygit2.Commit))
                if large:
                    fresh.append(row)
            out.append(row.to_json())
            current = row.parent
    finally:
        if fresh:  # a cache: a reader that cannot write it (a busy or full disk) still answers
            import sqlite3

            with contextlib.suppress(sqlite3.Error):
                wr.catalog.remember_summaries(fresh)
    return out


def summary(wr: WorldRepo, commit: Commit | str) -> dict[str, Any]:
    """The one-line summary of one commit (see :func:`summaries`)."""
    return summaries(wr, commit if isinstance(commit, str) else commit.id, 1)[0]


def content_of(wr: WorldRepo, commit: Commit | str) -> str:
    """An event's content, or a plain commit's first line, from the catalog's summary."""
    s = summary(wr, commit)
    if s["kind"] == "commit":
        return str((s["content"].splitlines() or [""])[0])
    return str(s["content"])


def summary_row_of(commit: Commit | pygit2.Commit) -> records.Summary:
    git = git_commit(commit)
    ids = git.parent_ids
    return records.summary_row(str(git.id), str(ids[0]) if ids else None, git.message)


def last_record(head: Commit) -> EventRecord | None:
    """The newest event on the story line: commits made with plain git in between (notes,
    a merge) carry no record, and the next event's parent is the event before them."""
    for commit in first_parent(head):
        rec = records.decode(commit.message)
        if rec is not None:
            return rec
    return None


def peel_commit(wr: WorldRepo, name: str) -> Commit | None:
    """The commit a ref or object id names, or None (missing, dangling, not a commit)."""
    found = _peel(wr, name)
    return Commit(found) if found is not None else None


def _peel(wr: WorldRepo, name: str) -> pygit2.Commit | None:
    try:
        obj = wr.repo.references[name] if name.startswith("refs/") else wr.repo[name]
        return obj.peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return None


def is_ancestor(wr: WorldRepo, ancestor: str, of: str) -> bool:
    """Whether ``ancestor`` is ``of`` or lies in its history."""
    return ancestor == of or bool(wr.repo.descendant_of(of, ancestor))


def resolve(wr: WorldRepo, rev: str) -> Commit:
    """A commit from any git revision (``HEAD~3``, a branch, a short hash) or an event id."""
    rev = rev.strip()
    if not rev:
        raise InvalidInputError("empty revision")
    if rev.startswith("-"):
        raise InvalidInputError(f"{rev!r} is not a revision")
    maybe_event = _EVENT_PREFIX.match(rev) is not None
    if maybe_event and "-" in rev:  # an event id: looked up before git's revisions
        found = find_event(wr, rev)
        if found is not None:
            return found
    try:
        return Commit(wr.repo.revparse_single(rev).peel(pygit2.Commit))
    except (KeyError, ValueError, pygit2.GitError, pygit2.InvalidSpecError):
        pass
    if maybe_event and "-" not in rev:
        found = find_event(wr, rev)
        if found is not None:
            return found
    raise _unresolved(wr, rev)


def _unresolved(wr: WorldRepo, rev: str) -> NotFoundError:
    m = re.match(r"^(.*?)~(\d+)$", rev)
    if m:
        try:
            base = Commit(wr.repo.revparse_single(m.group(1) or "HEAD").peel(pygit2.Commit))
        except (KeyError, ValueError, pygit2.GitError):
            pass
        else:
            depth = sum(1 for _ in first_parent(base)) - 1
            return NotFoundError(f"{rev} does not resolve: the story line has only {depth} "
                                 f"event{'s' if depth != 1 else ''} before {m.group(1) or 'HEAD'}",
                                 reason=PAST_THE_START)
    return NotFoundError(f"{rev!r} is neither a git revision nor an event id of this world")


_EVENT_SUFFIX = re.compile(r"^[0-9a-f]{6,12}$")


def find_event(wr: WorldRepo, prefix: str) -> Commit | None:
    """The commit of the event whose id starts with ``prefix``, or (six to twelve hex
    digits with no match as a start) ends with it: the digits ``narr`` shows in text,
    since an event id's leading digits are a timestamp its neighbours share."""
    cache = wr.catalog
    hits = cache.find_events(prefix)
    if not hits:
        index_all_events(wr)
        hits = cache.find_events(prefix)
    if not hits and _EVENT_SUFFIX.match(prefix):
        hits = cache.find_events(prefix, suffix=True)
    live: list[tuple[str, Commit]] = []
    for event_id, commit_id in hits:
        try:
            obj = wr.repo[commit_id]
        except KeyError:
            continue
        if isinstance(obj, pygit2.Commit):
            live.append((event_id, Commit(obj)))
    if len(live) > 1:
        raise InvalidInputError(
            f"event id prefix {prefix!r} is ambiguous: "
            + ", ".join(e for e, _ in live[:5]) + ("…" if len(live) > 5 else ""),
        )
    return live[0][1] if live else None


def recent_event(wr: WorldRepo, event_id: str, since: float) -> Commit | None:
    """The commit of the event ``event_id`` on any branch, looked for among the commits made
    since ``since`` (seconds since the epoch, a minute's leeway for clocks): whether an event
    asked for a moment ago was recorded, without the catalog (a crash may have kept it from
    being told)."""
    tips = [name for name in wr.repo.references if name.startswith("refs/heads/")]
    for name in tips:
        for commit in first_parent(peel_commit(wr, name)):
            if commit.commit_time < since - 60:
                break
            record = commit.raw_record()
            if record is not None and record.get("id") == event_id:
                return commit
    return None


def known_events(wr: WorldRepo, event_ids: Iterable[str]) -> set[str]:
    """Those of ``event_ids`` (given in full) the catalog knows, with their commit present."""
    return {name for name in event_ids for event_id, commit_id in wr.catalog.find_events(name)
            if event_id == name and commit_id in wr.repo}


def unreadable_records(wr: WorldRepo, tip: str, hide: str | None = None) -> list[str]:
    """``commit: why`` for each commit reachable from ``tip`` (not from ``hide``) whose message
    carries an event record narr cannot read: what a clone or a pull names, then goes on."""
    walker = wr.repo.walk(pygit2.Oid(hex=tip), pygit2.enums.SortMode.TOPOLOGICAL)
    if hide is not None:
        walker.hide(pygit2.Oid(hex=hide))
    out = []
    for commit in walker:
        if records.MARKER in commit.message:
            why = records.unreadable(commit.message)
            if why:
                out.append(f"commit {str(commit.id)[:10]}: its event record cannot be read "
                           f"({why}); narr takes it for a plain git commit")
    return out


def index_all_events(wr: WorldRepo) -> int:
    """Fill the event-id table from every commit reachable from narr's refs and branches."""
    repo = wr.repo
    walker = None
    for name in repo.references:
        if not (name.startswith("refs/heads/") or name.startswith("refs/narr/")):
            continue
        tip = _peel(wr, name)
        if tip is None:
            continue
        if walker is None:
            walker = repo.walk(tip.id, pygit2.enums.SortMode.NONE)
        else:
            walker.push(tip.id)
    if walker is None:
        return 0
    rows = []
    for commit in walker:
        rec = records.decode(commit.message)
        if rec is not None:
            rows.append((rec.id, str(commit.id)))
    wr.catalog.remember_events(rows)
    return len(rows)


def reverted_by(wr: WorldRepo, commits: Iterable[str]) -> dict[str, str]:
    """``commit -> the event id it reverts`` for the revert events among ``commits``.

    The catalog's chain does not keep a record's ``reverts``; only a book asks,
    and it reads the records of the events it prints anyway.
    """
    found: dict[str, str] = {}
    for commit in commits:
        obj = wr.repo.get(commit)
        if not isinstance(obj, pygit2.Commit):
            continue
        rec = records.decode_raw(obj.message)
        if rec is not None and isinstance(rec.get("reverts"), str):
            found[commit] = rec["reverts"]
    return found
