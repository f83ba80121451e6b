"""narr's own refs: abandoned story chains, set-aside hand edits, adopted plain commits.

All live under ``refs/narr/``, so every git tool (and ``git gc``) treats them as
reachable: a reset never makes an event or a hand edit unreachable. Names sort
chronologically (they start with a time-ordered id); the newest is number 1 in
``narr edits``.

An abandoned chain's ref also carries its number and a readable name, fixed when it
is made: ``refs/narr/abandoned/<uuid7>-<branch>/<n>-<words>-<hash>``, where the
words are the first words of the oldest undone event and the hash is the start of
the tip's commit id (``7-rain-stops-4f2a``). The number is one more than any chain's
before it, so a chain keeps its number for good. Chains kept before names existed
(``refs/narr/abandoned/<uuid7>-<branch>``) are numbered by age among themselves and
named from their tip. A chain replayed is marked by ``refs/narr/replayed/<key>``,
pointing at the story line's tip after the replay.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from narrative import safejson
from narrative.ids import new_event_id
from narrative.store.libgit import pygit2
from narrative.store.objects import Commit
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    from narrative.store.worktree import HandEdits

ABANDONED = "refs/narr/abandoned/"
REPLAYED = "refs/narr/replayed/"
_STOP_WORDS = frozenset({"a", "an", "the"})
_STORED = re.compile(r"^(\d+)-(.+)$")
SET_ASIDE = "refs/narr/edits/"
ADOPTED = "refs/narr/adopted/"
SET_ASIDE_MARKER = "narr-set-aside v1"
REMOTES = "refs/narr/remotes/"  # copies fetched from remotes: refs/narr/remotes/<remote>/<kind>/...


def valid_branch_name(name: str) -> bool:
    """Whether git accepts ``refs/heads/NAME``."""
    return bool(pygit2.reference_is_valid_name("refs/heads/" + name))


@dataclass(frozen=True)
class ReflogEntry:
    """One move of HEAD: from where to where, why, and when (seconds since the epoch)."""

    old: str
    new: str
    message: str | None
    time: int


def head_reflog(wr: WorldRepo) -> list[ReflogEntry]:
    """HEAD's reflog, newest first (empty when there is none)."""
    try:
        entries = list(wr.repo.references["HEAD"].log())
    except (KeyError, pygit2.GitError):
        return []
    return [ReflogEntry(str(e.oid_old), str(e.oid_new), e.message, e.committer.time)
            for e in entries]


def names_under(wr: WorldRepo, prefix: str) -> list[str]:
    """Every ref whose name starts with ``prefix``, sorted."""
    return sorted(n for n in wr.repo.references if n.startswith(prefix))


def exists(wr: WorldRepo, name: str) -> bool:
    """Whether the ref ``name`` exists (whatever it points at)."""
    return name in wr.repo.references


def _listed(wr: WorldRepo, prefix: str) -> list[str]:
    """Names under ``prefix`` whose commit is here, newest first (see :func:`dangling`)."""
    return sorted((n for n in wr.repo.references if n.startswith(prefix)
                   and _target_present(wr, n)), reverse=True)


def dangling(wr: WorldRepo) -> list[str]:
    """narr's refs naming a commit the repository does not hold (lost objects, a bad copy).

    They are left out of every listing, so one lost chain does not stop the rest
    from being listed or replayed; ``narr check`` names them.
    """
    return sorted(n for n in wr.repo.references
                  if n.startswith((ABANDONED, SET_ASIDE, ADOPTED)) and not _target_present(wr, n))


def _target_present(wr: WorldRepo, name: str) -> bool:
    return _present_target(wr, name) is not None


def _present_target(wr: WorldRepo, name: str) -> pygit2.Oid | None:
    """The commit ``name`` points at, when the repository holds it."""
    try:
        target = wr.repo.references[name].resolve().target
    except (KeyError, pygit2.GitError):
        return None
    return target if isinstance(target, pygit2.Oid) and target in wr.repo else None


def abandoned_refs(wr: WorldRepo) -> list[str]:
    return _listed(wr, ABANDONED)


def set_aside_refs(wr: WorldRepo) -> list[str]:
    return _listed(wr, SET_ASIDE)


def targets(wr: WorldRepo, names: list[str]) -> dict[str, str]:
    """Where each of ``names`` points (those that exist), without reading what it points at."""
    found = wr.repo.references
    return {name: str(found[name].target) for name in names if name in found}


DROPPED = "dropped.json"
"""One's own narr refs dropped here (``.git/narr/dropped.json``: ref -> the remotes it is
gone from): ``narr push`` deletes them on each remote, and a fetched copy of one is not
taken for someone else's."""


