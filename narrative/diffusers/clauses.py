"""Which words of an event assert that something happens now, and which do not.

A rule that matches "Will Lin Yuan hand over the token?", "If the gate falls,
Lin Yuan runs to the library", "Old Zhou claims Su Qing was killed" or
"林远差点丢了黑戒" would write something that did not happen, the worst thing a
diffuser can do; leaving a change out is cheap (the user adds it with ``--set``).
So before rules apply, the text is read for its structure:

- **Sentences** (:mod:`narrative.diffusers.segment`: "Dr.", "St.", initials and
  "p.m." end nothing) and **clauses** (:class:`~narrative.diffusers.patterns.Unit`):
  a semicolon, a comma with a conjunction ("…, and Lee went …"), a conjunction
  before a new subject and its verb, "that", a relative clause (", who …,") or a
  parenthesis, a Chinese comma. No rule binds names across a clause boundary.
- **What a clause asserts.** A main clause in the story's past or present does;
  a *complement* does not: the words after a verb of saying, thinking, believing,
  fearing, hoping, denying or swearing (the classes ``say``, ``believe``,
  ``deny`` ... of :mod:`narrative.diffusers.classes`, every form of each verb)
  to the end of its clause, and the "that"-clause it governs, however far it
  runs. A *factive* verb (knows, sees, realises, 发现, 看见) keeps its complement
  asserted. A "that"-clause under a verb narr does not know is *unsure*: the
  rules hold back what they find there and ask (``narr event --accept N``).
  The other kinds come from cue words, after the ConText/NegEx algorithm of
  clinical text mining: a trigger term has a direction (its scope runs forward,
  backward, both ways, or over the sentence it starts or ends) and its scope
  stops at a termination term or a boundary. Kinds: negated (nobody, never,
  谁也没), almost happened, hesitated, intended (planned, wished, tried),
  ordered (or requested), reported, believed, denied, hypothetical (a condition,
  a possibility), question, imagined (dreamed, remembered), framed (a play, film,
  ballad or book inside the story), habitual (always, every Sunday, 总是, 每逢),
  future (tomorrow, 明年), unrealised ("before he reaches ...").

The words are data: ``cues.toml`` beside this module, in English and Chinese,
to which a world's rule files add (a ``[cues]`` table), and the verb classes. A
rule is blocked only by a cue whose scope holds one of the rule's own words, so
"Lin Yuan did not hesitate and walked to the gate" still moves him (the scope of
"not" and of "hesitate" ends at "and"), and a cue that is one of the rule's own
words ("听说", "不信任") is not a cue for that rule.

Everything here is pure and linear in the text: one pass of the sentence
splitter, one of the clause boundaries, one of the cue scanner. The cue words are
a world's words, so their matching runs within the event's time budget
(:mod:`narrative.diffusers.budget`): the few terms matched as expressions (an
exclusion, a terminator, a term that is not plain words) are compiled there, and
the word-by-word scan checks the same deadline, so a crafted table cannot hang an
event.
"""

from __future__ import annotations

import bisect
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from narrative.diffusers import budget
from narrative.diffusers import classes as word_classes
from narrative.diffusers.patterns import Unit, is_cjk_char
from narrative.diffusers.segment import Segmenter, spans

if TYPE_CHECKING:
    import regex

Scope = Literal["phrase", "clause", "unit", "sentence"]
KINDS = ("negated", "almost", "hesitated", "intended", "ordered", "modal", "reported", "believed",
         "denied", "hypothetical", "question", "imagined", "framed", "earlier", "habitual", "future",
         "unrealised")
ROLES = ("forward", "backward", "both", "initial", "final")  # and "that": governs a "that"-clause
REASONS = {
    "negated": "negated",
    "almost": "almost happened",
    "hesitated": "hesitation",
    "intended": "intended, not done",
    "ordered": "ordered or requested",
    "modal": "possible or allowed, not done",
    "reported": "reported",
    "believed": "believed or feared, not known",
    "denied": "denied",
    "hypothetical": "condition or possibility",
    "question": "question",
    "imagined": "dreamed, imagined or remembered",
    "framed": "inside a story, play, film or dream",
    "earlier": "long before the story's now",
    "habitual": "habitual, not one event",
    "future": "in the future",
    "unrealised": "not yet happened",
    "infinitive": "an infinitive: a purpose or a plan, not done",
    "unsure": "under a word narr does not know",
    "attributive": "a participle before a name: a state, not an act",
}
SENTENCE_END = re.compile(r"[.!?;。！？；\n]+[\"'”’」』)）]*")
PUNCT_BOUNDARY = re.compile(r"[,，:：;；—–(（)）\"“”「」『』]")
_WORDLESS = re.compile(r"^[\W_]*$")
_WORDS_AFTER = 4  # "..., Old Zhou claims." / "..., claims Old Zhou sadly."
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*(?:-[A-Za-z0-9]+)*")
GOVERNOR_REACH = 8  # words between a governing verb and the "that" it governs


MAX_TERM_CHARS = 80
MAX_TERM_WILDCARDS = 2  # "{x}" in one term: each tries one to three words


def _check_terms(value: list[str]) -> list[str]:
    """Cue terms are data a stranger may write: bounded, so matching them stays linear."""
    for term in value:
        if len(term) > MAX_TERM_CHARS:
            raise ValueError(f"cue {term[:40]!r}...: longer than {MAX_TERM_CHARS} characters")
        if term.count("{x}") > MAX_TERM_WILDCARDS:
            raise ValueError(f"cue {term!r}: more than {MAX_TERM_WILDCARDS} '{{x}}'")
    return value


