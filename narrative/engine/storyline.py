"""The story line as a reader reads it: the first-parent chain, and at each merge the events the
merged line brought, in their order, marked with that line.

A merge event's record holds the merged line's changes to the world, but not its words: the
events that told them sit on the merged branch, behind the merge's second parent. A book,
a search or a list of chapters that walked the first parents only would lose an alternate
ending that was merged in, although ``narr get`` shows its effects. Here the merged line's
own commits (those the story line did not hold before the merge, oldest first) come just
before the merge that brought them, each marked with the branch's name; a merge on the
merged line is opened the same way, a few levels deep.
"""

from __future__ import annotations

from dataclasses import dataclass

from narrative.engine.eventgraph import EventInfo, Story
from narrative.store import WorldRepo, chain_commits, decode_raw_record, peel_commit

DEPTH = 4  # merges inside merged lines, opened this deep


@dataclass(frozen=True)
class Told:
    """One commit in story order: ``line`` None on the story line itself, else the branch a
    merge (``merge``, its commit) brought it from."""

    info: EventInfo
    line: str | None = None
    merge: str | None = None


def read_line(wr: WorldRepo, tip: str, story: Story | None = None) -> list[Told]:
    """Every commit of the story line ending at ``tip`` (indexed already), oldest first, with
    the merged lines' commits before each merge."""
    story = story or Story(wr, tip)
    return _expand(wr, list(reversed(story.events)), None, None, DEPTH)


def _expand(wr: WorldRepo, line: list[EventInfo], name: str | None, merge: str | None,
            depth: int) -> list[Told]:
    out: list[Told] = []
    for e in line:
        if e.kind == "merge" or e.kind == "commit":
            brought = _brought(wr, e.commit) if depth > 0 else None
            if brought is not None:
                branch, infos = brought
                out.extend(_expand(wr, infos, branch, e.commit, depth - 1))
        out.append(Told(e, name, merge))
    return out


def merged_lines(wr: WorldRepo, tip: str) -> list[Told]:
    """Only what the merges of ``tip``'s line brought (cheap when it has none: one query)."""
    out: list[Told] = []
    for merge in reversed(wr.catalog.graph.merges_on(tip)):
        brought = _brought(wr, merge)
        if brought is not None:
            branch, infos = brought
            out.extend(t for t in _expand(wr, infos, branch, merge, DEPTH - 1))
    return out


def _brought(wr: WorldRepo, commit_id: str) -> tuple[str, list[EventInfo]] | None:
    """The branch a merge commit merged and the commits it brought, oldest first (None: not a
    merge)."""
    commit = peel_commit(wr, commit_id)
    if commit is None or len(commit.parent_ids) < 2:
        return None
    ours, theirs = commit.parent_ids[0], commit.parent_ids[1]
    tip = peel_commit(wr, theirs)
    if tip is None:
        return None
    commits = chain_commits(wr, tip, ours)
    if not commits:
        return None
    graph = wr.catalog.graph
    graph.follow_chain(tip)
    infos = {e.commit: e for e in graph.event_infos(c.id for c in commits)}
    raw = decode_raw_record(commit.message) or {}
    branch = str(raw.get("merged") or theirs[:10])
    return branch, [infos[c.id] for c in commits if c.id in infos]