def dropped(wr: WorldRepo) -> dict[str, list[str]]:
    try:
        data = safejson.loads((wr.narr_dir / DROPPED).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: [r for r in v if isinstance(r, str)] for k, v in data.items()
            if isinstance(k, str) and k.startswith("refs/narr/") and isinstance(v, list)}


def save_dropped(wr: WorldRepo, data: dict[str, list[str]]) -> None:
    from narrative.store.journal import write_atomic

    wr.narr_dir.mkdir(parents=True, exist_ok=True)
    write_atomic(wr.narr_dir / DROPPED, json.dumps(data, indent=1, sort_keys=True).encode(),
                 wr.narr_dir / "tmp")


def remember_dropped(wr: WorldRepo, names: list[str]) -> None:
    """Note one's own refs just deleted, for the next push to delete on the remotes."""
    if not list(wr.repo.remotes):
        return  # nowhere they could have gone
    data = dropped(wr)
    for name in names:
        data.setdefault(name, [])
    save_dropped(wr, data)


def is_own(wr: WorldRepo, kind: str, tail: str, gone: dict[str, list[str]] | None = None) -> bool:
    """Whether ``refs/narr/<kind>/<tail>`` (as a remote holds it) is one's own: here, or
    dropped here and not yet deleted there."""
    name = f"refs/narr/{kind}/{tail}"
    return name in wr.repo.references or name in (dropped(wr) if gone is None else gone)


def fetched_refs(wr: WorldRepo, kind: str) -> list[str]:
    """Refs of ``kind`` (``abandoned``, ``edits``...) fetched from remotes, by remote, newest
    first; one's own refs that went up to a remote and came back are left out."""
    out = []
    gone = dropped(wr)
    for name in wr.repo.references:
        if not name.startswith(REMOTES):
            continue
        remote, sep, tail = name.removeprefix(REMOTES).partition(f"/{kind}/")
        if sep and remote and not is_own(wr, kind, tail, gone):
            out.append(name)
    return sorted((n for n in out if _well_formed(wr, n, kind)), reverse=True)


def _well_formed(wr: WorldRepo, name: str, kind: str) -> bool:
    """A fetched ref is what its kind says: a commit (set-aside edits: one narr made, on top
    of the commit it set them aside from). Anything else a remote holds is left out."""
    if not _target_present(wr, name):
        return False
    try:
        commit = wr.repo.references[name].peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        return False
    if kind == "edits":
        return bool(commit.parents) and f"\n\n{SET_ASIDE_MARKER}\n" in commit.message
    return True


def remote_of(ref: str) -> str | None:
    """The remote a fetched narr ref came from (None: one's own)."""
    if not ref.startswith(REMOTES):
        return None
    rest = ref.removeprefix(REMOTES)
    for kind in ("abandoned", "edits", "adopted", "replayed"):
        remote, sep, _ = rest.partition(f"/{kind}/")
        if sep:
            return remote
    return None


def chain_words(content: str) -> str:
    """The first (up to three) words of ``content``, slugified: ``"The rain stops."`` ->
    ``rain-stops``; a word without spaces (Chinese) is cut at eight characters."""
    words = [w[:8] for w in re.findall(r"[^\W_]+", content.lower()) if w not in _STOP_WORDS][:3]
    slug = "-".join(words)
    if not slug or not pygit2.reference_is_valid_name(f"{ABANDONED}x/{slug}"):
        return "chain"
    return slug


@dataclass(frozen=True)
class ChainName:
    """What an abandoned ref's name says: its key (``<uuid7>-<branch>``), and, for refs
    made since chains have names, its number and readable name."""

    ref: str
    key: str
    number: int | None
    label: str | None
    remote: str | None = None  # fetched from this remote (None: one's own)


def chain_name(ref: str) -> ChainName:
    remote = remote_of(ref)
    if remote is not None:
        rest = ref.removeprefix(f"{REMOTES}{remote}/abandoned/")
    else:
        rest = ref.removeprefix(ABANDONED)
    key, _, tail = rest.partition("/")
    m = _STORED.match(tail)
    if m is None:
        return ChainName(ref, key, None, None, remote)
    return ChainName(ref, key, int(m.group(1)), m.group(2), remote)


def chain_label(ref: str, tip: Commit) -> str:
    """A chain's readable name: stored in its ref, or for an older ref made from its tip;
    a chain fetched from a remote is named after it (``origin/rain-stops-5004``)."""
    parsed = chain_name(ref)
    stored = parsed.label
    if stored is None:
        from narrative.store.records import decode_raw

        raw = decode_raw(tip.message)
        stored = f"{chain_words(str(raw['content']) if raw else tip.message)}-{tip.id[:4]}"
    return f"{parsed.remote}/{stored}" if parsed.remote else stored