class CueKind(BaseModel):
    """The cue words of one kind; ``scope`` is how far a forward scope reaches."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("forward", "backward", "both", "initial", "final", "nouns")
    @classmethod
    def _bounded(cls, value: list[str]) -> list[str]:
        return _check_terms(value)

    scope: Scope | None = Field(default=None, description="phrase, clause, unit or sentence")
    governs: bool | None = Field(
        default=None, description="Its forward words govern a complement: their scope runs to the "
                                  "end of their clause and over the 'that'-clause they introduce.")
    forward: list[str] = Field(default_factory=list)
    backward: list[str] = Field(default_factory=list,
                                description="Only when the cue ends its sentence.")
    both: list[str] = Field(default_factory=list)
    initial: list[str] = Field(default_factory=list, description="The first words of a sentence.")
    final: list[str] = Field(default_factory=list, description="The last words of a sentence.")
    classes: list[str] = Field(default_factory=list,
                               description="Verb classes whose every phrase is a forward cue.")
    that_classes: list[str] = Field(
        default_factory=list,
        description="Verb classes whose phrases govern only the 'that'-clause they introduce.")
    nouns: list[str] = Field(
        default_factory=list,
        description="Nouns that govern a 'that'-clause ('the story that ...'); 'in the NOUN' and "
                    "NOUN里 also frame what follows, for the kind 'framed'.")


class CueSet(BaseModel):
    """A ``[cues]`` table: the shipped lexicon, or what a world adds to it."""

    model_config = ConfigDict(extra="forbid")

    @field_validator("termination", "boundary", "pseudo", "exclusion", "titles", "abbreviations",
                     "figures", "reality")
    @classmethod
    def _bounded(cls, value: list[str]) -> list[str]:
        return _check_terms(value)

    termination: list[str] = Field(default_factory=list, description="Words that end a phrase scope.")
    boundary: list[str] = Field(default_factory=list, description="Words that end a clause.")
    pseudo: list[str] = Field(default_factory=list,
                              description="Phrases containing a cue that are not one.")
    exclusion: list[str] = Field(default_factory=list,
                                 description="A name right after these is set aside, not bound.")
    reality: list[str] = Field(
        default_factory=list,
        description="Words that return from a dream, a memory or a story to the story's present "
                    "(醒来后, 'woke'): a dream or a story told before them does not govern them.")
    figures: list[str] = Field(
        default_factory=list,
        description="Phrases that hold a rule's word but do not say its event happened: figures "
                    "of speech ('died laughing', 笑死) and an end still to come ('was dying').")
    titles: list[str] = Field(default_factory=list,
                              description="Abbreviations before a name: never the end of a sentence.")
    abbreviations: list[str] = Field(
        default_factory=list, description="End a sentence only when a capitalised word follows.")
    factive: list[str] = Field(
        default_factory=list, description="Verb classes whose complement stays asserted "
                                          "(know, see, realise, 发现).")
    bare: list[str] = Field(
        default_factory=list, description="Verb classes after which 'X do' asserts that X did it "
                                          "(saw Bo take, made Bo go).")
    implicative: list[str] = Field(
        default_factory=list, description="Verb classes after which 'to do' asserts that it was "
                                          "done (managed to, came to).")
    negated: CueKind | None = None
    almost: CueKind | None = None
    hesitated: CueKind | None = None
    intended: CueKind | None = None
    ordered: CueKind | None = None
    modal: CueKind | None = None
    reported: CueKind | None = None
    believed: CueKind | None = None
    denied: CueKind | None = None
    hypothetical: CueKind | None = None
    question: CueKind | None = None
    imagined: CueKind | None = None
    framed: CueKind | None = None
    earlier: CueKind | None = None
    habitual: CueKind | None = None
    future: CueKind | None = None
    unrealised: CueKind | None = None


@lru_cache(maxsize=1)
def shipped() -> CueSet:
    """The lexicon that comes with narr."""
    text = resources.files("narrative.diffusers").joinpath("cues.toml").read_text("utf-8")
    return CueSet.model_validate(tomllib.loads(text)["cues"])


def _term_regex(term: str) -> str:
    """Whole words for Latin script (``{x}``: one to three words), anywhere for CJK;
    ``{title}`` is a title in 《》."""
    pieces = []
    for token in term.split():
        if token == "{x}":
            pieces.append(r"[\w'’-]+(?:\s+[\w'’-]+){0,2}?")
        else:
            pieces.append(re.escape(token).replace("'", "['’]").replace(r"\{title\}",
                                                                        r"《[^》\n]{1,30}》"))
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
        return REASONS.get(self.kind, self.kind)


class Lexicon:
    """Cue sets compiled into one scanner; build with :func:`lexicon`."""

    def __init__(self, sets: tuple[CueSet, ...], table: word_classes.ClassTable | None = None) -> None:
        table = table or word_classes.table()
        self.scope: dict[str, Scope] = {}
        self.governs: set[str] = set()
        entries: dict[str, set[tuple[str, str]]] = {}  # term -> {(kind, role)}
        ends: dict[str, set[str]] = {}  # term -> {"termination" | "boundary"}
        self.exclusion: list[str] = []
        figures: set[str] = set()
        reality: set[str] = set()
        titles: list[str] = []
        abbreviations: list[str] = []
        factive: list[str] = []
        bare: list[str] = []
        implicative: list[str] = []
        self.frame_nouns: list[str] = []
        self.governing_nouns: dict[str, str] = {}
        for cs in sets:
            for name in ("termination", "boundary"):
                for t in getattr(cs, name):
                    ends.setdefault(_norm(t), set()).add(name)
            for t in cs.pseudo:
                entries.setdefault(_norm(t), set())
            self.exclusion += [_norm(t) for t in cs.exclusion if t.strip()]
            figures |= {_norm(t) for t in cs.figures if t.strip()}
            reality |= {_norm(t) for t in cs.reality if t.strip()}
            titles += cs.titles
            abbreviations += cs.abbreviations
            factive += cs.factive
            bare += cs.bare
            implicative += cs.implicative
            for kind in KINDS:
                ck: CueKind | None = getattr(cs, kind)
                if ck is None:
                    continue
                if ck.scope is not None:
                    self.scope[kind] = ck.scope
                if ck.governs:
                    self.governs.add(kind)
                for role in ROLES:
                    for t in getattr(ck, role):
                        if t.strip():
                            entries.setdefault(_norm(t), set()).add((kind, role))
                for name in ck.classes:
                    for t in _class_terms(table, name):
                        entries.setdefault(t, set()).add((kind, "forward"))
                for name in ck.that_classes:
                    for t in _class_terms(table, name):
                        entries.setdefault(t, set()).add((kind, "that"))
                for noun in ck.nouns:
                    if not noun.strip():
                        continue
                    if kind == "framed":
                        self.frame_nouns.append(noun.strip())
                        for t in _frame_terms(noun.strip()):
                            entries.setdefault(t, set()).add((kind, "forward"))
                    else:
                        self.governing_nouns[_norm(noun)] = kind
        for kind in KINDS:
            self.scope.setdefault(kind, "clause")
        factive_terms = {t for name in factive for t in _class_terms(table, name)}
        for t in factive_terms:
            entries.setdefault(t, set()).add(("factive", "forward"))
        self.bare = {t for name in bare for t in _class_terms(table, name)} | factive_terms
        self.implicative = {t for name in implicative for t in _class_terms(table, name)}
        for t in (self.bare | self.implicative) - factive_terms:
            entries.setdefault(t, set()).add(("marker", "forward"))  # found, but no cue
        self.terms = sorted(entries, key=lambda t: (-len(t), t))
        self.roles = [entries[t] for t in self.terms]
        self.cue_rx = _Scanner(self.terms)
        end_terms = sorted(ends, key=lambda t: (-len(t), t))
        self.end_kinds = [ends[t] for t in end_terms]
        self.end_rx = _Scanner(end_terms)
        excl = sorted(set(self.exclusion), key=lambda t: (-len(t), t))
        self.exclusion_rx = budget.compile(
            r"(?:" + "|".join(_term_regex(t) for t in excl) + r")\s*$") if excl else None
        self.figures_rx = _Scanner(sorted(figures, key=lambda t: (-len(t), t)))
        awake = sorted(reality, key=lambda t: (-len(t), t))
        self.reality_rx = budget.compile(
            r"(?:" + "|".join(_term_regex(t) for t in awake) + r")") if awake else None
        self.segmenter = Segmenter(titles, abbreviations)
        self.terminators = budget.compile(PUNCT_BOUNDARY.pattern + "|" + self.end_rx.pattern)
        """Punctuation and words that end a phrase: what stops a world's ``unless`` word."""

    def analyse(self, text: str, names: Iterable[tuple[int, int]] = ()) -> Analysis:
        """The analysis of ``text``; cue words inside one of the ``names`` spans are no cue."""
        return Analysis(self, text, names)

    def sentences(self, text: str) -> list[tuple[int, int]]:
        return spans(text, self.segmenter.ends(text))


def _class_terms(table: word_classes.ClassTable, name: str) -> set[str]:
    """A class's phrases as cue terms: "believes", "is sure", "took {x} for granted", "认定"."""
    if name not in table:
        return set()
    cls = table.get(name)
    out = {" ".join(p.tokens) + (" {x} " + " ".join(p.particle) if p.particle else "")
           for p in cls.en}
    return out | set(cls.zh)


