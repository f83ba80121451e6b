"""``narr brief``: what a writer (or a model) needs in hand before the next event, within a budget.

The pack is deterministic: the same world and the same question give the same
items in the same order, each with the ``reason`` it is there. In order of
priority: hand edits not yet recorded (they override the history), the nodes marked
``always_in_view`` (a lorebook's constant entries, the rules of the world), the focus
nodes (given, or named in the goal as ``narr event`` finds names), each with its
traits (the baseline a writer keeps: voice, temperament, powers) before its state,
the last events, the chapters far behind by their summaries (those that set up a thread
still open first, saying which), continuity facts (who is dead: every dead character a focus node
relates to or the last events name; where the characters around them are, what they
hold, which secrets they know), the open threads (those about the focus first, then
the longest untouched), then the focus nodes' neighbourhood in the world graph
ranked by distance, then by how recently an event changed them, and failed events
waiting for a retry. The world graph's edges are the relations and the reference
fields (``state.location``, ``state.holder`` and those the world declares): who
stands at a place is next to it. Before all of these, a brief of the present (not
``at`` a past revision, not from a point of view) leads with its health: what would
stop the next event or make the history unexplained, each with the command that
fixes it (hand-edited files that are broken, a merge or a git operation in progress,
plain git commits on top of the last event, a write a crash interrupted). Only what
is cheap to know: never the walk over the whole history that ``narr check`` does.
Items are taken in that order while they fit the budget (characters of text); those
that do not fit are counted, never cut in half.

The story time shown is the one in force: the last one set on the story line, for
the head and for each event (an event told without one happened under the time
before it).

Without a goal or focus, the focus is what the last events changed: where the
story stands. With ``at``, the pack is the story as it stood at that revision:
the world of its commit (no hand edits), the events up to it, the threads as
they were, no health and no failed events. With ``pov``, the pack keeps to what that
character can know (:mod:`narrative.engine.pov` sets the rules): itself whole; who and
what stands with it now, from outside (no inner field: plan, mood, goal...; nothing
hidden); whom and what its relations point at, by who they are, not where they are or
how they stand; what it ``knows``; the events it took part in or witnessed (where it
stood then, from the records; being named is not witnessing; it looks back at most
``POV_SCAN`` events), each in its words only when they tell nothing it does not know,
else as the changes it could have seen; who else knows a secret only where it could know
that. Every node is shown as :meth:`~narrative.engine.pov.Sight.seen` gives it, every item,
the head included, is held to :meth:`~narrative.engine.pov.Sight.clean` before it is
given, and no reason says when a node last changed (that would tell of events it did not
see). Threads are the writer's plan, never in a point of view.

Everything is read through the catalog (the neighbourhood is a walk over its
edge and reference tables, the recent events a page of its chain), with the hand
edits laid over it, so the cost follows what the pack holds, not the size of the world.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Annotated, Any, ClassVar

from narrative import fields
from narrative.answers import MAYBE, MAYBE_OR_NULL, Answer, Said, Shape
from narrative.diffusers.context import find_mentions
from narrative.engine.eventgraph import tip_of
from narrative.engine.threads import THREAD_KINDS
from narrative.errors import ConflictError, InvalidInputError, NotFoundError, Step
from narrative.ids import check_id, parse_node_path
from narrative.nodefile import NodeDict, edges_of
from narrative.shapes import EventRef
from narrative.store import (
    EventInfo,
    NodeRow,
    WorldRepo,
    WorldView,
    Write,
    finish_interrupted,
    peel_commit,
    scan_for_reader,
)

DEFAULT_BUDGET = 4000
RECENT = 5
RECENT_CHAPTERS = 2  # chapters this near are told by their events; those before, by summaries
RADIUS = 2
MAX_NEIGHBOURS = 30
POV_SCAN = 500  # a point of view looks this far back for the events it knows of
WITHHELD = "words withheld"


class BriefEvent(Shape):
    """An event a brief shows; ``content`` None and ``withheld`` when the point of view does not
    know its words."""

    id: str | None
    commit: str
    content: str | None
    withheld: Annotated[bool | None, MAYBE] = None


class BriefHead(EventRef):
    """The event the story stands at; ``withheld`` when the point of view does not know it."""

    withheld: Annotated[bool | None, MAYBE] = None


class BriefChapter(Shape):
    """The chapter a brief's summary item stands for."""

    number: int
    commit: str