def chain_numbers(names: list[str]) -> dict[str, int]:
    """Each abandoned ref's number: its stored one, or for an older ref its place by age
    among the refs that store none."""
    parsed = [chain_name(n) for n in names]
    old = sorted(p.ref for p in parsed if p.number is None)
    out = {ref: i for i, ref in enumerate(old, 1)}
    out.update({p.ref: p.number for p in parsed if p.number is not None})
    return out


def keep_abandoned(wr: WorldRepo, tip: str, branch: str, message: str,
                   base: str | None = None) -> str | None:
    """Keep ``tip`` under ``refs/narr/abandoned/`` unless an abandoned ref already keeps it.

    ``base`` is where the story line goes back to: the chain's name comes from its
    oldest commit not in ``base``'s history (the tip's when no base is given).
    """
    from narrative.store import records

    repo = wr.repo
    commit = repo[tip]
    assert isinstance(commit, pygit2.Commit)
    # One listing of the refs serves both questions: walking the refs costs milliseconds
    # once chains pile up, each kept in its own folder.
    names = names_under(wr, ABANDONED)
    kept = [target for target in (_present_target(wr, n) for n in names) if target is not None]
    if _kept_already(repo, kept, commit):
        return None
    first = commit
    while base is not None and first.parents:
        parent = first.parents[0]
        if parent.id == base or repo.descendant_of(base, parent.id):
            break
        first = parent
    rec = records.decode_checked(first.message)
    words = chain_words(rec["content"] if rec is not None else first.message)
    taken = chain_numbers(names)
    number = max([len(taken), *taken.values()], default=0) + 1
    name = (f"{ABANDONED}{new_event_id()}-{branch.replace('/', '-')}/"
            f"{number}-{words}-{str(tip)[:4]}")
    repo.create_reference_direct(name, tip, False, message=message)
    return name


# How far a commit's time may run ahead of a descendant's (clocks of other machines, a
# history brought in by a merge): git's own cut-off for the same question (name-rev).
CLOCK_SLOP = 86_400


def _kept_already(repo: pygit2.Repository, kept: list[pygit2.Oid], commit: pygit2.Commit) -> bool:
    """Whether ``commit`` is one of ``kept`` or in the history of one.

    Asking libgit2 about each kept tip in turn walks from it and from ``commit`` to where
    they meet, the depth of the fork, for every chain: a reset on a story of 1k events with
    twenty chains abandoned along it took 0.15 s here, growing with both. A descendant is
    younger than its ancestors, so a tip committed more than a day before ``commit`` cannot
    hold it (a reset keeps HEAD, the newest commit: usually no walk runs at all), and the
    rest are asked together, in one walk of what they hold that ``commit``'s history does
    not. Where clocks were wrong by more than a day, the cost is a second ref naming the
    same events, never a lost one.
    """
    if commit.id in kept:
        return True
    since = commit.commit_time - CLOCK_SLOP
    younger: list[pygit2.Oid] = []
    for tip in kept:
        obj = repo.get(tip)
        if isinstance(obj, pygit2.Commit) and obj.commit_time >= since:
            younger.append(obj.id)
    if not younger:
        return False
    walker = repo.walk(None, pygit2.enums.SortMode.NONE)
    for tip in younger:
        walker.push(tip)
    walker.hide(commit.id)
    # Every path from a tip down to ``commit`` passes a commit outside its history whose
    # parent it is.
    return any(commit.id in held.parent_ids for held in walker)


@dataclass(frozen=True)
class Kept:
    name: str
    new: bool  # made now (False: an existing ref already kept the commit)


def keep_adopted(wr: WorldRepo, tip: str, branch: str, message: str) -> Kept:
    """Keep plain commits ``narr adopt`` moves off a branch under ``refs/narr/adopted/``.

    An adopted ref that already keeps ``tip`` (an adopt a crash cut short) is reused.
    """
    repo = wr.repo
    for name in _listed(wr, ADOPTED):
        if repo.references[name].target == tip:
            return Kept(name, False)
    name = f"{ADOPTED}{new_event_id()}-{branch.replace('/', '-')}"
    repo.create_reference_direct(name, tip, False, message=message)
    return Kept(name, True)


def mark_replayed(wr: WorldRepo, ref: str, head: str) -> None:
    wr.repo.create_reference_direct(REPLAYED + chain_name(ref).key, pygit2.Oid(hex=head), True,
                                    message="narr replay")


def replayed(wr: WorldRepo, ref: str) -> bool:
    """Whether the chain was replayed here, or (as last fetched) by the writer of a remote."""
    key = chain_name(ref).key
    if REPLAYED + key in wr.repo.references:
        return True
    return any(n.startswith(REMOTES) and n.endswith(f"/replayed/{key}")
               for n in wr.repo.references)