def _frame_terms(noun: str) -> set[str]:
    if any(is_cjk_char(c) for c in noun):
        return {f"{noun}{suffix}" for suffix in ("里", "中", "当中", "{title}里", "{title}中")}
    return {f"in {det} {noun}" for det in ("the", "a", "an", "{x}")} | {f"{noun} in which"}


def _norm(term: str) -> str:
    return " ".join(term.strip().lower().split())


_TERM_TOKEN = re.compile(r"^[a-z0-9]+(?:'[a-z]+)*(?:-[a-z0-9]+)*$")
_TEXT_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*(?:-[A-Za-z0-9]+)*")
_CJK_TERM = re.compile(r"^[^\sA-Za-z0-9{}]+$")


class _Scanner:
    """Leftmost-longest occurrences of many terms, found in one pass.

    One alternation of ~700 terms tried at every character cost 13 ms for a
    short sentence and 6 s for 40 KB; one expression per first character cost
    0.6 s to compile once the verb classes made the terms thousands. So English
    terms are looked up by their first word among the words of the text (``{x}``
    standing for one to three words), Chinese ones by their first character, and
    only the few other terms ("?", "听{x}讲") are compiled into an expression.
    """

    def __init__(self, terms: list[str]) -> None:
        self.terms = terms
        self.en: dict[str, list[tuple[tuple[str, ...], int]]] = {}
        self.zh: dict[str, list[tuple[str, int]]] = {}
        other: list[int] = []
        for i, t in enumerate(terms):
            toks = t.lower().replace("’", "'").split()
            if toks and all(k == "{x}" or _TERM_TOKEN.match(k) for k in toks) and toks[0] != "{x}":
                self.en.setdefault(toks[0], []).append((tuple(toks), i))
            elif _CJK_TERM.match(t) and any(is_cjk_char(c) for c in t):
                self.zh.setdefault(t[0], []).append((t, i))
            else:
                other.append(i)
        for en_list in self.en.values():
            en_list.sort(key=lambda e: -len(e[0]))
        for zh_list in self.zh.values():
            zh_list.sort(key=lambda e: -len(e[0]))
        self.other = other
        self.rx: regex.Pattern[str] | None = budget.compile(
            "|".join(f"(?P<t{i}>{_term_regex(terms[i])})" for i in other)) if other else None

    @property
    def pattern(self) -> str:
        return "|".join(f"(?:{_term_regex(t)})" for t in self.terms) or r"(?!)"

    def finditer(self, text: str, skip: Callable[[int, int], bool] | None = None
                 ) -> Iterator[tuple[int, int, int]]:
        """``(start, end, term index)``, without overlaps: at each place the longest term that
        ``skip`` does not refuse (a term straddling a name: "满以为" in "小满以为" is no term,
        and must not hide the "以为" after the name)."""
        found: list[tuple[int, int, int]] = []
        if self.en:
            norm = text.replace("’", "'")
            tokens = [(m.start(), m.end(), m.group(0).lower()) for m in _TEXT_TOKEN.finditer(norm)]
            for k, (start, _, tok) in enumerate(tokens):
                budget.check()
                for want, idx in self.en.get(tok, ()):
                    end = _match_tokens(norm, tokens, k, want)
                    if end is not None and not (skip is not None and skip(start, end)):
                        found.append((start, end, idx))
                        break
        if self.zh:
            for i, ch in enumerate(text):
                terms = self.zh.get(ch)
                if terms is None:
                    continue
                budget.check()
                for term, idx in terms:
                    if text.startswith(term, i) and not (skip is not None and skip(i, i + len(term))):
                        found.append((i, i + len(term), idx))
                        break
        if self.rx is not None:
            pos = 0
            while pos < len(text):
                m = budget.search(self.rx, text, pos)
                if m is None:
                    break
                if m.end() > m.start():
                    found.append((m.start(), m.end(), int(m.lastgroup[1:])))  # type: ignore[index]
                pos = m.start() + 1
        found.sort(key=lambda f: (f[0], -(f[1] - f[0])))
        pos = 0
        for start, end, idx in found:
            if start >= pos:
                yield start, end, idx
                pos = end


def _match_tokens(text: str, tokens: list[tuple[int, int, str]], k: int,
                  want: tuple[str, ...]) -> int | None:
    """Where ``want`` (words, ``{x}`` one to three of any) ends when it starts at token ``k``."""
    def go(i: int, w: int) -> int | None:
        if w == len(want):
            return tokens[i - 1][1]
        if i >= len(tokens) or (i > k and text[tokens[i - 1][1]:tokens[i][0]].strip()):
            return None  # the words of a term stand side by side
        if want[w] == "{x}":
            for n in (1, 2, 3):
                if i + n > len(tokens) or any(text[tokens[j - 1][1]:tokens[j][0]].strip()
                                              for j in range(i + 1, i + n)):
                    break
                got = go(i + n, w + 1)
                if got is not None:
                    return got
            return None
        return go(i + 1, w + 1) if tokens[i][2] == want[w] else None

    return go(k, 0)


def lexicon(extra: tuple[str, ...] = (),
            classes: tuple[word_classes.ClassSpec, ...] = ()) -> Lexicon:
    """The shipped cues with a world's ``[cues]`` tables (as JSON) and its verb classes.

    narr's own lexicon is built once per process; a world's is built once per set of
    its rule files and kept with them (:class:`narrative.diffusers.rulefile.RuleSet`).
    """
    if not extra and not classes:
        return _shipped_lexicon()
    return Lexicon((shipped(), *(CueSet.model_validate_json(e) for e in extra)),
                   word_classes.table(classes))


@lru_cache(maxsize=1)
def _shipped_lexicon() -> Lexicon:
    return Lexicon((shipped(),), word_classes.table())


@lru_cache(maxsize=1)
def segmenter() -> Segmenter:
    """The sentence splitter with narr's own titles and abbreviations (no cue lexicon built)."""
    cs = shipped()
    return Segmenter(cs.titles, cs.abbreviations)


def sentences(text: str, lex: Lexicon | None = None) -> list[tuple[int, int]]:
    """The sentences of ``text`` as ``(start, end)`` spans covering it, as the rules read them."""
    return (lex or lexicon()).sentences(text)


# --- clauses ----------------------------------------------------------------------------------

_COORD = ("and then", "and", "but", "or", "nor", "yet", "so", "then", "while", "whereas", "whilst")
_SUBORD = ("even though", "even if", "in case", "though", "although", "because", "since", "unless",
           "until", "till", "before", "after", "when", "whenever", "once", "as soon as", "if",
           "lest", "now that", "so that")
_RELATIVE = ("who", "whom", "whose", "which", "where")
_PREP_BEFORE_THAT = frozenset({"of", "in", "at", "on", "for", "about", "with", "from", "by", "to",
                               "into", "like", "than", "all", "after", "before", "upon", "over"})
_TIME_AFTER_THAT = re.compile(
    r"that\s+(?:very\s+|same\s+)?(?:night|day|morning|evening|afternoon|week|year|month|summer|winter|"
    r"spring|autumn|time|moment|hour|minute|instant|once|one|man|woman|one's|sunday|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|is|was)\b", re.IGNORECASE)