class BriefItem(Shape):
    """One line of the brief: the node or event it is about, or the fix of a health warning."""

    section: str
    reason: str
    text: str
    node: Annotated[str | None, MAYBE] = None
    event: Annotated[BriefEvent | None, MAYBE] = None
    fix: Annotated[Said | None, MAYBE_OR_NULL] = None
    """What fixes a health warning, its steps worded by the door that sends it."""
    chapter: Annotated[BriefChapter | None, MAYBE] = None


class Brief(Answer):
    """The pack of world state to write or play the next event from, within ``budget``
    characters (``used`` of them; ``dropped`` items left out): each item names its ``section``
    and why it is there. ``story_time`` is the time in force at ``head``; ``language`` the
    world's, in which the Markdown form is labelled."""

    NAME: ClassVar[str] = "brief"
    VERSION: ClassVar[int] = 2  # 2: what chapters add (a chapter's record, where an event was told)

    goal: str | None
    pov: str | None
    at: str | None
    budget: int
    used: int
    dropped: int
    head: BriefHead | None
    story_time: str | None
    focus: list[str]
    items: list[BriefItem]
    language: str

    def to_markdown(self) -> str:
        """The brief as Markdown, labelled in the world's language."""
        return render_markdown(self.to_json())


# The words a brief shows around the items, by the world's language (narr.toml ``language``):
# a writer working in Chinese reads 健康状况, not "health". Items keep their own text; a
# section's key in JSON stays the English one, which programs match.
LABELS: dict[str, dict[str, str]] = {
    "en": {"title": "Brief: {goal}", "untitled": "Brief: where the story stands", "at": "Story at {head}",
           "as_of": " (as it stood at {at})", "pov": "; point of view: {pov}", "focus": "; focus: {focus}",
           "fix": "fix", "size": "{used} of {budget} characters", "left_out": "; {n} more left out",
           "no_events": "no events yet"},
    "zh": {"title": "简报：{goal}", "untitled": "简报：故事现状", "at": "故事进行到 {head}",
           "as_of": "（{at} 时的样子）", "pov": "；视角：{pov}", "focus": "；焦点：{focus}",
           "fix": "修正", "size": "{used} / {budget} 字符", "left_out": "；另有 {n} 条未列出",
           "no_events": "尚无事件"},
}
SECTIONS_ZH = {"health": "健康状况", "hand edits": "手工修改", "always in view": "始终在场",
               "focus": "焦点", "events": "事件", "continuity": "连贯", "failed": "失败的事件",
               "neighbourhood": "相关节点", "open threads": "未解线索", "chapters": "前情"}


def words_for(language: str | None) -> dict[str, str]:
    """The brief's labels for a world's language: Chinese for ``zh`` (``zh-CN``...), else English."""
    code = (language or "en").lower()
    return LABELS["zh"] if code.startswith("zh") else LABELS["en"]


def section_label(section: str, language: str | None) -> str:
    """A section's heading: its key in English, its name in Chinese."""
    return SECTIONS_ZH.get(section, section) if words_for(language) is LABELS["zh"] else section


def head_text(head: dict[str, Any] | None, story_time: str | None = None,
              language: str | None = None) -> str:
    """``0a1b2c3d4e The last event [Day 3, dusk]``: the head and the time in force."""
    if head is None:
        return words_for(language)["no_events"]
    if head.get("withheld"):
        text = f"{str(head['commit'])[:10]} ({WITHHELD})"
    else:
        text = f"{str(head['commit'])[:10]} {head['content'].splitlines()[0] if head['content'] else ''}"
    return text + (f" [{story_time}]" if story_time else "")