def replayed_marks(wr: WorldRepo, ref: str) -> list[str]:
    """The commits the chain's replays ended at: here, and as last fetched from remotes."""
    key = chain_name(ref).key
    names = [n for n in wr.repo.references
             if n == REPLAYED + key or (n.startswith(REMOTES) and n.endswith(f"/replayed/{key}"))]
    return [str(wr.repo.references[n].target) for n in names]


def drop_abandoned(wr: WorldRepo, ref: str) -> None:
    """Delete an abandoned chain's ref (and its replayed mark)."""
    gone = [name for name in (ref, REPLAYED + chain_name(ref).key) if name in wr.repo.references]
    remember_dropped(wr, gone)
    for name in gone:
        wr.repo.references.delete(name)


def kept_for_good(wr: WorldRepo, but: str | None = None) -> list[pygit2.Oid]:
    """Tips of the refs narr keeps for ever: the story lines and one's own abandoned chains
    (``but`` left out). Set-aside edits, adopted commits, tags and copies fetched from remotes
    are not among them: each can go (``narr edits drop``, a remote's writer dropping theirs)
    without narr asking whether it was the last to hold an event."""
    out = []
    for name in wr.repo.references:
        if name == but or not name.startswith(("refs/heads/", ABANDONED)):
            continue
        try:
            target = wr.repo.references[name].resolve().target
        except (KeyError, pygit2.GitError):
            continue
        if isinstance(target, pygit2.Oid) and target in wr.repo:
            out.append(target)
    return out


def held_only_by(wr: WorldRepo, tip: str, but: str | None = None) -> list[Commit]:
    """The commits ``tip`` reaches that no story line and no abandoned chain (``but`` aside)
    holds, newest first: what would be left to git's reflog if ``tip``'s ref went."""
    walker = wr.repo.walk(pygit2.Oid(hex=tip), pygit2.enums.SortMode.TOPOLOGICAL)
    for kept in kept_for_good(wr, but):
        walker.hide(kept)
    return [Commit(commit) for commit in walker]


@dataclass
class SetAside:
    """Hand edits a reset (or a switch) moved out of the way, stored as a commit."""

    ref: str
    commit: Commit
    meta: dict[str, Any]

    @property
    def base(self) -> Commit:
        base = self.commit.first_parent
        assert base is not None  # made on top of a commit (fetched ones are checked)
        return base


def set_aside(wr: WorldRepo, head: Commit, scan: HandEdits, reason: str,
              when: datetime | None = None) -> SetAside | None:
    """Keep every uncommitted change under ``world/`` (``scan.raw``: their bytes exactly, even
    a file that is not valid JSON) as a commit on top of ``head`` under ``refs/narr/edits/``;
    None when there is nothing to keep."""
    blobs: dict[str, pygit2.Oid | None] = {}
    for path, oid in scan.raw.items():
        if oid is None:
            blobs[path] = None
        elif oid != "not-a-file":
            blobs[path] = wr.repo.create_blob(wr.stored_bytes(path, wr.inside(path).read_bytes()))
    if not blobs:
        return None
    return save_set_aside(wr, head, blobs, reason, when)


def save_set_aside(wr: WorldRepo, head: Commit, blobs: dict[str, pygit2.Oid | None],
                   reason: str, when: datetime | None = None) -> SetAside:
    """A commit on top of ``head`` holding the working tree's changed world files."""
    from narrative.store.trees import update_tree

    repo = wr.repo
    tree = update_tree(repo, pygit2.Oid(hex=head.tree_id), blobs)
    meta = {"reason": reason, "head": str(head.id), "paths": sorted(blobs),
            "created_at": (when or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    message = (f"narr: hand edits set aside ({reason})\n\n{SET_ASIDE_MARKER}\n"
               f"{json.dumps(meta, ensure_ascii=False, indent=2)}\n")
    sig = wr.signature(when)
    commit_id = repo.create_commit(None, sig, sig, message, tree, [head.id])
    name = f"{SET_ASIDE}{new_event_id()}"
    repo.create_reference_direct(name, commit_id, False, message=f"narr: set aside ({reason})")
    commit = repo[commit_id]
    assert isinstance(commit, pygit2.Commit)
    return SetAside(name, Commit(commit), meta)


def load_set_aside(wr: WorldRepo, name: str) -> SetAside:
    commit = wr.repo.references[name].peel(pygit2.Commit)
    _, _, rest = commit.message.partition(f"\n\n{SET_ASIDE_MARKER}\n")
    try:
        meta = safejson.loads(rest) if rest else {}
    except ValueError:
        meta = {}
    return SetAside(name, Commit(commit), meta)


def drop_set_aside(wr: WorldRepo, ref: str) -> None:
    """Delete one set-aside (noted for the next push to delete on the remotes too)."""
    remember_dropped(wr, [ref])
    wr.repo.references.delete(ref)