_COMMA_WORD = re.compile(r"[,，]\s*([A-Za-z]+(?:\s+[A-Za-z]+)?)")
_CJK_CUT = re.compile(r"[，,；;：:—]+")
_PRONOUN_SUBJECT = frozenset({"he", "she", "they", "i", "we", "you", "it"})
_DETERMINERS = frozenset({"the", "a", "an", "this", "his", "her", "their", "its", "my", "our", "your",
                          "every", "each", "some", "any", "no", "one", "another"})
_OBJECT_PRONOUN = frozenset({"him", "her", "them", "me", "us", "it", "himself", "herself",
                             "themselves", "myself", "ourselves", "yourself"})


@dataclass(frozen=True)
class Clause:
    """A :class:`Unit` with how it begins: ``main``, ``coord`` (after "; ", ", and", "but" ...),
    ``vp`` ("and" + a verb, no comma: the same subject goes on), ``sub`` (if, when, because
    ...), ``that``, ``relative`` (", who ...") or ``paren``."""

    unit: Unit
    kind: str
    sentence: int
    opener: str = ""


def _is_verb_form(word: str) -> bool:
    """Whether ``word`` can be an inflected verb ("went", "walks", "took"): the English table's lexicon."""
    from narrative.diffusers.inflect import parts_of_speech

    w = word.lower()
    tags = parts_of_speech(w)
    if "verb" not in tags and "aux" not in tags:
        return False
    return w.endswith(("ed", "s")) or "noun" not in tags or w in {"went", "took", "gave", "ran",
                                                                    "came", "left", "rode", "fled"}


def clauses_of(text: str, sentence_spans: list[tuple[int, int]],
               names: list[tuple[int, int]] = ()) -> list[Clause]:  # type: ignore[assignment]
    """The clauses of each sentence (see :class:`Clause`), in the order of the text."""
    name_starts = {s for s, _ in names}
    name_end = {s: e for s, e in names}
    out: list[Clause] = []
    for n, (s0, s1) in enumerate(sentence_spans):
        body_end = s1
        while body_end > s0 and (text[body_end - 1].isspace() or text[body_end - 1] in ".!?;。！？；"):
            body_end -= 1
        out.extend(_sentence_clauses(text, s0, body_end, n, name_starts, name_end))
    return out


def _sentence_clauses(text: str, s0: int, s1: int, n: int, name_starts: set[int],
                      name_end: dict[int, int]) -> list[Clause]:
    cuts: dict[int, tuple[str, str]] = {}  # position -> (kind, opener)
    nested: list[tuple[int, int, str, str]] = []  # start, end, kind, opener
    segment = text[s0:s1]
    cjk = sum(1 for c in segment if is_cjk_char(c)) > len(segment) // 3
    if cjk:
        for m in _CJK_CUT.finditer(text, s0, s1):
            cuts[m.end()] = ("coord", m.group(0))
    else:
        _english_cuts(text, s0, s1, cuts, nested, name_starts, name_end)
    for m in re.finditer(r"\(([^()]*)\)|（([^（）]*)）|——([^—]*)——|—([^—]+)—", text[s0:s1]):
        nested.append((s0 + m.start(), s0 + m.end(), "paren", m.group(0)[0]))
    nested = _outermost(nested)
    main: list[tuple[int, int]] = []
    pos = s0
    for a, b, _, _ in nested:
        if a > pos:
            main.append((pos, a))
        pos = max(pos, b)
    if pos < s1:
        main.append((pos, s1))
    clauses: list[Clause] = []
    points = sorted(p for p in cuts if s0 < p < s1 and not any(a < p < b for a, b, _, _ in nested))
    pieces = _cut(main, points)
    kind, opener = "main", ""
    for piece_spans, begin in pieces:
        if begin in cuts:
            kind, opener = cuts[begin]
        if piece_spans:
            clauses.append(Clause(Unit(tuple(piece_spans)), kind, n, opener))
        kind, opener = "main", ""
    for a, b, k, opener in nested:
        inner = (a + 1, b - 1) if k == "paren" else (a + 1, b) if k == "sub" else (a, b)
        if inner[1] > inner[0]:
            clauses.append(Clause(Unit((inner,)), k, n, opener))
    clauses.sort(key=lambda c: c.unit.start)
    return clauses


def _cut(main: list[tuple[int, int]], points: list[int]) -> list[tuple[list[tuple[int, int]], int]]:
    """Split the spans of a sentence's main text at ``points``: (spans, where each piece begins)."""
    out: list[tuple[list[tuple[int, int]], int]] = []
    current: list[tuple[int, int]] = []
    begin = main[0][0] if main else 0
    k = 0
    for a, b in main:
        start = a
        while k < len(points) and points[k] <= start:
            k += 1
        while k < len(points) and points[k] < b:
            p = points[k]
            if p > start:
                current.append((start, p))
            out.append((current, begin))
            current, begin, start = [], p, p
            k += 1
        if b > start:
            current.append((start, b))
    out.append((current, begin))
    return out


def _outermost(nested: list[tuple[int, int, str, str]]) -> list[tuple[int, int, str, str]]:
    out: list[tuple[int, int, str, str]] = []
    for item in sorted(nested, key=lambda t: (t[0], -t[1])):
        if out and item[0] < out[-1][1]:
            continue
        out.append(item)
    return out


def _english_cuts(text: str, s0: int, s1: int, cuts: dict[int, tuple[str, str]],
                  nested: list[tuple[int, int, str, str]], name_starts: set[int],
                  name_end: dict[int, int]) -> None:
    low = " " * s0 + text[s0:s1].lower()  # offsets as in ``text``, only the sentence lowered
    for m in re.finditer(r"[;:]|\s[—–]\s|—", text[s0:s1]):
        cuts[s0 + m.end()] = ("coord", m.group(0).strip())
    for m in _COMMA_WORD.finditer(text, s0, s1):
        word = m.group(1).lower()
        first = word.split()[0]
        at = m.start(1)
        if first in _RELATIVE:
            end = text.find(",", m.end(), s1)
            nested.append((m.start(), end if end >= 0 else s1, "relative", first))
            continue
        opener = next((w for w in (*_SUBORD, *_COORD) if word == w or word.startswith(w + " ")
                       or first == w), None)
        if opener is None:
            continue
        if opener in _SUBORD:  # ", after a long wait, walks": a clause inside the clause
            end = text.find(",", m.end(), s1)
            nested.append((m.start(), end if end >= 0 else s1, "sub", opener))
            continue
        cuts[at] = ("coord", opener)
    # a sentence that opens with a subordinate, participle or absolute clause: it ends at its
    # first comma ("Seeing Bo stab Ana, Cy screamed": Cy stabbed nobody)
    head = re.match(r"\s*[\"'“‘(]*([A-Za-z]+(?:\s+[A-Za-z]+)?)", text[s0:s1])
    if head is not None:
        word = head.group(1).lower()
        if any(word == w or word.startswith(w + " ") for w in _SUBORD) \
                or opens_with_participle(text, s0, s1, name_starts) is not None:
            comma = text.find(",", s0, s1)
            if comma >= 0:
                cuts.setdefault(comma + 1, ("main", ""))
    # "that" opens a clause (a complement, or a relative one), except "that night" and the like
    for m in re.finditer(r"(?<![\w'’])that(?![\w'’])", low[s0:s1]):
        at = s0 + m.start()
        if _TIME_AFTER_THAT.match(text, at):
            continue
        before = re.findall(r"[a-z]+", low[max(s0, at - 20):at])
        if before and before[-1] in _PREP_BEFORE_THAT:
            continue
        cuts.setdefault(at, ("that", "that"))
    # "told how Lee went ...": "how" before a subject opens a complement, as "that" does
    for m in re.finditer(r"(?<![\w'’])how\s+(?=(?:[A-Z]|(?:he|she|they|the|his|her|their|a|an)\b))",
                         text[s0:s1]):
        cuts.setdefault(s0 + m.start(), ("that", "how"))
    # a subordinator with no comma before a subject: "watched as the crane walks ...",
    # "stayed until Lee came"
    for m in re.finditer(r"\s(as|while|whilst|when|whenever|because|since|until|till|before|after|if|"
                         r"unless|though|although|whereas|once)\s+", low[s0:s1]):
        after = s0 + m.end()
        nxt = re.match(r"[A-Za-z'’-]+", text[after:s1])
        if after in name_starts or (nxt is not None and (nxt.group(0).lower() in _PRONOUN_SUBJECT
                                                          or nxt.group(0).lower() in _DETERMINERS)):
            cuts.setdefault(s0 + m.start() + 1, ("sub", m.group(1)))
    # a conjunction with no comma before a new subject and its verb, or before a verb
    for m in re.finditer(r"\s(and then|and|but|then|yet)\s+", low[s0:s1]):
        at = s0 + m.start() + 1
        after = s0 + m.end()
        prev = text[max(s0, at - 40):at].rstrip()
        word = re.match(r"[A-Za-z'’-]+", text[after:s1])
        if after in name_starts:
            if _name_ends_at(name_end, at):
                continue  # "Lin Yuan and Su Qing walk ...": two names, one subject
            rest = name_end[after]
            verb = re.match(r"\s*(?:[a-z]+ly\s+)?([A-Za-z'’-]+)", text[rest:s1])
            if verb is not None and _is_verb_form(verb.group(1)):
                cuts.setdefault(at, ("coord", m.group(1)))
            continue
        if word is None or not prev:
            continue
        w = word.group(0).lower()
        before = re.findall(r"[A-Za-z'’-]+", prev)
        if w in _PRONOUN_SUBJECT:
            cuts.setdefault(at, ("coord", m.group(1)))
        elif m.group(1) in ("and then", "then") or (
                _is_verb_form(w) and not w.endswith("ing")
                and not (before and not _name_ends_at(name_end, at)
                         and (_is_verb_form(before[-1]) or before[-1].lower().endswith("ing")))):
            cuts.setdefault(at, ("vp", m.group(1)))  # "took the ring and walked"; not "soaked and shivering"