def render_markdown(d: dict[str, Any]) -> str:
    """The brief dict as Markdown: where the story stands, then one section per part of the
    pack, each item a bullet with its reason in italics."""
    language = d.get("language")
    said = words_for(language)
    title = said["title"].format(goal=d["goal"]) if d.get("goal") else said["untitled"]
    lines = [f"# {title}", ""]
    where = said["at"].format(head=head_text(d["head"], d.get("story_time"), language))
    if d.get("at"):
        where += said["as_of"].format(at=d["at"])
    if d.get("pov"):
        where += said["pov"].format(pov=d["pov"])
    if d.get("focus"):
        where += said["focus"].format(focus=", ".join(d["focus"]))
    lines.append(where + ("。" if said is LABELS["zh"] else "."))
    section = None
    for item in d["items"]:
        if item["section"] != section:
            section = item["section"]
            name = section_label(section, language)
            lines += ["", f"## {name[:1].upper()}{name[1:]}", ""]
        line = f"- {item['text']} *({item['reason']})*"
        if item.get("fix"):
            fix = said["fix"]
            line += f" {fix[:1].upper()}{fix[1:]}: `{item['fix']}`"
        lines.append(line)
    tail = said["left_out"].format(n=d["dropped"]) if d["dropped"] else ""
    lines += ["", said["size"].format(used=d["used"], budget=d["budget"]) + tail + ".", ""]
    return "\n".join(lines)


def _value(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)


def node_line(node: NodeDict, name_of: Any, can_see: Any = None, *, traits: bool = False,
              edge_ok: Callable[[str, str, str], bool] | None = None,
              keep: Callable[[str], bool] | None = None) -> str:
    """One line that says what a node is and how it stands (relations to what ``can_see``,
    or the edges ``edge_ok`` lets through); ``traits`` puts its traits before its state.
    ``keep`` leaves out any trait, state field or relation whose words it refuses."""
    head = f"{node.get('name', '')} ({node.get('id')}, {node.get('layer')}"
    head += f"/{node['kind']})" if node.get("kind") else ")"
    summary = str(node.get("summary", "")).strip().rstrip(".")
    parts = [head + (f": {summary}" if summary else "")]
    sections = [("traits", node.get("traits") or {})] if traits else []
    sections.append(("state", node.get("state") or {}))
    for key, part in sections:
        values = [f"{k}={_value(v)}" for k, v in sorted(part.items())]
        values = [v for v in values if keep is None or keep(v)]
        if values:
            parts.append(f"{key}: " + ", ".join(values))
    rels: dict[str, list[str]] = {}
    for rtype, dst in edges_of(node):
        if edge_ok is not None and not edge_ok(str(node.get("id")), rtype, dst):
            continue
        if can_see is not None and not can_see(dst):
            continue
        name = name_of.get(dst, dst)
        if keep is None or keep(f"{rtype} {name}"):
            rels.setdefault(rtype, []).append(name)
    if rels:
        parts.append("relations: " + "; ".join(f"{t} {', '.join(sorted(d))}"
                                                for t, d in sorted(rels.items())))
    return ". ".join(parts) + "."


class _Pack:
    def __init__(self, budget: int, clean: Callable[..., bool] | None = None) -> None:
        self.budget = budget
        self.items: list[dict[str, Any]] = []
        self.dropped = 0
        self.used = 0
        self.seen: set[tuple[str, str]] = set()
        self.clean = clean  # a point of view: what an item may not say

    def add(self, section: str, reason: str, text: str, **extra: Any) -> None:
        key = (section, text)
        if key in self.seen:
            return
        self.seen.add(key)
        if self.clean is not None and not self.clean(
                text, reason, (extra.get("event") or {}).get("content"), extra.get("fix")):
            return  # it would tell the point of view what it does not know
        if self.used + len(text) > self.budget:
            self.dropped += 1
            return
        self.used += len(text)
        self.items.append({"section": section, "reason": reason, "text": text, **extra})


