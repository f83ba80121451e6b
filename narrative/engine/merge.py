"""``narr merge``: two story lines become one, three-way per node and per JSON field.

The base is the merge base of HEAD (ours) and the branch (theirs). A node only
theirs changed comes over whole; a node both changed merges field by field, the
fields :func:`narrative.fields.diff` yields (every relation edge is a field of its
own, ``/relations/<type>/<target>``):

- a field changed on one side only takes that side's value;
- a field changed on both sides to the same value is no conflict;
- a field changed on both sides to different values (or one side changing a
  field inside another the other side replaced) is a conflict;
- a node created on both sides with the same id merges the same way from a base
  of defaults (no aliases, empty state and relations): equal content is one node,
  different content a conflict per field or relation edge, whose base is the
  default or absent (who created it, ``created_by_event``, stays ours);
- nodes created on both sides under different ids for one name or alias become
  one node: ours, with our id and name, theirs merged into it as above and every
  relation theirs pointed at their node pointing at ours (:func:`_joins`); the
  merge record keeps the join (``joined``), and later merges between the two lines
  apply it again, so a node still changed under the id it gave up merges field by
  field into the one kept instead of conflicting as a whole;
- a node ended on one side and changed on the other is a conflict on the whole
  node (field ``""``).

The merge is an event: a commit with two parents (HEAD, then the branch tip)
whose record (kind ``merge``) lists as diffusions the changes from the first
parent's world to the merged world, each with the side it came from
(``theirs``, or ``resolved`` for a conflict's resolution); ``narr check``
verifies it like any event. When HEAD is an ancestor of the branch, the story
just moves there (a fast-forward).

On conflicts nothing is committed: the state is kept (:class:`narrative.store.private.PrivateState`)
until ``narr merge --continue`` or ``--abort``.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Any, ClassVar, Literal

from narrative import fields, safejson
from narrative.answers import MAYBE, Answer, Shape
from narrative.engine.event import iso, now_utc
from narrative.errors import (
    ConflictError,
    InvalidInputError,
    InvalidWorldError,
    NotFoundError,
    NothingToDoError,
    Step,
)
from narrative.fields import MERGE_SPELLING, FieldConflict
from narrative.ids import new_event_id, parse_node_path
from narrative.model import JSON, Change, EventRecord
from narrative.nodefile import NodeDict, as_node_dict, validate
from narrative.shapes import StoredRecord
from narrative.store import (
    HEADS,
    REMOTE_HEADS,
    Commit,
    HandEdits,
    Move,
    WorldRepo,
    WorldView,
    branch_exists,
    changed_nodes,
    is_ancestor,
    joins_since,
    last_record,
    merge_base,
    move_head,
    peel_commit,
    plan_move,
    record_json,
    ref_exists,
    resolution_key,
    resolve_rev,
    scan_edits,
    seal,
    unresolved_conflicts,
    writing,
)

ABSENT = fields.ABSENT
_RESOLVE = Step("resolve", cli="narr resolve NODE FIELD --ours|--theirs|--value JSON")
"""How a conflict is resolved, as a hint names it."""
WHOLE_NODE = ""


class MergeOutcome(Shape):
    """A merge as :class:`MergeResult` tells it, without its ``schema`` (a pull's ``merge``):
    ``record`` the merge event's, or on a fast-forward the new tip's (null when that is a
    plain commit); ``joined`` the nodes made on both sides that became one; ``kept_edits``
    nodes whose hand edits stay uncommitted."""

    branch: str
    commit: str | None
    fast_forward: bool
    warnings: list[str]
    joined: list[dict[str, str]]
    kept_edits: list[str]
    record: StoredRecord | None


class MergeResult(MergeOutcome, Answer):
    """A story line merged into the current one: a merge event, or a fast-forward."""

    NAME: ClassVar[str] = "merge"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)


class MergeConflict(Shape):
    """A field both lines changed: ``base``, ``ours``, ``theirs`` absent where the field is;
    ``resolution`` the value chosen, absent when none is or when the choice is to leave the
    field out (``resolved`` says which)."""

    node: str
    field: str
    base: Annotated[JSON | None, MAYBE] = None
    ours: Annotated[JSON | None, MAYBE] = None
    theirs: Annotated[JSON | None, MAYBE] = None
    resolved: bool
    resolution: Annotated[JSON | None, MAYBE] = None


class Conflicts(Answer):
    """The stopped merge (``ours``, ``theirs``, ``base`` its commits) and each conflict."""

    NAME: ClassVar[str] = "conflicts"

    branch: str
    ours: str
    theirs: str
    base: str
    conflicts: list[MergeConflict]
    unresolved: int


class Resolved(Conflicts):
    """The stopped merge and its conflicts, after a resolution was chosen."""

    NAME: ClassVar[str] = "resolve"


class MergeAborted(Answer):
    """A stopped merge forgotten; the world was never changed by it."""

    NAME: ClassVar[str] = "merge_aborted"

    branch: str
    aborted: Literal[True]


@dataclass
class _Merging:
    """What a merge does as it goes, told as a :class:`MergeResult` at the end."""

    branch: str
    commit: str | None = None
    fast_forward: bool = False
    record: EventRecord | None = None
    conflicts: list[FieldConflict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    joined: list[dict[str, str]] = field(default_factory=list)  # see :func:`_joins`
    kept_edits: list[str] = field(default_factory=list)  # nodes whose hand edits stay uncommitted

    def told(self) -> MergeResult:
        return MergeResult.model_validate({
            "branch": self.branch, "commit": self.commit, "fast_forward": self.fast_forward,
            "warnings": self.warnings, "joined": self.joined, "kept_edits": self.kept_edits,
            "record": record_json(self.record) if self.record is not None else None})


@dataclass
class _Plan:
    finals: dict[str, NodeDict | None]  # node id -> merged node (None: gone), where it differs
    conflicts: list[FieldConflict]
    resolved: set[str]  # keys of the conflicts whose resolution is in ``finals``
    joined: list[dict[str, str]] = field(default_factory=list)


# --- the three-way merge (pure) ---------------------------------------------------------


_DEFAULTS: dict[str, Any] = {"kind": "", "aliases": [], "summary": "", "lifecycle": "permanent",
                             "traits": {}, "state": {}, "relations": {}}


def _overlaps(a: str, b: str) -> bool:
    return a == b or a.startswith(b + "/") or b.startswith(a + "/")


def merge_node(node_id: str, base: NodeDict | None, ours: NodeDict | None,
               theirs: NodeDict | None) -> tuple[NodeDict | None, list[FieldConflict]]:
    """The merged node (ours where there is a conflict) and the conflicts."""
    if fields.same(_v(ours), _v(theirs)) or fields.same(_v(base), _v(theirs)):
        return ours, []
    if fields.same(_v(base), _v(ours)):
        return theirs, []
    if ours is None or theirs is None:
        return ours, [FieldConflict(node_id, WHOLE_NODE, _v(base), _v(ours), _v(theirs))]
    # Made on both sides: the base is a node of defaults (empty containers, no aliases), so
    # a field one side left at its default takes the other's value, and state fields and
    # relation edges merge one by one (a conflict's base is absent), not as wholes.
    start: dict[str, Any] = dict(base) if base is not None else {
        key: copy.deepcopy(default) for key, default in _DEFAULTS.items()
        if key in ours and key in theirs}
    mine = fields.diff(node_id, start, ours)
    other = fields.diff(node_id, start, theirs)
    merged: dict[str, Any] = copy.deepcopy(dict(ours))
    conflicts: list[FieldConflict] = []
    clean: list[Change] = []
    for ch in other:
        if base is None and ch.field == "/created_by_event":
            continue  # made on both sides: the node stays ours
        clash = [m for m in mine if _overlaps(m.field, ch.field)]
        if not clash:
            clean.append(ch)
            continue
        if len(clash) == 1 and clash[0].field == ch.field and fields.same(clash[0].new, ch.new):
            continue
        where = min([ch.field, *(m.field for m in clash)], key=len)
        if any(c.field == where for c in conflicts):
            continue
        conflicts.append(FieldConflict(node_id, where, fields.get(start, where),
                                  fields.get(ours, where), fields.get(theirs, where)))
    nodes: dict[str, Any] = {node_id: merged}
    problems = fields.apply_changes(nodes, clean, verify_old=False)
    if problems:  # a change that cannot land on ours: the two versions, field by field
        raise InvalidWorldError(f"node {node_id} cannot be merged: {problems[0]}", details=problems)
    return nodes[node_id], conflicts


def _v(node: Any) -> Any:
    return ABSENT if node is None else node


def _resolve_into(node: NodeDict | None, c: FieldConflict, value: Any) -> NodeDict | None:
    if c.field == WHOLE_NODE:
        return None if value is ABSENT else as_node_dict(dict(value))
    if node is None:
        raise InvalidInputError(f"{c.node} {c.field}: the node is gone, a field cannot be set")
    out: dict[str, Any] = copy.deepcopy(dict(node))
    if value is ABSENT:
        fields.drop(out, c.field)
    else:
        fields.put(out, c.field, copy.deepcopy(value))
    return as_node_dict(out)


# --- reading the three worlds -----------------------------------------------------------


def _plan(wr: WorldRepo, base: Commit, ours: Commit, theirs: Commit,
          resolutions: dict[str, Any]) -> _Plan:
    views = {name: WorldView(wr, c.tree) for name, c in
             (("base", base), ("ours", ours), ("theirs", theirs))}
    mine = changed_nodes(wr, base.tree, ours.tree)
    other = changed_nodes(wr, base.tree, theirs.tree)

    def raw(which: str, node_id: str) -> NodeDict | None:
        found = views[which].committed_file(node_id)
        return found[1] if found is not None else None

    # Joins earlier merges made (each merge record keeps its own). One of ours: the other
    # line may still change its node under its own id, so base and theirs read it under
    # ours. One of theirs (we took no part in it): our node under the id it gave up is
    # read, in base and ours, under the id it joined, and moves there.
    def usable(t: str, o: str, keeper: str, other_side: str) -> bool:
        return (raw(other_side, t) is not None or raw("base", t) is not None) and \
            raw(keeper, t) is None and raw(keeper, o) is not None and \
            raw("base", o) is None and raw(other_side, o) is None

    carried = {t: o for t, o in joins_since(wr, ours, base).items()
               if usable(t, o, "ours", "theirs")}
    flipped = {t: o for t, o in joins_since(wr, theirs, base).items()
               if usable(t, o, "theirs", "ours") and t not in carried}
    maps = {"base": {**carried, **flipped}, "ours": flipped, "theirs": carried}
    keeper = {**{o: "ours" for o in carried.values()}, **{o: "theirs" for o in flipped.values()}}

    def node(which: str, node_id: str) -> NodeDict | None:
        joined_ = maps[which]
        if not joined_:
            return raw(which, node_id)
        if node_id in joined_:
            return None  # the id was given up for another
        src = next((t for t, o in joined_.items() if o == node_id), None)
        found = raw(which, src or node_id)
        if found is None:
            return None
        out = _renamed(found, joined_)
        return _folded(out, found, raw(keeper[node_id], node_id)) if src else out

    if carried or flipped:
        mine = {flipped.get(n, n) for n in mine} | set(carried.values())
        other = {carried.get(n, n) for n in other} | set(flipped.values())
    joins = _joins(mine, other, node)

    def their(node_id: str) -> NodeDict | None:
        """Theirs, with a joined node under our id and every relation to it following."""
        src = next((t for t, o in joins.items() if o == node_id), node_id)
        found = node("theirs", src)
        if found is None or not joins:
            return found
        out = _renamed(found, joins)
        return _folded(out, found, node("ours", node_id)) if src != node_id else out

    finals: dict[str, NodeDict | None] = {}
    conflicts: list[FieldConflict] = []
    resolved: set[str] = set()
    for node_id in sorted((other - set(joins)) | set(joins.values())):
        o = node("ours", node_id) if node_id in mine or carried or flipped else node(
            "base", node_id)
        merged, found = merge_node(node_id, node("base", node_id), o, their(node_id))
        for c in found:
            key = resolution_key(c.node, c.field)
            if key in resolutions:
                merged = _resolve_into(merged, c, _stored(resolutions[key]))
                resolved.add(key)
        conflicts.extend(found)
        if not fields.same(_v(merged), _v(raw("ours", node_id) if flipped else o)):
            finals[node_id] = merged
    if flipped:  # our nodes under the ids given up go, and every relation to them follows
        for t in flipped:
            finals[t] = None
        for src, _, _ in views["ours"].incoming(list(flipped)):
            if src not in finals and src not in flipped:
                found_ = raw("ours", src)
                if found_ is not None:
                    finals[src] = _renamed(found_, flipped)
    joined = [{"theirs": t, "ours": o, "name": str((node("ours", o) or {}).get("name", o))}
              for t, o in sorted(joins.items())]
    return _Plan(finals, conflicts, resolved, joined)


def _folded(out: NodeDict, theirs: NodeDict, ours: NodeDict | None) -> NodeDict:
    """One node of two: our name, their name and aliases among ours where they are new."""
    if ours is None:
        return out
    known = _names(ours)
    extra = [n for n in [theirs.get("name", ""), *theirs.get("aliases", [])]
             if n and not (_names(as_node_dict({"name": n})) & known)]
    return as_node_dict({**out, "name": ours["name"], "aliases": [*ours.get("aliases", []), *extra]})


def _names(node: NodeDict) -> set[str]:
    from narrative.delta.arbiter import key

    return {k for k in (key(n) for n in [node.get("name", ""), *node.get("aliases", [])]) if k}


def _joins(mine: set[str], other: set[str], node: Any) -> dict[str, str]:
    """Nodes both lines created under different ids for one name: their id -> ours.

    Two writers who each bring in "Lamp" (``lamp`` here, ``oil-lamp`` there) mean one
    lamp: the merge makes it one node, with our id and name (their name and aliases join
    ours as aliases), its other fields merged as for a node both created with one id,
    and every relation the other line pointed at theirs pointing at ours. A name (or
    alias, compared as the arbiter compares names) is matched only when exactly one
    node on each side carries it.
    """
    created_ours = {n: _names(found) for n in mine if node("base", n) is None
                    and node("theirs", n) is None and (found := node("ours", n)) is not None}
    created_theirs = {n: _names(found) for n in other if node("base", n) is None
                      and node("ours", n) is None and (found := node("theirs", n)) is not None}
    joins: dict[str, str] = {}
    for t, names in sorted(created_theirs.items()):
        ours = [o for o, theirs in created_ours.items() if theirs & names]
        rivals = [u for u, other_names in created_theirs.items() if other_names & names]
        if len(ours) == 1 and len(rivals) == 1 and ours[0] not in joins.values():
            joins[t] = ours[0]
    return joins


def _renamed(node: NodeDict, joins: dict[str, str]) -> NodeDict:
    out: dict[str, Any] = copy.deepcopy(dict(node))
    out["id"] = joins.get(out["id"], out["id"])
    out["relations"] = {rtype: {joins.get(dst, dst): attrs for dst, attrs in targets.items()}
                        for rtype, targets in out.get("relations", {}).items()}
    return as_node_dict(out)


def _stored(value: Any) -> Any:
    """A resolution as merge.json keeps it: ``{"value": ...}``, or ``{}`` for absent."""
    return value.get("value", ABSENT)


def _validate(wr: WorldRepo, head: Commit, finals: dict[str, NodeDict | None]) -> None:
    """The merged world must be valid where it changed: nodes, and relations to live nodes."""
    view = WorldView(wr, head.tree)
    problems: list[str] = []
    for node_id, node in sorted(finals.items()):
        if node is None:
            continue
        try:
            validate(node, f"node {node_id}")
        except InvalidWorldError as exc:
            problems.extend(exc.details or [exc.message])
            continue
        for rtype, targets in node.get("relations", {}).items():
            for dst in targets:
                alive = finals[dst] is not None if dst in finals else (
                    view.committed_path(dst) is not None)
                if not alive:
                    problems.append(f"node {node_id}: relation {rtype}->{dst} points at a node "
                                    "the merged world does not have")
    gone = [node_id for node_id, node in finals.items() if node is None]
    for src, rtype, dst in view.incoming(gone) if gone else []:
        if src in finals:
            continue  # the merged node's own relations were checked above
        problems.append(f"node {src}: relation {rtype}->{dst} points at a node the merge ends")
    if problems:
        raise ConflictError(f"the merged world would not be valid: {problems[0]}",
                            details=problems, hint="nothing was changed; resolve the conflicts "
                            "differently ({0}) or record an event on either branch first",
                            steps=[Step("resolve", cli="narr resolve ... --value")])


# --- the commands -----------------------------------------------------------------------


def _theirs(wr: WorldRepo, branch: str) -> Commit:
    """What to merge: a branch, a remote's branch as last fetched (``origin/main``), or any
    revision (a commit hash, an event id: the second parent of a plain ``git merge``)."""
    if branch.startswith("-"):
        raise InvalidInputError(f"{branch!r} is not a branch")
    ref = HEADS + branch if branch_exists(wr, branch) else (
        REMOTE_HEADS + branch if ref_exists(wr, REMOTE_HEADS + branch) else None)
    if ref is None:
        try:
            return resolve_rev(wr, branch)
        except NotFoundError:
            raise NotFoundError(f"no branch named {branch!r}",
                                hint="{0} lists them; a remote's branch is REMOTE/BRANCH "
                                     "after narr pull or git fetch",
                                steps=[Step("branches")]) from None
    tip = peel_commit(wr, ref)
    if tip is None:
        raise NotFoundError(f"branch {branch!r} points at no commit of this repository")
    return tip


def _keep_hand_edits(wr: WorldRepo, head: Commit, branch: str, incoming: set[str],
                     after: Callable[[str], NodeDict | None]) -> HandEdits:
    """The uncommitted hand edits, when the merge leaves every node they touch alone.

    ``incoming`` are the nodes the merge changes in the current world, ``after`` reads
    a node as the merged world will have it. Hand edits to other nodes stay what they
    are, working-tree changes the next event records (as ``git merge`` keeps changes
    to files it does not touch). Edits to a node the merge changes, a relation edited
    in that points at a node the merge ends, or a node deleted by hand that the merge
    points a relation at, are refused, naming the nodes: nothing is changed.
    """
    scan = scan_edits(wr, head.tree)
    if not scan.raw and not scan.problems:
        return scan
    odd = [p for p, oid in scan.raw.items() if oid == "not-a-file"]
    if odd or (scan.problems and not scan.raw):
        raise ConflictError(
            f"{odd[0] if odd else scan.problems[0]}: fix it before merging",
            details=odd or scan.problems, hint="{0} lists every problem", steps=[Step("status")])
    edited = set(scan.edits)
    for path in scan.raw:  # files that do not parse as nodes: the node their path names
        placed = parse_node_path(path, wr.config.layout)
        if placed is not None:
            edited.add(placed[1])
    clash = edited & incoming
    for e in scan.edits.values():
        if e.new is not None:
            for targets in e.new.get("relations", {}).values():
                if any(d in incoming and d not in edited and after(d) is None for d in targets):
                    clash.add(e.node_id)
        elif e.old is not None:
            pointing = [n for n in incoming if n not in edited
                        and any(e.node_id in t for t in ((after(n) or {}).get("relations") or {}
                                                         ).values())]
            if pointing:
                clash.add(e.node_id)
    if clash:
        names = sorted(clash)
        raise ConflictError(
            f"uncommitted hand edits to {', '.join(names)}: merging {branch} changes "
            f"{'that node' if len(names) == 1 else 'those nodes'} too; nothing was changed",
            details=[f"{n}: edited by hand and changed by the merge" for n in names],
            hint="record them with an event first ({0}), or set them aside ({1}; {2} after the "
                 "merge)",
            steps=[Step("event", cli="narr event ..."), Step("reset", {"rev": "HEAD", "hard": True},
                                                             cli="narr reset --hard HEAD"),
                   Step("restore_edits", {"which": "1"}, cli="narr edits restore 1")])
    return scan


def _after(wr: WorldRepo, head: Commit, plan: _Plan) -> Callable[[str], NodeDict | None]:
    view = WorldView(wr, head.tree)

    def read(node_id: str) -> NodeDict | None:
        if node_id in plan.finals:
            return plan.finals[node_id]
        found = view.committed_file(node_id)
        return found[1] if found is not None else None

    return read


def merge(wr: WorldRepo, branch: str, *, when: datetime | None = None) -> MergeResult:
    """Merge ``branch`` into the current one; raises ConflictError (state kept) on conflicts."""
    with writing(wr) as recovered:
        ref = wr.require_branch()
        if branch == wr.branch():
            raise NothingToDoError(f"{branch} is the current branch")
        theirs = _theirs(wr, branch)
        head = wr.head_commit()
        assert head is not None
        result = _Merging(branch, warnings=recovered)
        if is_ancestor(wr, theirs.id, head.id):
            raise NothingToDoError(f"already up to date: {branch} is part of this story line")
        if is_ancestor(wr, head.id, theirs.id):
            rec = theirs.record()
            after = WorldView(wr, theirs.tree)
            scan = _keep_hand_edits(wr, head, branch,
                                    changed_nodes(wr, head.tree, theirs.tree),
                                    lambda n: (after.committed_file(n) or (None, None))[1])
            result.kept_edits = sorted(scan.edits)
            move_head(wr, Move(
                ref=ref, old=head.id, new=theirs.id,
                message=f"narr merge: fast-forward to {branch}",
                updates=tuple(plan_move(wr, head.tree, theirs.tree, scan,
                                        keep_worktree=frozenset(scan.raw))),
                tree=theirs.tree,
            ))
            result.commit, result.fast_forward, result.record = theirs.id, True, rec
            return result.told()
        base = merge_base(wr, head.id, theirs.id)
        if base is None:
            raise ConflictError(f"{branch} shares no history with this story line; there is "
                                "nothing to merge from")
        plan = _plan(wr, base, head, theirs, {})
        scan = _keep_hand_edits(wr, head, branch,
                                set(plan.finals) | {c.node for c in plan.conflicts},
                                _after(wr, head, plan))
        result.kept_edits = sorted(scan.edits)
        if plan.conflicts:
            state = {"branch": branch, "ours": head.id, "theirs": theirs.id,
                     "base": base.id, "conflicts": [c.to_json(MERGE_SPELLING) for c in plan.conflicts],
                     "resolutions": {}}
            wr.private.save_merge_state(state)
            raise _conflict_error(branch, plan.conflicts)
        return _seal(wr, head, theirs, branch, plan, result, when).told()


def _conflict_error(branch: str, conflicts: list[FieldConflict]) -> ConflictError:
    n = len(conflicts)
    return ConflictError(
        f"merging {branch} stopped on {n} conflict{'s' if n != 1 else ''}; nothing was committed",
        conflicts=[c.to_json(MERGE_SPELLING) for c in conflicts],
        details=[c.line(MERGE_SPELLING) for c in conflicts],
        hint="{0} for each, then {1} (or {2})",
        steps=[_RESOLVE, Step("continue_merge"), Step("abort_merge")])


def conflict_line(c: dict[str, Any]) -> str:
    """The text line of a conflict as merge.json and ``--json`` spell it."""
    return FieldConflict.from_json(MERGE_SPELLING, c).line(MERGE_SPELLING)


def _seal(wr: WorldRepo, head: Commit, theirs: Commit, branch: str, plan: _Plan,
          result: _Merging, when: datetime | None) -> _Merging:
    _validate(wr, head, plan.finals)
    conflict_fields = [(c.node, c.field) for c in plan.conflicts]
    view = WorldView(wr, head.tree)
    diffusions: list[Change] = []
    for node_id, node in sorted(plan.finals.items()):
        found = view.committed_file(node_id)
        for ch in fields.node_changes(node_id, found[1] if found else None, node):
            resolved = any(n == node_id and _overlaps(f, ch.field) for n, f in conflict_fields)
            diffusions.append(ch.model_copy(update={"side": "resolved" if resolved else "theirs"}))
    when = when or now_utc()
    parent = last_record(head)
    other = last_record(theirs)
    record = EventRecord(
        kind="merge", id=new_event_id(), parent=parent.id if parent else None,
        content=f"Merge branch {branch}", diffusions=diffusions, created_at=iso(when),
        causes=[other.id] if other is not None else [], merged=branch,
        joined={j["theirs"]: j["ours"] for j in plan.joined},
        timestamp=carried_time(wr, head, theirs),
    )
    sealed = seal(view, plan.finals, record, when=when, merged=theirs)
    result.commit, result.record, result.joined = sealed.commit, record, plan.joined
    return result


def carried_time(wr: WorldRepo, head: Commit, theirs: Commit) -> str | None:
    """The story time the merged line brings: its events come, in the book, just before the
    merge, so when it set a time since the lines parted, that time is in force after the
    merge (None: it set none, or the one ours has already)."""
    from narrative.engine.clock import story_time

    found = story_time(wr, theirs.id)
    if found is None:
        return None
    base = merge_base(wr, head.id, theirs.id)
    since = found["since"]["commit"]
    if base is not None and is_ancestor(wr, since, base.id):
        return None  # set before the lines parted: ours holds it, or a later one
    ours = story_time(wr, head.id)
    return None if ours is not None and ours["value"] == found["value"] else str(found["value"])


def _require_state(wr: WorldRepo) -> dict[str, Any]:
    state = wr.private.merge_state()
    if state is None:
        raise NothingToDoError("no merge is in progress")
    return state


def conflicts(wr: WorldRepo) -> Conflicts:
    """The stopped merge: its branch and every conflict with the resolution chosen, if any."""
    state = _require_state(wr)
    rows = []
    for c in state["conflicts"]:
        res = state["resolutions"].get(resolution_key(c["node"], c["field"]))
        rows.append({**c, "resolved": res is not None,
                     **({"resolution": res["value"]} if res and "value" in res else {})})
    return Conflicts.model_validate({
        "branch": state["branch"], "ours": state["ours"], "theirs": state["theirs"],
        "base": state["base"], "conflicts": rows,
        "unresolved": sum(1 for r in rows if not r["resolved"])})


def resolve(wr: WorldRepo, node: str, field_: str, *, take: str | None = None,
            value: Any = ABSENT) -> Resolved:
    """Choose a conflict's outcome: ``take`` "ours" or "theirs", or an explicit ``value``.

    ``field_`` is a JSON pointer or the dotted form (``state.mood``), as every command
    takes a field (:func:`narrative.fields.parse_field`); ``""`` is the whole node.
    """
    field_ = fields.parse_field(field_)
    with writing(wr):
        state = _require_state(wr)
        found = [c for c in state["conflicts"] if c["node"] == node and c["field"] == field_]
        if not found:
            raise NotFoundError(f"no conflict on {node} {field_ or '(whole node)'}",
                                hint="{0} lists them", steps=[Step("conflicts")])
        c = found[0]
        if take in ("ours", "theirs"):
            chosen: dict[str, Any] = {"value": c[take]} if take in c else {}
        elif take is None and value is not ABSENT:
            chosen = {"value": value}
        else:
            raise InvalidInputError("say which: --ours, --theirs or --value JSON")
        state["resolutions"][resolution_key(node, field_)] = chosen
        wr.private.save_merge_state(state)
        return Resolved.model_validate(conflicts(wr).to_json())


def continue_merge(wr: WorldRepo, *, when: datetime | None = None) -> MergeResult:
    """Commit the stopped merge once every conflict is resolved."""
    with writing(wr) as recovered:
        state = _require_state(wr)
        wr.require_branch(merging=True)
        head = wr.head_commit()
        assert head is not None
        if head.id != state["ours"]:
            raise ConflictError("the story line moved since the merge stopped",
                                hint="{0}, then merge again", steps=[Step("abort_merge")])
        open_ = unresolved_conflicts(state)
        if open_:
            raise ConflictError(f"{len(open_)} conflict(s) are not resolved yet",
                                conflicts=open_, details=[conflict_line(c) for c in open_],
                                hint="{0}", steps=[_RESOLVE])
        theirs = peel_commit(wr, state["theirs"])
        base = peel_commit(wr, state["base"])
        if theirs is None or base is None:
            raise ConflictError("the commits of the stopped merge are gone from this repository",
                                hint="{0}, then merge again", steps=[Step("abort_merge")])
        plan = _plan(wr, base, head, theirs, state["resolutions"])
        scan = _keep_hand_edits(wr, head, state["branch"], set(plan.finals),
                                _after(wr, head, plan))
        missing = [c for c in plan.conflicts
                   if resolution_key(c.node, c.field) not in plan.resolved]
        if missing:  # the worlds are what they were, so this is only a damaged state file
            raise _conflict_error(state["branch"], missing)
        result = _Merging(state["branch"], warnings=recovered, kept_edits=sorted(scan.edits))
        _seal(wr, head, theirs, state["branch"], plan, result, when)
        wr.private.drop_merge_state()
        return result.told()


def abort(wr: WorldRepo) -> MergeAborted:
    """Forget the stopped merge; the world was never changed by it."""
    with writing(wr):
        state = _require_state(wr)
        wr.private.drop_merge_state()
        return MergeAborted(branch=state["branch"], aborted=True)


def parse_value(text: str) -> Any:
    """A resolution's ``--value``: JSON, or a bare word taken as a string."""
    try:
        return safejson.loads(text)
    except json.JSONDecodeError:
        if text and not text.lstrip().startswith(("{", "[", '"')):
            return text
        raise InvalidInputError(f"--value {text!r} is not valid JSON") from None

