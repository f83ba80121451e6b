"""``narr audit``: does a chapter draft contradict the world it is written against?

A chapter is read as :mod:`narrative.engine.reading` reads it: in order, one sentence
at a time, each simulated as a dry-run ``rules`` event on an in-memory copy of the
world (HEAD with the user's hand edits, or the world at ``--at REV``), with every
operation in the order of the words and no rule held back by its guards (the chapter
is followed as written: its realis clauses fire rules, exactly as ``narr event``
would, while what did not happen, "if", "did not", "Old Zhou claims", changes
nothing), and what the engine would accept laid over the copy, so later sentences
see what earlier ones did. Each sentence is checked on the copy as the chapter has
left it: the preconditions of the rules it fires, and the checks that need no rule.
Nothing is written: the repository, its refs and the working tree are left as they are.

An action that only changes state ("Su Qing takes the ring") is no contradiction. The
chapter is simulated whole even after a finding, with the words taken as true, so
one slip is reported once and not again in every sentence that follows from it. The
rules are the world's rule files as they are now, also with ``--at``: the chapter is
checked against the world then, by the rules the author has now. The reading costs
what each sentence holds, never the text before it, and stops past its time budget
(``--budget``) or when whoever asked is gone (:mod:`narrative.engine.deadline`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from narrative.answers import Answer
from narrative.diffusers import clauses
from narrative.diffusers.rulefile import rule_set
from narrative.engine.deadline import DEFAULT_BUDGET, Deadline
from narrative.engine.eventgraph import tip_of
from narrative.engine.reading import CHECKS, Finding, Reading
from narrative.errors import InvalidInputError, NotFoundError
from narrative.shapes import Obj
from narrative.store import WorldRepo, scan_for_reader

__all__ = ["CHECKS", "AuditReport", "Finding", "audit", "read_chapter", "sentences"]

MAX_CHAPTER = 1_000_000  # characters: a novel's chapter is a few tens of thousands


class AuditReport(Answer):
    """The actions in a chapter that the world contradicts (``findings``: the sentence, its
    number and words, the rule or check, the node, the field and what the world holds there),
    and what was noted without contradicting it; ``ok`` when nothing is contradicted. The
    world is ``at`` a revision (null: as it stands), its tip ``commit``. Nothing is written."""

    NAME: ClassVar[str] = "audit"

    at: str | None
    commit: str | None
    sentences: int
    ok: bool
    findings: list[Obj]
    notes: list[Obj]
    warnings: list[str]


@dataclass
class _Report:
    """What :func:`audit` finds as it reads, told as an :class:`AuditReport` at the end."""

    at: str | None  # the revision asked for (None: the world as it stands)
    commit: str
    sentences: int
    findings: list[Finding] = field(default_factory=list)
    notes: list[Finding] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def told(self) -> AuditReport:
        return AuditReport.model_validate({
            "at": self.at, "commit": self.commit, "sentences": self.sentences,
            "ok": not self.findings, "findings": [f.to_json() for f in self.findings],
            "notes": [n.to_json() for n in self.notes], "warnings": self.warnings})


def sentences(text: str, lex: clauses.Lexicon | None = None) -> list[tuple[int, int]]:
    """The sentences of ``text`` (offsets), as the rules diffuser splits them with the world's
    cue words (``lex``: its titles and abbreviations); blank ones left out."""
    return [(s, e) for s, e in clauses.sentences(text, lex) if text[s:e].strip()]


def read_chapter(data: bytes, source: str = "the chapter") -> str:
    """A chapter's text from its bytes: UTF-8 text, or one clear refusal naming why not."""
    if b"\x00" in data[:65536]:
        raise InvalidInputError(f"{source} is not text (it holds NUL bytes: a binary file?)",
                                hint="audit takes a chapter as UTF-8 text (Markdown or plain text)")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InvalidInputError(
            f"{source} is not UTF-8 text (byte {exc.start}: {data[exc.start:exc.start + 1]!r})",
            hint="save it as UTF-8 (most editors: File, Save with encoding)") from None
    return text


def audit(wr: WorldRepo, text: str, at: str | None = None, *,
          budget: float | None = DEFAULT_BUDGET) -> AuditReport:
    """Simulate ``text`` on a copy of the world (HEAD with hand edits, or ``at``) and report
    every action the world contradicts. Writes nothing. Past ``budget`` seconds (None: no
    limit) it stops with :class:`~narrative.errors.OutOfTimeError`."""
    if len(text) > MAX_CHAPTER:
        raise InvalidInputError(f"the chapter is {len(text)} characters; audit takes at most "
                                f"{MAX_CHAPTER}", hint="audit it in parts")
    if not text.strip():
        raise InvalidInputError("the chapter is empty", hint="give a file of prose, or - for stdin")
    if "\x00" in text:
        raise InvalidInputError("the chapter is not text (it holds NUL characters)")
    deadline = Deadline(budget, "the audit", "give it more time (--budget SECONDS) or audit the "
                                             "chapter in parts")
    tip = tip_of(wr, at)
    if tip is None:
        raise NotFoundError("the story has no events yet")
    loaded = rule_set(wr.root)  # one set for the whole chapter, its lexicon built once
    report = _Report(at, tip.id, 0)
    if not loaded.rules:
        report.warnings.append("no rules in this world (rules/*.toml): only the checks that "
                               "need none are made")
    edits = scan_for_reader(wr, tip.tree) if at is None else None
    reading = Reading(wr, tip.id, tip.tree, edits, loaded)
    spans = sentences(text, loaded.lexicon)
    report.sentences = len(spans)
    named_any = False
    for number, (start, end) in enumerate(spans, 1):
        deadline.check(number - 1, len(spans))
        sentence = text[start:end].strip()
        step = reading.propose(number, sentence)
        named_any = named_any or step.named
        report.findings.extend(step.findings)
        report.notes.extend(step.notes)
        if step.ops or step.close_scene:
            draft = reading.draft(step.ops, step.close_scene, "audit")
            if draft.problems:
                report.warnings.append(f"sentence {number}: left out what it would change: "
                                       f"{draft.problems[0]}")
            else:
                reading.lay(number, draft.nodes)
        reading.done(sentence)
    if not named_any and spans:
        report.warnings.append("no sentence names a node of this world: is the chapter in the "
                               "world's language, and are its people and places nodes?")
    return report.told()