def brief(wr: WorldRepo, goal: str | None = None, focus: list[str] | tuple[str, ...] = (),
          budget: int = DEFAULT_BUDGET, pov: str | None = None, *,
          view: WorldView | None = None, include_failed: bool = True,
          at: str | None = None) -> Brief:
    """The pack for the next event. ``view``: the edited world to read (an event running
    passes its own, so the pack sees what the event sees); by default HEAD and the hand
    edits found on disk. ``at``: the pack as the story stood at that revision or event
    (its committed world, no hand edits, no health, no failed events)."""
    if budget < 1:
        raise InvalidInputError("--budget must be at least 1 character")
    for node_id in [*focus, *([pov] if pov else [])]:
        check_id(node_id)
    present = at is None and view is None
    note = finish_interrupted(wr) if present else None
    head = tip_of(wr, at)
    if head is None:
        raise NotFoundError("the story has no events yet")
    tip = head.id
    cache = wr.catalog
    if view is None:
        view = WorldView(wr, head.tree, None if at is not None
                         else scan_for_reader(wr, head.tree))
    edits = view.hand
    for node_id in [*focus, *([pov] if pov else [])]:
        if not view.exists(node_id):
            raise NotFoundError(f"no node {node_id!r} in the world",
                                hint="{0} lists the nodes", steps=[Step("list_nodes")])
    names = _Names(view)
    recent = _Recent(wr, tip)
    labels = wr.config.reference_labels
    clock = _Clock(wr, recent)

    eye = None
    if pov is not None:
        from narrative.engine import pov as povs

        eye = povs.sight(wr, view, tip, pov, labels)

    def can_see(node_id: str) -> bool:
        return eye is None or eye.can_see(node_id)

    def edge_ok(src: str, rtype: str, dst: str) -> bool:
        return eye is None or eye.edge_visible(src, rtype, dst)

    keep = eye.clean if eye is not None else None

    def look(node_id: str) -> NodeDict | None:
        """The node as the pack may show it: all of it, or as the point of view sees it."""
        return view.get(node_id) if eye is None else eye.seen(node_id)
    graph = _Graph(view, labels, edge_ok)

    reasons: dict[str, str] = {}
    if focus:
        for node_id in focus:
            reasons.setdefault(node_id, "asked for with --focus")
    if goal:
        for m in find_mentions(view, goal):
            for node_id in m.ids:
                reasons.setdefault(node_id, f"named in the goal as {m.text!r}")
    if not goal and not focus:
        for e in recent.first(3):
            if eye is not None and not (eye.knows_of(e, recent.writes_of(e))
                                        and eye.may_tell(e, recent.writes_of(e))):
                continue
            for w in recent.writes_of(e):
                if view.exists(w.target) and (eye is None or eye.field_seen(w.target, w.field)):
                    reasons.setdefault(w.target, f"changed by the recent event {e.content!r}")
    if pov is not None:
        assert eye is not None
        reasons.setdefault(pov, "the point of view")
        loc = ((view.get(pov) or {}).get("state") or {}).get("location")
        for node_id in sorted(eye.present):
            node = eye.seen(node_id)
            if node is not None and (node.get("state") or {}).get("location") == loc:
                reasons.setdefault(node_id, f"at {names.get(str(loc), loc)}, where {pov} is")
        for node_id in sorted(eye.acted_on):
            reasons.setdefault(node_id, f"{pov} acted on them")
    focus_ids = [n for n in reasons if can_see(n)]

    pack = _Pack(budget, eye.clean if eye is not None else None)
    if present and pov is None:
        for text, reason, fix in _health(wr, head, view, recent, note):
            pack.add("health", reason, text, fix=fix)
    for node_id in sorted(edits.edits):
        hand = edits.edits[node_id]
        if not can_see(node_id):
            continue
        for ch in fields.node_changes(node_id, hand.old, hand.new):
            if eye is not None and not eye.field_seen(node_id, ch.field):
                continue
            d = ch.model_dump(mode="json")
            old = json.dumps(d["old_value"], ensure_ascii=False) if "old_value" in d else "(absent)"
            new = json.dumps(d["new_value"], ensure_ascii=False) if "new_value" in d else "(absent)"
            pack.add("hand edits", "a hand edit not yet recorded: it overrides the history",
                     f"{node_id} {ch.field}: {old} → {new}", node=node_id)

    in_view = [n for n in view.ids_in_view() if n not in focus_ids and _may_see(view, n, eye)]
    names.want(in_view)
    for node_id in in_view:
        node = view.get(node_id) if eye is None else (eye.seen(node_id) or eye.lore(node_id))
        if node is not None:
            names.want(d for _, d in edges_of(node))
            pack.add("always in view", "marked always_in_view: in every brief",
                     node_line(node, names, can_see, edge_ok=edge_ok, keep=keep), node=node_id)

    neighbours = _neighbourhood(graph, cache, tip, recent.head_seq, focus_ids, can_see)
    names.want([*focus_ids, *(n for n, _, _ in neighbours)])
    for node_id in focus_ids:
        node = look(node_id)
        if node is not None:
            names.want(d for _, d in edges_of(node))
            pack.add("focus", reasons[node_id], node_line(
                node, names, can_see, traits=True, edge_ok=edge_ok, keep=keep), node=node_id)

    shown: list[EventInfo] = []
    told: list[EventInfo] = []  # those given in their own words
    for e in recent.events(scan=None if eye is None else POV_SCAN):
        if len(shown) >= RECENT or e.kind == "genesis":
            break
        if e.kind == "chapter":
            continue  # a chapter's own commit: its events are the story, its summary is below
        writes = recent.writes_of(e)
        if eye is not None and not eye.knows_of(e, writes):
            continue
        shown.append(e)
        when = clock.at(e)
        when_text = f" [{when}]" if when and (eye is None or eye.clean(when)) else ""
        if eye is None or eye.may_tell(e, writes):
            told.append(e)
            pack.add("events", "one of the last events" if eye is None
                     else f"one of the last events {pov} knows of", f"{e.content}{when_text}",
                     event={"id": e.id, "commit": e.commit, "content": e.content})
            continue
        names.want(w.target for w in writes)
        seen = eye.seen_changes(writes, names)
        what = "; ".join(seen) if seen else f"nothing {pov} could see changed"
        pack.add("events", f"one of the last events {pov} knows of: its words would tell "
                           f"{pov} what {pov} does not know",
                 f"{e.commit[:10]} ({WITHHELD}): {what}{when_text}",
                 event={"id": e.id, "commit": e.commit, "content": None, "withheld": True})

    if eye is None:  # a chapter's summary tells what no point of view may know
        _chapters(pack, wr, head, view, names)

    characters = [n for n in [*focus_ids, *(n for n, _, _ in neighbours)]
                  if names.layer(n) == "character"]
    _the_dead(pack, view, names, graph, recent, shown, told, focus_ids, characters, can_see, look)
    for node_id in characters:
        node = look(node_id)
        if node is None:
            continue
        names.want(d for _, d in edges_of(node))
        for reason, text in _facts(node, names, can_see, edge_ok):
            pack.add("continuity", reason, text, node=node_id)

    if eye is None:  # threads are the writer's plan: no character can know them
        _threads(pack, wr, head, view, names, focus_ids)

    for node_id, dist, ago in neighbours:
        if names.kind(node_id) in THREAD_KINDS:
            continue  # in "open threads" already, with what moves them
        node = look(node_id)
        if node is None:
            continue
        when_changed = "never changed by an event" if ago is None else (
            "changed by the last event" if ago == 0 else f"changed {ago} events ago")
        far = f"{dist} relation{'s' if dist > 1 else ''} from the focus"
        names.want(d for _, d in edges_of(node))
        pack.add("neighbourhood", far if eye is not None else f"{far}, {when_changed}",
                 node_line(node, names, can_see, edge_ok=edge_ok, keep=keep), node=node_id)

    # looked at before importing what reads them (pydantic)
    if include_failed and at is None and eye is None and wr.private.has_failed():
        from narrative.engine import failed

        for f in failed.listing(wr):
            pack.add("failed", "an event that failed and waits for narr failed retry",
                     f"{f['content']}: {f['error']}")
    first = recent.first(1)
    head_json = first[0].to_json() if first else None
    story_time = clock.at(first[0]) if first else None
    if eye is not None and head_json is not None:
        writes = recent.writes_of(first[0])
        if not (eye.knows_of(first[0], writes) and eye.may_tell(first[0], writes)):
            head_json = {**head_json, "content": "", "withheld": True}
        if not eye.clean(story_time):
            story_time = None
    return Brief.model_validate({
        "goal": goal, "pov": pov, "at": at, "budget": budget,
        "used": sum(len(i["text"]) for i in pack.items), "dropped": pack.dropped,
        "head": head_json, "story_time": story_time, "focus": focus_ids, "items": pack.items,
        "language": wr.config.language})