_ABSOLUTE = re.compile(
    r"\s*(?:her|his|their|its|my|our|your|the)\s+[a-z'’-]+(?:\s+[a-z'’-]+)?\s+"
    r"(?:still|already|half|all|[a-z]+ing\b|[a-z]+(?:ed|en)\s+(?:with|in|by|behind|to|at|from|up|"
    r"tight|shut|together))", re.IGNORECASE)


def opens_with_participle(text: str, s0: int, s1: int, name_starts: set[int] | frozenset[int] = frozenset()
                          ) -> int | None:
    """Where the participle is when the sentence at ``s0`` opens with a participle clause
    ("Having given ...", "Seeing Bo ...", "Summoned by ...") or an absolute one ("Her wrists
    bound with a sash", "The bracelet still in his sleeve") that a comma closes: such a clause
    has no subject of its own, so nothing in it is the subject of the clause after its comma."""
    first = re.match(r"\s*[\"'“‘(]*([A-Za-z]+)", text[s0:s1])
    comma = text.find(",", s0, s1)
    if first is None or comma < 0 or s0 + first.start(1) in name_starts:
        return None
    at = s0 + first.start(1)
    word = first.group(1)
    if not word[0].isupper():
        return None
    low = word.lower()
    if low in _PREPOSITIONS:
        return None
    from narrative.diffusers.inflect import is_inflected_verb, parts_of_speech

    if low.endswith("ing") and "verb" in parts_of_speech(low):
        return at
    if (low.endswith(("ed", "en")) or low in _IRREGULAR_PARTICIPLES) and is_inflected_verb(low) \
            and re.match(r"[A-Za-z]+\s+(?:by|with|in|to|from|at|and|for)\b", text[at:comma]):
        return at
    if _ABSOLUTE.match(text, at, comma):
        return at
    return None


# participles that have become prepositions: "According to the barkeep, Quinn had gone" is a
# frame over the clause after its comma, not a clause of its own whose subject that clause gives
_PREPOSITIONS = frozenset({"according", "regarding", "concerning", "considering", "including",
                           "excepting", "barring", "owing", "pending", "notwithstanding"})

_IRREGULAR_PARTICIPLES = frozenset({"bound", "caught", "held", "led", "brought", "sent", "struck",
                                    "torn", "worn", "thrown", "drawn", "shaken", "stung", "wound"})


def _name_ends_at(name_end: dict[int, int], at: int) -> bool:
    """Whether a name ends right before the conjunction at ``at`` (whitespace between)."""
    ends = _ends_of(name_end)
    k = bisect.bisect_right(ends, at) - 1
    return k >= 0 and at - ends[k] <= 1


_ENDS: dict[int, tuple[dict[int, int], list[int]]] = {}


def _ends_of(name_end: dict[int, int]) -> list[int]:
    cached = _ENDS.get(id(name_end))
    if cached is None or cached[0] is not name_end:
        _ENDS.clear()
        cached = (name_end, sorted(name_end.values()))
        _ENDS[id(name_end)] = cached
    return cached[1]


# --- the analysis ---------------------------------------------------------------------------

