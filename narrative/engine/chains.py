"""``narr chains``: the abandoned chains, listed without loading what replays them.

A listing reads each chain's ends from the catalog and its refs' names; replaying
(:mod:`narrative.engine.replay`) needs the event pipeline, which a listing does not.
"""

from __future__ import annotations

from typing import Any

from narrative.ids import EVENT_ID_RE
from narrative.store import history, refs
from narrative.store.objects import Commit
from narrative.store.worldrepo import WorldRepo


def list_chains(wr: WorldRepo) -> list[dict[str, Any]]:
    """Abandoned chains, newest first, each with its stable number and readable name."""
    head_id = wr.head_id()
    tips = tips_of(wr)
    numbers = numbered(tips)
    out = []
    for name, tip in tips.items():
        commits = history.chain_commits(wr, tip, head_id)
        first = _brief(wr, commits[0]) if commits else None
        last = _brief(wr, commits[-1]) if commits else None
        parsed = refs.chain_name(name)
        replayed = refs.replayed(wr, name)
        out.append({
            "n": numbers[name], "name": label_of(name, tip), "key": parsed.key, "ref": name,
            "remote": parsed.remote,
            "tip": tip.id, "tip_event": history.summary(wr, tip)["id"],
            "length": len(commits), "first": first, "last": last,
            "abandoned_at": _when(parsed.key), "base": commits[0].parent_ids[0]
            if commits and commits[0].parent_ids else None,
            "replayed": replayed,
            "replayed_events": _replayed_events(wr, name, tip, commits) if replayed else 0,
        })
    return out


def _replayed_events(wr: WorldRepo, name: str, tip: Commit, commits: list[Commit]) -> int:
    """How many of the chain's events a replay told again (all of them, or the first few)."""
    originals = {s["id"] for c in commits if (s := history.summary(wr, c))["kind"] == "event"
                 and s["id"] is not None}
    if not originals:
        return 0
    return len(history.replayed_copies(wr, refs.replayed_marks(wr, name), tip.id, originals))


def label_of(name: str, tip: Commit) -> str:
    return refs.chain_label(name, tip)


def numbered(tips: dict[str, Commit]) -> dict[str, int]:
    """Each chain's number: one's own numbered together, each remote's among themselves
    (``origin/3`` is the number its writer sees as 3)."""
    groups: dict[str | None, list[str]] = {}
    for name in tips:
        groups.setdefault(refs.chain_name(name).remote, []).append(name)
    out: dict[str, int] = {}
    for names in groups.values():
        out.update(refs.chain_numbers(names))
    return out


def number_text(name: str, n: int) -> str:
    remote = refs.chain_name(name).remote
    return f"{remote}/{n}" if remote else str(n)


def _brief(wr: WorldRepo, commit: Commit) -> dict[str, Any]:
    s = history.summary(wr, commit)  # from the catalog: the record is not parsed
    return {"commit": commit.id, "id": s["id"], "content": history.content_of(wr, commit),
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
    names = [*refs.abandoned_refs(wr), *refs.fetched_refs(wr, "abandoned")]
    return {name: tip for name in names if (tip := history.peel_commit(wr, name)) is not None}