def _may_see(view: WorldView, node_id: str, eye: Any) -> bool:
    """An always-in-view node in a point of view: a rule of the world is, a secret the
    character does not know and the writer's threads are not."""
    if eye is None or eye.can_see(node_id):
        return True
    node = view.get(node_id)
    return (node is not None and node.get("kind") != "secret" and node.get("kind") not in THREAD_KINDS
            and node_id not in eye.unknown_secrets)


def _edit_command(wr: WorldRepo, problem: str) -> str:
    """``narr edit NODE`` for a problem that starts with a node file's path."""
    placed = parse_node_path(problem.split(":", 1)[0], wr.config.layout)
    return f"narr edit {placed[1]}" if placed else "fix the file by hand (narr status names it)"


PLAIN_SCAN = 64  # plain commits looked through for the last event before HEAD


def _health(wr: WorldRepo, head: Any, view: WorldView, recent: _Recent,
            note: str | None) -> list[tuple[str, str, str | None]]:
    """``(text, reason, fix)`` of what stops the next event or leaves the history unexplained,
    from what is cheap to know: the hand edits already scanned, state files, a page of the chain."""
    out: list[tuple[str, str, str | None]] = []
    if note:
        out.append((note, "a write a crash interrupted, finished (or dropped) just now",
                    None))
    try:
        wr.require_no_git_operation(merging=True)
    except ConflictError as exc:
        out.append((exc.message, "git is half-way through an operation: no event can be "
                                 "recorded until it is finished or aborted",
                    Said.of_error(exc, "") if exc.hint_template else None))
    state = wr.private.merge_state()
    if state is not None:
        from narrative.store import unresolved_conflicts

        left = unresolved_conflicts(state)
        out.append((f"a narr merge of {state.get('branch')} stopped on conflicts: "
                    f"{len(left)} of {len(state.get('conflicts') or [])} unresolved",
                    "no event can be recorded until the merge goes on (narr resolve NODE FIELD "
                    "for each conflict, then narr merge --continue) or is dropped (narr merge "
                    "--abort)", Said.of("{0}", Step("conflicts"))))
    for problem in view.hand.problems:
        out.append((problem, "a hand-edited file narr cannot read: the next event refuses "
                             "until it is fixed", _edit_command(wr, problem)))
    if view.hand.edits:
        from narrative.engine.status_data import hand_edit_problems

        dangling = hand_edit_problems(wr, head.tree, view.hand)
    else:
        dangling = []
    for problem in dangling:
        out.append((problem, "a hand edit relates to a node that does not exist: the next "
                             "event refuses it", _edit_command(wr, problem)))
    plain: list[EventInfo] = []
    for e in recent.events(scan=PLAIN_SCAN):
        if e.kind != "commit":
            last = peel_commit(wr, e.commit)
            if plain and last is not None and \
                    wr.world_tree_id(head.tree) != wr.world_tree_id(last.tree):
                merges = [c for c in plain if (m := peel_commit(wr, c.commit)) is not None
                          and m.is_merge]
                n = len(plain)
                what = ("is a plain git commit that changes" if n == 1 else
                        f"and the {'commit' if n == 2 else f'{n - 1} commits'} under it are "
                        "plain git commits that change")
                its = "its" if n == 1 else "their"
                text = (f"HEAD {head.id!s:.10} {plain[0].content!r} {what} world/ after the last "
                        f"event {e.commit[:10]} {e.content!r}")
                if merges:
                    out.append((text, "a plain git merge no event explains: narr check says "
                                      "how to make it a merge event", "narr check"))
                else:
                    out.append((text, f"no event explains {its} changes: adopting makes them "
                                      "hand edits again, which the next event records",
                                "narr adopt"))
            break
        plain.append(e)
    return out