class Analysis:
    """The sentences, clauses and cues of one text."""

    def __init__(self, lex: Lexicon, text: str, names: Iterable[tuple[int, int]] = ()) -> None:
        self.lex = lex
        self.text = text
        self.names = sorted(names)
        self.sentences = lex.sentences(text)
        self._sentence_starts = [s for s, _ in self.sentences]
        self.clauses = clauses_of(text, self.sentences, self.names)
        self.units = [c.unit for c in self.clauses]
        self._unit_starts = [u.start for u in self.units]
        # clause ends (for clause scopes) and phrase ends (for phrase scopes)
        ends = list(lex.end_rx.finditer(text))
        self.clause_ends = sorted({m.start() for m in PUNCT_BOUNDARY.finditer(text)}
                                  | {s for s, _, k in ends if "boundary" in lex.end_kinds[k]}
                                  | {c.unit.start for c in self.clauses if c.kind != "main"})
        self.phrase_ends = sorted(set(self.clause_ends) | {s for s, _, _ in ends})
        self.cues: list[Cue] = []
        self.factive: list[tuple[int, int]] = []
        self.governors: list[tuple[int, int, str]] = []  # (start, end, kind) of governing words
        self.bare_governors: list[tuple[int, int]] = []
        self.implicatives: list[tuple[int, int]] = []
        name_list = self.names
        whole_names = set(name_list)
        self.figures = [(a, b) for a, b, _ in lex.figures_rx.finditer(text)
                        if not _inside_name(name_list, a, b)]
        """Where a figure of speech or an idiom stands: it is read whole, so no rule's word
        ("笑死了") and no cue ("头也不回") is read inside it."""
        figures = self.figures
        for start, end, k in lex.cue_rx.finditer(text, lambda a, b: _inside_name(name_list, a, b)):
            if _inside_name(name_list, start, end) or (start, end) in whole_names:
                continue  # a cue inside a matched name, or one that is the name ("Hope"), is no cue
            if figures and any(a <= start and end <= b for a, b in figures):
                continue
            term = lex.terms[k]
            if term in lex.bare:
                self.bare_governors.append((start, end))
            if term in lex.implicative:
                self.implicatives.append((start, end))
            for kind, role in sorted(lex.roles[k]):
                if kind == "marker":
                    continue
                if kind == "factive":
                    self.factive.append((start, end))
                    continue
                if role == "that":
                    self.governors.append((start, end, kind))
                    continue
                governs = kind in lex.governs
                reach = lex.scope[kind]
                if role == "forward" and kind in _CLAUSE_BOUND_ZH and is_cjk_char(term[0]):
                    # a Chinese complement ends with its clause ("梦见库克向他开枪，惊醒之后便去了外滩")
                    governs, reach = True, "unit"
                    if kind in _FRAMES_ZH:
                        # a dream, a memory or a story goes on over the clauses that continue it
                        # ("梦见师兄闯进洞府，一剑杀了她"), until the sentence returns to its now
                        reach = "sentence"
                if role == "forward" and governs:
                    self.governors.append((start, end, kind))
                scope = self._scope(start, end, role, reach, governs,
                                    listener=kind in ("reported", "imagined", "framed"))
                if scope is not None:
                    self.cues.append(Cue(kind, text[start:end], start, end, *scope))
        self._quotes()
        self._vocatives()
        self._that_clauses()
        self._waiting()

    def _waiting(self) -> None:
        """A time to come and what is to happen then: both are the future.

        "等雪停了，太子就去文渊阁" (once the snow stops, the prince will go): a sentence that
        opens with 等 and whose main clause has no 了, 过 or 已 tells what will be; "等侍卫们把他捞
        上来的时候，人已经没气了" happened. "Once the storm passes, Grace will drive": a clause of
        time (once, as soon as, when, after, before, until) whose main clause holds a future
        ("will", "shall", "'ll", "is going to") is the future too, and so is all of its sentence.
        """
        for s0, s1 in self.sentences:
            head = _WAIT_ZH.match(self.text, s0, s1)
            if head is not None:
                comma = _CJK_CUT.search(self.text, head.end(), s1)
                main = self.text[comma.end():s1] if comma else ""
                if comma and not _REALIS_ZH.search(main):
                    self.cues.append(Cue("future", head.group(1), head.start(1), head.end(1),
                                         head.start(1), s1))
                continue
            when = _WHEN_EN.match(self.text, s0, s1)
            if when is None:
                continue
            at = self.text.find(",", when.end(), s1)
            if at >= 0 and _FUTURE_EN.search(self.text, at, s1):
                self.cues.append(Cue("future", when.group(1), when.start(1), when.end(1),
                                     when.start(1), s1))

    def _vocatives(self) -> None:
        """"伊娜，去码头！": a name called at the start of a sentence, then an order to it (an
        exclamation whose verb has no 了 or 过); nothing of it happened yet."""
        for s0, s1 in self.sentences:
            m = _VOCATIVE_ZH.match(self.text, s0, s1)
            if m is None or not any(a == m.start(1) and b == m.end(1) for a, b in self.names):
                continue
            self.cues.append(Cue("ordered", m.group(1), m.start(1), m.end(1), m.end(), s1))

    def _quotes(self) -> None:
        """Words in quotation marks are what someone says: reported, not narrated."""
        for m in _QUOTE.finditer(self.text):
            inner = m.group(0)[1:-1]
            if len(re.findall(r"\w+", inner)) >= 2 or sum(1 for c in inner if is_cjk_char(c)) >= 4:
                self.cues.append(Cue("reported", m.group(0)[0], m.start(), m.start() + 1,
                                     m.start() + 1, m.end() - 1))

    # --- positions -----------------------------------------------------------------------

    def index_of(self, clause: Clause) -> int:
        """The position of ``clause`` in :attr:`clauses`."""
        if getattr(self, "_clause_index", None) is None:
            self._clause_index = {id(c): i for i, c in enumerate(self.clauses)}
        return self._clause_index[id(clause)]

    def sentence_index(self, pos: int) -> int:
        return max(0, bisect.bisect_right(self._sentence_starts, pos) - 1)

    def sentence_of(self, pos: int) -> tuple[int, int]:
        k = bisect.bisect_right(self._sentence_starts, pos) - 1
        return self.sentences[max(k, 0)]

    def clause_of(self, pos: int) -> Clause | None:
        """The clause holding ``pos`` (a nested clause wins over the one it interrupts)."""
        k = bisect.bisect_right(self._unit_starts, pos) - 1
        best: Clause | None = None
        for j in range(k, max(-1, k - 6), -1):
            c = self.clauses[j]
            if any(a <= pos < b for a, b in c.unit.spans) and (
                    best is None or c.unit.start > best.unit.start):
                best = c
        return best

    def _next(self, ends: list[int], after: int, limit: int) -> int:
        k = bisect.bisect_left(ends, after)
        return min(ends[k], limit) if k < len(ends) else limit

    def clause_start(self, pos: int) -> int:
        s0, _ = self.sentence_of(pos)
        k = bisect.bisect_right(self.clause_ends, pos) - 1
        return max(s0, self.clause_ends[k] + 1) if k >= 0 else s0

    def _scope(self, start: int, end: int, role: str, reach: Scope, governs: bool,
               listener: bool = False) -> tuple[int, int] | None:
        """The span a cue at ``[start, end)`` governs. ``listener``: a verb of telling, dreaming
        or framing, whose clause may hold only the one told or nothing at all, what it governs in
        the next clause ("告诉苏晴，林远来到了渡口", "梦里，林雪回到了山门"), unless that clause
        returns to the story's present ("做了个噩梦，醒来后去了磨坊"); a verb of believing or
        suspecting takes its object in its own clause ("舰长怀疑奥卡福，奥卡福也怀疑舰长": the
        second clause is told, not suspected)."""
        s0, s1 = self.sentence_of(start)
        before, after = self.text[s0:start], self.text[end:s1]
        if role == "forward":
            if reach == "sentence" or _COLON_AFTER.match(self.text, end, s1):
                # "盘算着：先…再…然后…": what the colon opens is the plan
                return end, self._until_awake(end, s1)
            if reach == "unit" or governs:
                clause = self.clause_of(start)
                stop = clause.unit.end if clause is not None else s1
                if governs and listener and clause is not None \
                        and self._only_names(end, stop, punctuation=True) \
                        and not self._tags_a_quote(clause.unit.start, start) \
                        and not self._awake_at(stop):
                    stop = self._next_clause_end(clause, stop)  # "告诉苏晴，林远来到了渡口"
                return end, max(end, stop)
            ends = self.phrase_ends if reach == "phrase" else self.clause_ends
            return end, self._next(ends, end, s1)
        if role == "both":
            if reach in ("unit", "clause"):
                clause = self.clause_of(start)
                if clause is not None:
                    return clause.unit.start, clause.unit.end
            return s0, s1
        if role == "initial":
            return (s0, s1) if _WORDLESS.match(before) else None
        if role == "final":
            return (s0, s1) if _WORDLESS.match(after) else None
        # backward: "..., Old Zhou claims." - the cue closes its sentence, after a clause
        words = re.findall(r"\w+", after)
        if is_cjk_char(self.text[start]):  # a run of Chinese is one \w+: count its characters
            words = [c for c in after if is_cjk_char(c)]
        clause_start = self.clause_start(start)
        if len(words) > _WORDS_AFTER or clause_start <= s0 or not any(
                s0 <= b < start for b in self.clause_ends):
            return None
        if self._negated_tag(start):
            return None  # "一句话也没说": said nothing, reports nothing
        return s0, clause_start

    def _until_awake(self, start: int, end: int) -> int:
        """``end``, or where a return to the story's present (醒来后, "woke") stands before it."""
        rx = self.lex.reality_rx
        if rx is None:
            return end
        found = budget.search(rx, self.text, start, end)
        return found.start() if found is not None else end

    def _awake_at(self, pos: int) -> bool:
        """Whether the clause after ``pos`` opens with a return to the story's present (醒来后,
        "woke"): what a dream or a story governs ends there."""
        rx = self.lex.reality_rx
        if rx is None:
            return False
        m = re.compile(r"[\s，,；;：:—]*").match(self.text, pos)
        return budget.match(rx, self.text, m.end() if m else pos) is not None

    def _tags_a_quote(self, clause_start: int, start: int) -> bool:
        """Whether the verb at ``start`` is a dialogue tag: a quotation closes in its clause before
        it ('"Take the key," Ada said, and pressed it ...'). What it says is the quotation; the
        clause after the tag is the narrator's again."""
        s0, _ = self.sentence_of(start)
        return any(s0 <= m.end() <= start and m.end() > clause_start - 2
                   for m in _QUOTE.finditer(self.text, s0, start))

    def _negated_tag(self, start: int) -> bool:
        before = self.text[max(0, start - 3):start]
        return any(c in before for c in "没不未") or bool(re.search(r"\b(?:not|never)\s*$", before))

    # --- "that"-clauses --------------------------------------------------------------------

    def _that_clauses(self) -> None:
        """Give each "that"-clause the status of what governs it (see the module docstring)."""
        for i, clause in enumerate(self.clauses):
            if clause.kind != "that":
                continue
            at = clause.unit.start
            stop = self._clause_stop(i)
            status, kind, word = self._governor_before(at, clause.sentence)
            # whatever covers the words before "that" covers the clause it opens
            covered = False
            for n, c in enumerate(self.cues):
                if c.scope_start <= at - 1 < c.scope_end or c.start <= at < c.end:
                    self.cues[n] = replace(c, scope_end=max(c.scope_end, stop))
                    covered = True
            if covered and status == "unknown":
                continue  # asserted by nothing already, for a reason narr knows ("recalls how")
            if status == "noun" and kind is not None:
                self.cues.append(Cue(kind, word, at, at, at, stop))
            elif status == "unknown":
                self.cues.append(Cue("unsure", word, at, at, at, stop))
            elif status == "purpose":
                self.cues.append(Cue("infinitive", "so that", at, at, at, stop))

    def _clause_stop(self, i: int) -> int:
        """The end of clause ``i`` with the "and"-continuations (no comma) that share its subject."""
        stop = self.clauses[i].unit.end
        j = i + 1
        while j < len(self.clauses) and self.clauses[j].kind == "vp" \
                and self.clauses[j].sentence == self.clauses[i].sentence:
            stop = self.clauses[j].unit.end
            j += 1
        return stop

    def _governor_before(self, at: int, sentence: int) -> tuple[str, str | None, str]:
        """What governs the "that" at ``at``: ``factive``, ``governed`` (a verb narr knows),
        ``noun`` (a noun that governs, with its kind: "the story that"), ``relative`` (another
        noun), ``purpose`` ("so that"), ``asserted`` ("now that") or ``unknown``; and the word."""
        s0, _ = self.sentences[sentence]
        window_start = max(s0, _start_of_words_before(self.text, at, GOVERNOR_REACH))
        near = [e for _, e in self.factive if window_start <= e <= at + 4]
        gov = [e for _, e, _ in self.governors if window_start <= e <= at + 4]
        if near and (not gov or max(near) >= max(gov)):
            return "factive", None, "that"
        if gov:
            nearest = max(gov)
            kinds = [(e, k, self.text[a:e]) for a, e, k in self.governors if e == nearest]
            kind = kinds[0][1] if kinds else None
            covered = any(c.kind == kind and c.start < nearest <= c.end for c in self.cues)
            return ("governed", None, "that") if covered or kind is None else \
                ("noun", kind, kinds[0][2])
        words = re.findall(r"[A-Za-z'’-]+", self.text[window_start:at].lower())
        if words and words[-1] == "so":
            return "purpose", None, "so that"
        if words and words[-1] in ("now", "given", "except", "such", "provided", "providing"):
            return "asserted", None, words[-1]
        for w in reversed(words[-7:]):  # "the word on Foochow Road was that ..."
            if w in self.lex.governing_nouns:
                return "noun", self.lex.governing_nouns[w], w
        last = self._word_before(at)
        if last is None:
            return "asserted", None, "that"
        if any(0 <= at - e <= 2 and not self.text[e:at].strip(" ,") for _, e in self.names):
            return "unknown", None, last  # "begged Lee that": a verb before the name narr does not know
        from narrative.diffusers.inflect import parts_of_speech

        tags = parts_of_speech(last.lower())
        determined = len(words) >= 2 and words[-2] in _DETERMINERS
        if "noun" in tags and (determined or not ({"verb", "adj", "aux"} & tags)):
            return "relative", None, last  # "the lantern that hung from the beam"
        if last.lower() in _OBJECT_PRONOUN or {"verb", "adj", "aux"} & tags:
            return "unknown", None, last
        return ("relative", None, last) if "noun" in tags else ("asserted", None, last)

    def _word_before(self, at: int) -> str | None:
        m = re.search(r"([A-Za-z'’-]+)[\s,]*$", self.text[max(0, at - 40):at])
        return m.group(1) if m else None

    # --- verbs in their base form --------------------------------------------------------

    def base_verb(self, verb: tuple[int, int], subject: tuple[int, int] | None) -> Cue | None:
        """What an English verb in its base form ("take", not "took") stands under, when its
        form says it is not the clause's own verb: after "to", an infinitive (a purpose or a
        plan) unless an implicative verb comes first ("managed to", "came to"); after a
        singular subject, the complement of the verb before that subject, which asserts the
        action only for a verb of perceiving or causing ("watched Bo take", "made Bo go");
        another verb there is one narr does not know (``unsure``)."""
        start, end = verb
        if subject is not None and subject[1] <= start and \
                re.fullmatch(r"\s*,\s*", self.text[subject[1]:start]) and \
                _WORDLESS.match(self.text[self.sentence_of(subject[0])[0]:subject[0]]):
            # "Ana, go to the Tower!": a name called, then an order to it
            return Cue("ordered", self.text[subject[0]:subject[1]], subject[0], subject[1], start, end)
        words = list(_TOKEN.finditer(self.text, max(0, start - 200), start))
        words = [w for w in words if not (w.group(0).endswith("ly") and w.group(0).islower())
                 or w.group(0) in ("only", "early")]
        if not words:
            return None
        last = words[-1]
        between = self.text[last.end():start]
        if between.strip() and not self._only_names(last.end(), start):
            return None
        word = last.group(0).lower()
        if word == "to":
            if self._after_implicative(last.start()):
                return None
            return Cue("infinitive", "to", last.start(), last.end(), last.start(), end)
        if word in _MODALS or subject is None or subject[1] > start:
            return None
        if re.search(r"(?<![\w'])(?:and|&)(?![\w'])|,", self.text[subject[1]:start]):
            return None  # "Lin Yuan and Su Qing walk": a plural subject
        head = self.text[subject[0]:subject[1]].lower()
        if head in ("they", "we", "you", "i", "them"):
            return None
        before = [w for w in _TOKEN.finditer(self.text, max(0, subject[0] - 80), subject[0])]
        if not before or self.text[before[-1].end():subject[0]].strip():
            return None
        gov = before[-1]
        if any(a <= gov.start() and gov.end() <= b + 1 for a, b in self.bare_governors) \
                or any(a <= gov.start() < b for a, b in self.bare_governors):
            return None
        from narrative.diffusers.inflect import parts_of_speech

        tags = parts_of_speech(gov.group(0).lower())
        if "verb" in tags or "aux" in tags:
            return Cue("unsure", gov.group(0), gov.start(), gov.end(), gov.start(), end)
        return None

    def _next_clause_end(self, clause: Clause, stop: int) -> int:
        """The end of the clause after ``clause`` in its sentence (and its continuations)."""
        i = self.index_of(clause)
        if i + 1 < len(self.clauses) and self.clauses[i + 1].sentence == clause.sentence:
            return max(stop, self._clause_stop(i + 1))
        return stop

    def _only_names(self, start: int, end: int, punctuation: bool = False) -> bool:
        """Whether only names, object pronouns and spaces (and with ``punctuation``, quotes and
        punctuation) stand in ``[start, end)``."""
        pos = start
        k = bisect.bisect_left(self.names, (start, -1))
        text = self.text
        while pos < end:
            if text[pos].isspace() or (punctuation and not text[pos].isalnum()):
                pos += 1
                continue
            if punctuation and text[pos] in _ZH_PRONOUNS:
                pos += 1
                continue
            if k < len(self.names) and self.names[k][0] == pos:
                pos = self.names[k][1]
                k += 1
                continue
            m = _TOKEN.match(text, pos)
            if m is None or m.end() > end or m.group(0).lower() not in _OBJECT_PRONOUN:
                return False
            pos = m.end()
        return True

    def _after_implicative(self, to_start: int) -> bool:
        """Whether an implicative verb ("managed", "came") stands before the "to" at ``to_start``,
        an object (a name, a pronoun) between them allowed."""
        for _, b in self.implicatives:
            if b <= to_start and (not self.text[b:to_start].strip()
                                  or self._only_names(b, to_start)):
                return True
        return False

    # --- what blocks a rule ----------------------------------------------------------------

    def drop_before(self, starts: set[int]) -> None:
        """Forget negations standing right before a name set aside ("不是苏晴", "not Su Qing"):
        they exclude the name, they do not negate the verb."""
        def excludes(c: Cue) -> bool:
            return c.kind == "negated" and any(
                0 <= s - c.end <= 4 and self.text[c.end:s].strip().lower() in ("", "是", "even")
                for s in starts)

        self.cues = [c for c in self.cues if not excludes(c)]

    def _cues_near(self, words: list[tuple[int, int]]) -> list[Cue]:
        """The cues of the sentences holding ``words`` (a cue never reaches past its sentence)."""
        if getattr(self, "_indexed", None) is not self.cues:
            self._by_sentence: dict[int, list[Cue]] = {}
            for cue in self.cues:
                k = bisect.bisect_right(self._sentence_starts, cue.start) - 1
                self._by_sentence.setdefault(k, []).append(cue)
            self._indexed = self.cues
        keys = {bisect.bisect_right(self._sentence_starts, s) - 1 for s, _ in words}
        return [c for k in sorted(keys) for c in self._by_sentence.get(k, ())]

    def negation_between(self, start: int, end: int) -> Cue | None:
        """A negation standing wholly between ``start`` and ``end`` (in one sentence)."""
        for cue in self._cues_near([(start, end)]):
            if cue.kind == "negated" and start <= cue.start and cue.end <= end:
                return cue
        return None

    def blocking(self, words: list[tuple[int, int]]) -> Cue | None:
        """The cue governing the rule's own words (the innermost: the nearest before them)."""
        best: Cue | None = None
        for cue in self._cues_near(words):
            if any(cue.start < e and s < cue.end for s, e in words):
                if any(s <= cue.start and cue.end <= e for s, e in words):
                    continue  # the cue is the rule's own word ("听说", "not" in "no longer")
                return cue  # the rule's word is part of a cue: "believes that" is not "believes"
            if any(cue.scope_start <= s < cue.scope_end for s, _ in words) and (
                    best is None or _nearer(cue, best, words)):
                best = cue
        return best


