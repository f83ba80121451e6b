"""Which words of an event assert that something happens now, and which do not.

A rule that matches "Will Lin Yuan hand over the token?", "If the gate falls,
Lin Yuan runs to the library", "Old Zhou claims Su Qing was killed" or
"林远差点丢了黑戒" would write something that did not happen, the worst thing a
diffuser can do; leaving a change out is cheap (the user adds it with ``--set``).
So before rules apply, the text is split into sentences and clauses and every
*cue* that makes words irrealis is found, after the ConText/NegEx algorithm of
clinical text mining: a trigger term has a direction (its scope runs forward,
backward, both ways, or over the sentence it starts or ends) and its scope stops
at a termination term or a clause boundary. Kinds: negated, almost happened,
hesitated, intended (planned, wished, tried), ordered (or requested, obliged),
reported (claimed, believed), hypothetical (a condition, a possibility),
question, imagined (dreamed, remembered), unrealised ("before he reaches ...").

The words are data: ``cues.toml`` beside this module, in English and Chinese,
to which a world's rule files add (a ``[cues]`` table). A rule is blocked only by
a cue whose scope holds one of the rule's own words, so "Lin Yuan did not hesitate
and walked to the gate" still moves him (the scope of "not" and of "hesitate" ends
at "and"), and a cue that is one of the rule's own words ("听说", "不信任") is not
a cue for that rule.

Everything here is pure: one pass of one compiled expression over the text. The
expressions are made of a world's words, so they match within the event's time
budget (:mod:`narrative.diffusers.budget`): a crafted term cannot hang an event.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from narrative.diffusers import budget

if TYPE_CHECKING:
    import regex

Scope = Literal["phrase", "clause", "sentence"]
KINDS = ("negated", "almost", "hesitated", "intended", "ordered", "reported", "hypothetical",
         "question", "imagined", "unrealised")
ROLES = ("forward", "backward", "both", "initial", "final")
REASONS = {
    "negated": "negated",
    "almost": "almost happened",
    "hesitated": "hesitation",
    "intended": "intended, not done",
    "ordered": "ordered or requested",
    "reported": "reported",
    "hypothetical": "condition or possibility",
    "question": "question",
    "imagined": "dreamed, imagined or remembered",
    "unrealised": "not yet happened",
}
SENTENCE_END = re.compile(r"[.!?;。！？；\n]+[\"'”’」』)）]*")
PUNCT_BOUNDARY = re.compile(r"[,，:：—–(（)）\"“”「」『』]")
_WORDLESS = re.compile(r"^[\W_]*$")
_WORDS_AFTER = 4  # "..., Old Zhou claims." / "..., claims Old Zhou sadly."


class CueKind(BaseModel):
    """The cue words of one kind; ``scope`` is how far a forward scope reaches."""

    model_config = ConfigDict(extra="forbid")

    scope: Scope | None = Field(default=None, description="phrase, clause or sentence")
    forward: list[str] = Field(default_factory=list)
    backward: list[str] = Field(default_factory=list,
                                description="Only when the cue ends its sentence.")
    both: list[str] = Field(default_factory=list)
    initial: list[str] = Field(default_factory=list, description="The first words of a sentence.")
    final: list[str] = Field(default_factory=list, description="The last words of a sentence.")


class CueSet(BaseModel):
    """A ``[cues]`` table: the shipped lexicon, or what a world adds to it."""

    model_config = ConfigDict(extra="forbid")

    termination: list[str] = Field(default_factory=list, description="Words that end a phrase scope.")
    boundary: list[str] = Field(default_factory=list, description="Words that end a clause.")
    pseudo: list[str] = Field(default_factory=list,
                              description="Phrases containing a cue that are not one.")
    exclusion: list[str] = Field(default_factory=list,
                                 description="A name right after these is set aside, not bound.")
    negated: CueKind | None = None
    almost: CueKind | None = None
    hesitated: CueKind | None = None
    intended: CueKind | None = None
    ordered: CueKind | None = None
    reported: CueKind | None = None
    hypothetical: CueKind | None = None
    question: CueKind | None = None
    imagined: CueKind | None = None
    unrealised: CueKind | None = None


@lru_cache(maxsize=1)
def shipped() -> CueSet:
    """The lexicon that comes with narr."""
    text = resources.files("narrative.diffusers").joinpath("cues.toml").read_text("utf-8")
    return CueSet.model_validate(tomllib.loads(text)["cues"])


def _term_regex(term: str) -> str:
    """Whole words for Latin script (``{x}``: one to three words), anywhere for CJK."""
    pieces = []
    for token in term.split():
        if token == "{x}":
            pieces.append(r"[\w'’-]+(?:\s+[\w'’-]+){0,2}?")
        else:
            pieces.append(re.escape(token).replace("'", "['’]"))
    body = r"\s+".join(pieces)
    if term[0].isascii() and term[0].isalnum():
        body = r"(?<![\w'’])" + body
    if term[-1].isascii() and term[-1].isalnum():
        body += r"(?![\w'’])" if term[-1] != "}" else ""
    return body


@dataclass(frozen=True)
class Cue:
    """One cue found in the text, with the span of text it governs."""

    kind: str
    term: str
    start: int
    end: int
    scope_start: int
    scope_end: int

    @property
    def reason(self) -> str:
        return REASONS[self.kind]


class Lexicon:
    """Cue sets compiled into one expression; build with :func:`lexicon`."""

    def __init__(self, sets: tuple[CueSet, ...]) -> None:
        self.scope: dict[str, Scope] = {}
        entries: dict[str, set[tuple[str, str]]] = {}  # term -> {(kind, role)}
        ends: dict[str, set[str]] = {}  # term -> {"termination" | "boundary"}
        self.exclusion: list[str] = []
        for cs in sets:
            for name in ("termination", "boundary"):
                for t in getattr(cs, name):
                    ends.setdefault(_norm(t), set()).add(name)
            for t in cs.pseudo:
                entries.setdefault(_norm(t), set())
            self.exclusion += [_norm(t) for t in cs.exclusion if t.strip()]
            for kind in KINDS:
                ck: CueKind | None = getattr(cs, kind)
                if ck is None:
                    continue
                if ck.scope is not None:
                    self.scope[kind] = ck.scope
                for role in ROLES:
                    for t in getattr(ck, role):
                        if t.strip():
                            entries.setdefault(_norm(t), set()).add((kind, role))
        for kind in KINDS:
            self.scope.setdefault(kind, "clause")
        self.terms = sorted(entries, key=lambda t: (-len(t), t))
        self.roles = [entries[t] for t in self.terms]
        self.cue_rx = _Scanner(self.terms)
        end_terms = sorted(ends, key=lambda t: (-len(t), t))
        self.end_kinds = [ends[t] for t in end_terms]
        self.end_rx = _Scanner(end_terms)
        excl = sorted(set(self.exclusion), key=lambda t: (-len(t), t))
        self.exclusion_rx = budget.compile(
            r"(?:" + "|".join(_term_regex(t) for t in excl) + r")\s*$") if excl else None

        self.terminators = budget.compile(PUNCT_BOUNDARY.pattern + "|" + self.end_rx.pattern)
        """Punctuation and words that end a phrase: what stops a world's ``unless`` word."""

    def analyse(self, text: str) -> Analysis:
        return Analysis(self, text)