def _chapters(pack: _Pack, wr: WorldRepo, head: Any, view: WorldView, names: _Names) -> None:
    """The far chapters, each by its summary: those that set up a thread still open first
    (oldest first: what was planted longest ago is what a writer forgets), then the rest,
    newest first. The last few chapters are told by the recent events instead."""
    from narrative.engine.chapters import chapters_on_line
    from narrative.engine.threads import read_threads

    listed = chapters_on_line(wr, head.id, merged=True)
    far = listed[:-RECENT_CHAPTERS] if len(listed) > RECENT_CHAPTERS else []
    if not far:
        return
    found, _ = read_threads(wr, head, view)
    open_ = {t.id for t in found if not t.resolved}
    names.want(n for c in far for n in c.row.nodes if n in open_)
    planted = [(c, [n for n in c.row.nodes if n in open_]) for c in far]
    first = [(c, left) for c, left in planted if left]
    rest = [(c, left) for c, left in reversed(planted) if not left]
    zh = words_for(wr.config.language) is LABELS["zh"]
    for c, left in [*first, *rest]:
        info = c.to_json()
        text = f"{info['heading']}: {c.row.summary}"
        if left:
            threads = ", ".join(names.get(n, n) for n in left)
            text += f" 未解：{threads}。" if zh else f" Left open: {threads}."
        pack.add("chapters", "a chapter far behind, by its summary" + (
            ": it set up threads still open" if left else ""), text,
            chapter={"number": c.number, "commit": c.commit})