_ZH_PRONOUNS = "我你他她它们大家众人"
_COLON_AFTER = re.compile(r"[着了道]?\s*[：:]\s*(?![“\"「『])")
_WAIT_ZH = re.compile(r"[\s“「]*(等到|等着|等|待到|待)(?=[^，,。]{1,30}[，,])")
_REALIS_ZH = re.compile(r"了|过|已")
_WHEN_EN = re.compile(r"[\s\"“]*(once|as soon as|the moment|the minute|when|after|before|until|till)\b",
                      re.IGNORECASE)
_FUTURE_EN = re.compile(r"(?<![\w'’])(?:will|shall|won't|is going to|are going to|am going to)(?![\w'’])|"
                        r"['’]ll\b", re.IGNORECASE)
_VOCATIVE_ZH = re.compile(r"\s*[“「]?([^\W\d_]{1,8}?)\s*[，,]\s*"
                          r"(?=[\u4e00-\u9fff][^。！？\n了过]{0,30}[！!]+[”」]?\s*$)")
_QUOTE = re.compile(r"“[^”\n]{2,}”|\"[^\"\n]{2,}\"|「[^」\n]{2,}」|『[^』\n]{2,}』")
# kinds whose Chinese cues govern their own clause only (and the next one when theirs holds no
# more than an object: "告诉苏晴，林远来到了渡口")
_CLAUSE_BOUND_ZH = frozenset({"reported", "believed", "denied", "imagined", "framed"})
_FRAMES_ZH = frozenset({"imagined", "framed"})
_MODALS = frozenset({"will", "would", "can", "could", "shall", "should", "may", "might", "must", "do",
                     "does", "did", "not", "never", "'ll", "let's", "cannot", "dare", "need"})