def _norm(term: str) -> str:
    return " ".join(term.strip().lower().split())


class _Scanner:
    """Leftmost-longest occurrences of many terms, found in one pass.

    One alternation of ~700 terms tried at every character cost 13 ms for a
    short sentence and 6 s for 40 KB; trying only the terms that start with the
    character at hand (one small expression per first character, reached through
    a character class) costs well under a millisecond for a sentence.
    """

    def __init__(self, terms: list[str]) -> None:
        groups: dict[str, list[int]] = {}
        for i, t in enumerate(terms):
            groups.setdefault(t[0].lower(), []).append(i)
        self.by_first = {
            ch: budget.compile("|".join(f"(?P<t{i}>{_term_regex(terms[i])})" for i in ids))
            for ch, ids in groups.items()}
        firsts = "".join(sorted(groups))
        self.starts: regex.Pattern[str] | None = (
            budget.compile("[" + re.escape(firsts) + "]") if firsts else None)
        self.pattern = "|".join(f"(?:{_term_regex(t)})" for t in terms) or r"(?!)"

    def _by_first(self, ch: str) -> regex.Pattern[str] | None:
        """The terms starting with ``ch``. Case-insensitive matching takes characters whose
        ``lower()`` is two characters ("İ" is "i" and a dot) for their first letter."""
        return self.by_first.get(ch.lower()) or self.by_first.get(ch.casefold()[:1])

    def finditer(self, text: str) -> Iterator[tuple[int, int, int]]:
        """``(start, end, term index)``, without overlaps."""
        if self.starts is None:
            return
        pos = 0
        while True:
            found = budget.search(self.starts, text, pos)
            if found is None:
                return
            i = found.start()
            rx = self._by_first(text[i])
            m = budget.match(rx, text, i) if rx is not None else None
            if m is None or m.end() == i:
                pos = i + 1
                continue
            yield i, m.end(), int(m.lastgroup[1:])  # type: ignore[index]
            pos = m.end()