def _threads(pack: _Pack, wr: WorldRepo, head: Any, view: WorldView, names: _Names,
             focus: list[str]) -> None:
    """Open threads: those about the focus first, then the rest, stalest first."""
    from narrative.engine.threads import describe, moved_text, read_threads

    found, _ = read_threads(wr, head, view)
    open_ = [t for t in found if not t.resolved]
    names.want(d for t in open_ for d in [*t.waiting_on, *t.concerns])
    wanted = set(focus)
    about = [t for t in open_ if t.id in wanted or wanted & set(t.concerns)]
    for t in [*about, *(t for t in open_ if t not in about)]:
        near = [names.get(n, n) for n in t.concerns if n in wanted]
        reason = (f"an open thread about {', '.join(near)}, " if near
                  else "an open thread, ") + moved_text(t)
        pack.add("open threads", reason, describe(t, lambda i: names.get(i, i)), node=t.id)


class _Names:
    """Node names (and layers, kinds) of the edited world, fetched from the catalog as needed."""

    def __init__(self, view: WorldView) -> None:
        self.view = view
        self.rows: dict[str, NodeRow | None] = {}

    def want(self, ids: Any) -> None:
        missing = [i for i in dict.fromkeys(ids) if i not in self.rows]
        if missing:
            found = self.view.rows_of(missing)
            for i in missing:
                self.rows[i] = found.get(i)

    def _row(self, node_id: str) -> NodeRow | None:
        self.want([node_id])
        return self.rows[node_id]

    def get(self, node_id: str, default: Any = None) -> Any:
        row = self._row(node_id)
        return row.name if row is not None and row.name else default

    def layer(self, node_id: str) -> str | None:
        row = self._row(node_id)
        return row.layer if row else None

    def kind(self, node_id: str) -> str | None:
        row = self._row(node_id)
        return row.kind if row else None


class _Recent:
    """The story line's commits, newest first, read from the catalog a page at a time."""

    PAGE = 64

    def __init__(self, wr: WorldRepo, tip: str) -> None:
        self.wr = wr
        self.tip = tip
        self.loaded: list[EventInfo] = []
        self.done = False

    def _more(self) -> None:
        rows = self.wr.catalog.graph.chain_events(self.tip, limit=len(self.loaded) + self.PAGE)
        self.done = len(rows) < len(self.loaded) + self.PAGE
        self.loaded = rows

    def first(self, n: int) -> list[EventInfo]:
        while len(self.loaded) < n and not self.done:
            self._more()
        return self.loaded[:n]

    def events(self, scan: int | None = None) -> Any:
        k = 0
        while True:
            if k >= len(self.loaded):
                if self.done or (scan is not None and k >= scan):
                    return
                self._more()
                if k >= len(self.loaded):
                    return
            yield self.loaded[k]
            k += 1

    @property
    def head_seq(self) -> int:
        first = self.first(1)
        return first[0].seq if first else 0

    def writes_of(self, e: EventInfo) -> list[Write]:
        return self.wr.catalog.graph.commit_writes(e.commit, e.seq)


class _Clock:
    """The story time in force at each event: its own story time, else the last one before it."""

    def __init__(self, wr: WorldRepo, recent: _Recent) -> None:
        self.wr = wr
        self.recent = recent
        self.any = wr.catalog.graph.story_time(recent.tip) is not None  # one query: most worlds have none
        self.known: dict[str, str | None] = {}

    def at(self, e: EventInfo) -> str | None:
        if not self.any:
            return None
        if e.commit not in self.known:
            found = None
            for older in self.recent.loaded[self.recent.loaded.index(e):] if e in self.recent.loaded else []:
                if older.timestamp:
                    found = older.timestamp
                    break
            else:
                row = self.wr.catalog.graph.story_time(e.commit)
                found = row.value if row else None
            self.known[e.commit] = found
        return self.known[e.commit]