def _inside_name(names: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``[start, end)`` lies inside a name without covering all of it."""
    k = bisect.bisect_right(names, (start, 1 << 60)) - 1
    for j in range(max(0, k - 1), min(len(names), k + 2)):
        a, b = names[j]
        if a <= start and end <= b and (a, b) != (start, end) and b > a:
            return True
        if a < start < b <= end or start <= a < end < b:
            return True
    return False


def _start_of_words_before(text: str, at: int, n: int) -> int:
    """Where the ``n`` words before ``at`` begin."""
    found = list(_TOKEN.finditer(text, max(0, at - 12 * n), at))
    return found[-n].start() if len(found) >= n else max(0, at - 12 * n)


# When two cues start at the same word ("Will ...?": a question and a future), the one
# framing the whole sentence names the reason.
_PRIORITY = ("question", "hypothetical", "framed", "reported", "believed", "denied", "imagined",
             "earlier", "habitual", "future", "ordered", "modal", "intended", "infinitive", "unsure",
             "unrealised", "hesitated", "almost", "negated")


def _nearer(a: Cue, b: Cue, words: list[tuple[int, int]]) -> bool:
    first = min(s for s, _ in words)
    return ((abs(first - a.start), _PRIORITY.index(a.kind) if a.kind in _PRIORITY else 99)
            < (abs(first - b.start), _PRIORITY.index(b.kind) if b.kind in _PRIORITY else 99))