@lru_cache(maxsize=16)
def lexicon(extra: tuple[str, ...] = ()) -> Lexicon:
    """The shipped cues with a world's ``[cues]`` tables (given as JSON, so they can be cached)."""
    return Lexicon((shipped(), *(CueSet.model_validate_json(e) for e in extra)))


class Analysis:
    """The sentences, clause boundaries and cues of one text."""

    def __init__(self, lex: Lexicon, text: str) -> None:
        self.text = text
        self.sentences: list[tuple[int, int]] = []
        pos = 0
        for m in SENTENCE_END.finditer(text):
            self.sentences.append((pos, m.end()))
            pos = m.end()
        if text[pos:].strip() or not self.sentences:
            self.sentences.append((pos, len(text)))
        elif pos < len(text):
            self.sentences[-1] = (self.sentences[-1][0], len(text))
        self._sentence_starts = [s for s, _ in self.sentences]
        # clause ends (for clause scopes) and phrase ends (for phrase scopes)
        ends = list(lex.end_rx.finditer(text))
        self.clause_ends = sorted({m.start() for m in PUNCT_BOUNDARY.finditer(text)}
                                  | {s for s, _, k in ends if "boundary" in lex.end_kinds[k]})
        self.phrase_ends = sorted(set(self.clause_ends) | {s for s, _, _ in ends})
        self.cues: list[Cue] = []
        for start, end, k in lex.cue_rx.finditer(text):
            for kind, role in sorted(lex.roles[k]):
                scope = self._scope(start, end, role, lex.scope[kind])
                if scope is not None:
                    self.cues.append(Cue(kind, text[start:end], start, end, *scope))

    def drop_before(self, starts: set[int]) -> None:
        """Forget negations standing right before a name set aside ("不是苏晴", "not Su Qing"):
        they exclude the name, they do not negate the verb."""
        def excludes(c: Cue) -> bool:
            return c.kind == "negated" and any(
                0 <= s - c.end <= 4 and self.text[c.end:s].strip().lower() in ("", "是", "even")
                for s in starts)

        self.cues = [c for c in self.cues if not excludes(c)]

    def sentence_of(self, pos: int) -> tuple[int, int]:
        k = bisect.bisect_right(self._sentence_starts, pos) - 1
        return self.sentences[max(k, 0)]

    def _next(self, ends: list[int], after: int, limit: int) -> int:
        k = bisect.bisect_left(ends, after)
        return min(ends[k], limit) if k < len(ends) else limit

    def clause_start(self, pos: int) -> int:
        s0, _ = self.sentence_of(pos)
        k = bisect.bisect_right(self.clause_ends, pos) - 1
        return max(s0, self.clause_ends[k] + 1) if k >= 0 else s0

    def _scope(self, start: int, end: int, role: str, reach: Scope) -> tuple[int, int] | None:
        s0, s1 = self.sentence_of(start)
        before, after = self.text[s0:start], self.text[end:s1]
        if role == "forward":
            if reach == "sentence":
                return end, s1
            ends = self.phrase_ends if reach == "phrase" else self.clause_ends
            return end, self._next(ends, end, s1)
        if role == "both":
            return s0, s1
        if role == "initial":
            return (s0, s1) if _WORDLESS.match(before) else None
        if role == "final":
            return (s0, s1) if _WORDLESS.match(after) else None
        # backward: "..., Old Zhou claims." - the cue closes its sentence, after a clause
        words = re.findall(r"\w+", after)
        clause = self.clause_start(start)
        if len(words) > _WORDS_AFTER or clause <= s0 or not any(
                s0 <= b < start for b in self.clause_ends):
            return None
        return s0, clause

    def blocking(self, words: list[tuple[int, int]]) -> Cue | None:
        """The cue governing the rule's own words (the innermost: the nearest before them)."""
        best: Cue | None = None
        for cue in self.cues:
            if any(cue.start < e and s < cue.end for s, e in words):
                if any(s <= cue.start and cue.end <= e for s, e in words):
                    continue  # the cue is the rule's own word ("听说", "not" in "no longer")
                return cue  # the rule's word is part of a cue: "believes that" is not "believes"
            if any(cue.scope_start <= s < cue.scope_end for s, _ in words) and (
                    best is None or _nearer(cue, best, words)):
                best = cue
        return best


# When two cues start at the same word ("Will ...?": a question and a future), the one
# framing the whole sentence names the reason.
_PRIORITY = ("question", "hypothetical", "reported", "imagined", "ordered", "intended", "unrealised",
             "hesitated", "almost", "negated")


def _nearer(a: Cue, b: Cue, words: list[tuple[int, int]]) -> bool:
    first = min(s for s, _ in words)
    return ((abs(first - a.start), _PRIORITY.index(a.kind))
            < (abs(first - b.start), _PRIORITY.index(b.kind)))