class _Graph:
    """The world graph's edges around some nodes: relations both ways and reference fields
    both ways (``lin-yuan -at-> ferry``), those a point of view could not know left out."""

    def __init__(self, view: WorldView, labels: dict[str, str],
                 edge_ok: Callable[[str, str, str], bool]) -> None:
        self.view = view
        self.labels = labels
        self.edge_ok = edge_ok

    def edges(self, ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """``(source, type or label, target)`` touching ``ids``, either way."""
        frontier = set(ids)
        found = [*self.view.outgoing(frontier), *self.view.incoming(frontier)]
        refs = [*self.view.references_from(frontier, self.labels),
                *self.view.references_to(frontier, self.labels)]
        found += [(r.src, self.labels[r.field], r.dst) for r in refs]
        return [(a, t, b) for a, t, b in sorted(set(found)) if self.edge_ok(a, t, b)]

    def neighbours(self, ids: Iterable[str]) -> set[str]:
        frontier = set(ids)
        out: set[str] = set()
        for a, _, b in self.edges(frontier):
            out.add(b if a in frontier else a)
        return out


def _neighbourhood(graph: _Graph, cache: Any, tip: str, newest: int, focus: list[str],
                   can_see: Any) -> list[tuple[str, int, int | None]]:
    """``(node, distance, events since it last changed)``, nearest and freshest first.

    A breadth-first walk over relations and reference fields both ways, through the
    catalog (hand edits laid over it), so it reads only the nodes it reaches.
    """
    view = graph.view
    dist: dict[str, int] = {f: 0 for f in focus}
    frontier = set(focus)
    for d in range(1, RADIUS + 1):
        if not frontier:
            break
        reached = graph.neighbours(frontier)
        frontier = {n for n in reached if n not in dist}
        for n in frontier:
            dist[n] = d
    found = {n: d for n, d in dist.items() if d > 0 and can_see(n)}
    alive = view.rows_of(list(found))
    found = {n: d for n, d in found.items() if n in alive}
    last = cache.graph.last_writes(tip, found)
    rows = [(n, d, newest - last[n].seq if n in last else None) for n, d in found.items()]
    rows.sort(key=lambda r: (r[1], r[2] if r[2] is not None else 1 << 30, r[0]))
    return rows[:MAX_NEIGHBOURS]


def is_dead(node: NodeDict | None) -> bool:
    """Whether a character is dead, by the conventions narr's rules keep (``state.health``
    "dead"; ``alive`` false and ``status`` "dead" too, as writers also spell it)."""
    state = (node or {}).get("state") or {}
    return state.get("health") == "dead" or state.get("alive") is False or state.get("status") == "dead"


def _the_dead(pack: _Pack, view: WorldView, names: _Names, graph: _Graph, recent: _Recent,
              shown: list[EventInfo], told: list[EventInfo], focus: list[str], near: list[str],
              can_see: Any, look: Callable[[str], NodeDict | None]) -> None:
    """"Who is dead": every dead character a focus node relates to (either way, references
    too), that the last events changed or named (``told``: those whose words the pack
    gives), or that is near the focus."""
    wanted: list[str] = [*focus, *sorted(graph.neighbours(focus)), *near]
    for e in shown:
        wanted += [w.target for w in recent.writes_of(e)]
    for e in told:
        wanted += [i for m in find_mentions(view, e.content) for i in m.ids]
    rows = view.rows_of(list(dict.fromkeys(wanted)))
    for node_id in dict.fromkeys(wanted):
        row = rows.get(node_id)
        if row is None or row.layer != "character" or not can_see(node_id):
            continue
        node = look(node_id)
        if is_dead(node):
            pack.add("continuity", "continuity: who is dead",
                     f"{(node or {}).get('name') or node_id} is dead", node=node_id)


def _facts(node: NodeDict, name_of: Any, can_see: Any,
           edge_ok: Callable[[str, str, str], bool]) -> list[tuple[str, str]]:
    node_id = str(node.get("id", ""))
    name = node.get("name", node_id)
    state = node.get("state") or {}
    out = []
    loc = state.get("location")
    if isinstance(loc, str):
        out.append(("continuity: where everyone is", f"{name} is at {name_of.get(loc, loc)}"))
    rels = node.get("relations") or {}
    held = sorted(name_of.get(d, d) for d in rels.get("holds", {})
                  if can_see(d) and edge_ok(node_id, "holds", d))
    if held:
        out.append(("continuity: who holds what", f"{name} holds {', '.join(held)}"))
    known = sorted(name_of.get(d, d) for d in rels.get("knows", {})
                   if can_see(d) and edge_ok(node_id, "knows", d))
    if known:
        out.append(("continuity: who knows what", f"{name} knows {', '.join(known)}"))
    return out
