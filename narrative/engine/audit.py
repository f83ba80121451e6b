"""``narr audit``: does a chapter draft contradict the world it is written against?

A chapter is read in order, one sentence at a time, each sentence simulated as a
dry-run ``rules`` event on an in-memory copy of the world (the world at HEAD
with the user's hand edits, or the world at ``--at REV``): its realis clauses
fire rules, exactly as ``narr event`` would (what did not happen, "if", "did not",
"Old Zhou claims", changes nothing), and the operations the engine would accept
are laid over the copy, so later sentences see what earlier ones did. Nothing is
written: the repository, its refs and the working tree are left as they are.

Before each firing its rule's preconditions (``require`` in the rule files) are
checked against the copy as the chapter has left it; every one the copy
contradicts is a *finding*: a dead character acting, a gift of something the
giver does not hold, a secret told by someone who does not know it, a departure
from a place the character is not at. An action that only changes state ("Su
Qing takes the ring") is no contradiction. The chapter is simulated whole even
after a finding, with the words taken as true, so one slip is reported once and
not again in every sentence that follows from it.

The sentences the chapter has read so far are the "recent events" the rules
resolve "he" and a dropped subject against, as consecutive events would be.
The rules are the world's rule files as they are now, also with ``--at``: the
chapter is checked against the world then, by the rules the author has now.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative import fields
from narrative.delta.draft import Draft
from narrative.delta.request import EventRequest
from narrative.delta.screen import review
from narrative.diffusers import clauses
from narrative.diffusers.rulefile import load_rule_set
from narrative.diffusers.rules import RulesDiffuser
from narrative.engine.eventgraph import tip_of
from narrative.errors import InvalidInputError, NotFoundError
from narrative.store import worktree
from narrative.store.view import WorldView
from narrative.store.worldrepo import WorldRepo

if TYPE_CHECKING:
    from narrative.store.objects import Tree

MAX_CHAPTER = 1_000_000  # characters: a novel's chapter is a few tens of thousands


@dataclass(frozen=True)
class Finding:
    """One action of the chapter whose precondition the world, at that point, contradicts."""

    sentence: str
    number: int  # 1-based: which sentence of the chapter
    words: str  # the words that fired the rule
    rule: str
    source: str
    requirement: str
    node: str
    field: str
    value: Any  # the world's value (fields.ABSENT: it has none)
    message: str

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "sentence": self.sentence, "number": self.number, "words": self.words,
            "rule": self.rule, "source": self.source, "requirement": self.requirement,
            "node": self.node, "field": self.field,
            "present": self.value is not fields.ABSENT,
            "value": None if self.value is fields.ABSENT else self.value,
            "message": self.message,
        }
        return out


@dataclass
class AuditReport:
    at: str | None  # the revision asked for (None: the world as it stands)
    commit: str
    sentences: int
    findings: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    def to_json(self) -> dict[str, Any]:
        return {"at": self.at, "commit": self.commit, "sentences": self.sentences,
                "ok": self.ok, "findings": [f.to_json() for f in self.findings],
                "warnings": self.warnings}


class _ChapterView(WorldView):
    """The world copy a chapter is simulated on: the sentences read so far are its recent events."""

    def __init__(self, wr: WorldRepo, tree: Tree | None,
                 edits: worktree.HandEdits | None = None) -> None:
        super().__init__(wr, tree, edits)
        self.read: list[str] = []

    def recent_events(self, limit: int, *, changes: bool = True) -> list[dict[str, Any]]:
        return [{"id": None, "content": s, "timestamp": None, **({"diffusions": []} if changes else {})}
                for s in reversed(self.read[-limit:])] if limit > 0 else []


def sentences(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` (offsets), as the rules diffuser splits them; blank ones left out."""
    analysis = clauses.lexicon().analyse(text)
    return [(s, e) for s, e in analysis.sentences if text[s:e].strip()]


def audit(wr: WorldRepo, text: str, at: str | None = None) -> AuditReport:
    """Simulate ``text`` on a copy of the world (HEAD with hand edits, or ``at``) and report
    every action whose preconditions the world contradicts. Writes nothing."""
    if len(text) > MAX_CHAPTER:
        raise InvalidInputError(f"the chapter is {len(text)} characters; audit takes at most "
                                f"{MAX_CHAPTER}", hint="audit it in parts")
    if not text.strip():
        raise InvalidInputError("the chapter is empty")
    tip = tip_of(wr, at)
    if tip is None:
        raise NotFoundError("the story has no events yet")
    rules, _ = load_rule_set(wr.root)
    report = AuditReport(at, tip.id, 0)
    if not rules:
        report.warnings.append("no rules in this world (rules/*.toml): nothing to check against")
    edits = worktree.scan_for_reader(wr, tip.tree) if at is None else None
    view = _ChapterView(wr, tip.tree, edits)
    diffuser = RulesDiffuser(wr.root)
    spans = sentences(text)
    report.sentences = len(spans)
    for number, (start, end) in enumerate(spans, 1):
        sentence = text[start:end].strip()
        request = EventRequest(content=sentence, diffuser="rules")
        proposal, unmet = diffuser.propose_checked(view, request)
        for u in unmet:
            report.findings.append(Finding(
                sentence, number, sentence[u.start:u.end], u.rule, u.source, u.requirement,
                u.node, u.field, u.value, u.describe()))
        reviewed = review(view, proposal, request)
        draft = Draft(view, "audit")
        draft.apply(reviewed.delta, proposed=len(reviewed.delta.ops))
        draft.finish(close_scene=reviewed.delta.close_scene)
        if draft.problems:
            report.warnings.append(f"sentence {number}: left out what it would change: "
                                   f"{draft.problems[0]}")
        else:
            for node_id, node in draft.nodes.items():
                view.lay(node_id, node)
        view.read.append(sentence)
    return report
