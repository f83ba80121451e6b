"""``narr chains``: the abandoned chains, listed without loading what replays them.

A listing reads each chain's ends from the catalog and its refs' names; replaying
(:mod:`narrative.engine.replay`) needs the event pipeline, which a listing does not.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from pydantic import Field

from narrative.answers import Items, Shape
from narrative.ids import EVENT_ID_RE
from narrative.store import (
    Commit,
    WorldRepo,
    abandoned_refs,
    chain_commits,
    chain_label,
    chain_name,
    chain_numbers,
    commit_summary,
    content_of,
    fetched_refs,
    peel_commit,
    replayed_copies,
    replayed_marks,
    was_replayed,
)


class ChainEnd(Shape):
    """One end of a chain: its commit, its event's id and words, and when it was made."""

    commit: str
    id: str | None
    content: str
    created_at: str | None


class Chain(Shape):
    """An abandoned chain of events, as :func:`list_chains` lists it.

    ``number`` (``n`` in JSON) is stable (``origin/3`` for another writer's); ``name`` is the
    readable one ``narr chains`` shows; ``first`` and ``last`` are its ends; ``base`` the
    commit it grew from; ``replayed`` whether it ran again since, ``replayed_events`` how many
    of its events that told again (fewer than ``length``: a replay stopped half-way, or ``--to``
    an event). Pass it to :func:`narrative.replay` as it is.
    """

    number: Annotated[int, Field(alias="n")]
    name: str
    key: str
    ref: str
    remote: str | None
    tip: str
    tip_event: str | None
    length: int
    first: ChainEnd | None
    last: ChainEnd | None
    abandoned_at: str | None
    base: str | None
    replayed: bool
    replayed_events: int

    @property
    def selector(self) -> str:
        """What names this chain to :func:`narrative.replay` whatever was abandoned since (its ref)."""
        return self.ref


class Chains(Items[Chain]):
    """Abandoned chains of events (left by reset), which replay can bring back; newest first."""

    NAME: ClassVar[str] = "chains"
    VERSION: ClassVar[int] = 2  # 2: a page of the list (next), when one was asked for


def list_chains(wr: WorldRepo) -> Chains:
    """Abandoned chains, newest first, each with its stable number and readable name."""
    head_id = wr.head_id()
    tips = tips_of(wr)
    numbers = numbered(tips)
    out = []
    for name, tip in tips.items():
        commits = chain_commits(wr, tip, head_id)
        first = _brief(wr, commits[0]) if commits else None
        last = _brief(wr, commits[-1]) if commits else None
        parsed = chain_name(name)
        replayed = was_replayed(wr, name)
        out.append({
            "n": numbers[name], "name": label_of(name, tip), "key": parsed.key, "ref": name,
            "remote": parsed.remote,
            "tip": tip.id, "tip_event": commit_summary(wr, tip)["id"],
            "length": len(commits), "first": first, "last": last,
            "abandoned_at": _when(parsed.key), "base": commits[0].parent_ids[0]
            if commits and commits[0].parent_ids else None,
            "replayed": replayed,
            "replayed_events": _replayed_events(wr, name, tip, commits) if replayed else 0,
        })
    return Chains.model_validate({"items": out})


def _replayed_events(wr: WorldRepo, name: str, tip: Commit, commits: list[Commit]) -> int:
    """How many of the chain's events a replay told again (all of them, or the first few)."""
    originals = {s["id"] for c in commits if (s := commit_summary(wr, c))["kind"] == "event"
                 and s["id"] is not None}
    if not originals:
        return 0
    return len(replayed_copies(wr, replayed_marks(wr, name), tip.id, originals))


def label_of(name: str, tip: Commit) -> str:
    return chain_label(name, tip)


def numbered(tips: dict[str, Commit]) -> dict[str, int]:
    """Each chain's number: one's own numbered together, each remote's among themselves
    (``origin/3`` is the number its writer sees as 3)."""
    groups: dict[str | None, list[str]] = {}
    for name in tips:
        groups.setdefault(chain_name(name).remote, []).append(name)
    out: dict[str, int] = {}
    for names in groups.values():
        out.update(chain_numbers(names))
    return out


def number_text(name: str, n: int) -> str:
    remote = chain_name(name).remote
    return f"{remote}/{n}" if remote else str(n)


def _brief(wr: WorldRepo, commit: Commit) -> dict[str, Any]:
    s = commit_summary(wr, commit)  # from the catalog: the record is not parsed
    return {"commit": commit.id, "id": s["id"], "content": content_of(wr, commit),
            "created_at": s["created_at"]}


def _when(name: str) -> str | None:
    """The time an abandoned ref was made, read back from its time-ordered id."""
    from datetime import UTC, datetime

    stem = name[:36]
    if not EVENT_ID_RE.match(stem):
        return None
    ms = int(stem.replace("-", "")[:12], 16)
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def tips_of(wr: WorldRepo) -> dict[str, Commit]:
    """Abandoned refs, newest first, then those fetched from remotes, with their tips; a ref
    whose commit is gone (a damaged clone) is left out: there is nothing to list or replay."""
    names = [*abandoned_refs(wr), *fetched_refs(wr, "abandoned")]
    return {name: tip for name in names if (tip := peel_commit(wr, name)) is not None}
