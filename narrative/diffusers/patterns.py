"""Rule patterns: a few words, ``@classes`` and ``{slots}``, matched against an event's text.

A pattern is literal words, ``@class`` names, ``{var}`` slots and ``(a|b|c)``
alternatives, for example ``{who} @go (to|into) {place}`` or ``{who}(来到|走到){place}``:

- Words match case-insensitively. A word written in Latin letters matches a
  whole word only (``walk`` does not match ``walkway``), and a trailing ``*``
  takes any ending (``walk*``: walks, walked, walking). Chinese (and Japanese,
  Korean) words match without spaces.
- ``@go`` stands for every phrase of the class ``go`` (:mod:`narrative.diffusers.classes`):
  hundreds of verbs with all their forms, phrasal verbs whose object may stand
  inside them ("finished Cook off"), Chinese verbs and resultative compounds. An
  alternative may name a class: ``(@kill|~shoot dead)``.
- ``~verb`` stands for every English form of the verb, irregular ones included
  (``~go``: go, goes, went, gone, going; ``~pick up``: picks up, picked up ...),
  from :mod:`narrative.diffusers.inflect`. Only the word after ``~`` is inflected.
- A slot is filled by one node that the text names by name or alias (found with
  the world's own name index, longest name first), and that the variable's
  constraints accept.
- Other words may stand between the parts ("Lin Yuan, soaked, walks slowly to
  the ferry" matches the pattern above), at most 60 characters between two parts,
  but a match never leaves one clause (:class:`Unit`): not across the end of a
  sentence, a semicolon, a comma and a conjunction, "that", a relative clause.
- Words are found once per text, leftmost and longest among every word, phrase and
  class member of every rule (a word inside a longer one is not that word: "死了" is
  not read inside "打死了" when "打死" is a word of some rule), and never inside a
  name the text spells out ("a cue inside a matched name is not a cue").
- A Chinese negation (不 没 未 别) right before a word of the pattern blocks the match
  ("林远不去藏经阁"); one that is part of the pattern's own word ("不见了") does not.
- Where a pattern matches several ways, the tightest match wins: in "Su Qing
  watches Lin Yuan walk to the ferry", ``{who} walk to {place}`` binds Lin Yuan.
  A match records how many characters inside it no part covered (``skipped``), so
  that between rules the more specific match can win.

Matching is linear in the text: one scan finds every name and every word any rule
uses; a pattern is then tried only on the clauses holding all of its words and a
candidate for each of its slots, as a small expression over marker characters (one
for each name and word it may take). A world's rules cannot inject an expression
of their own; what is made of them still matches within the event's time budget
(:mod:`narrative.diffusers.budget`), since a pattern of many parts over a clause
full of its words can take exponential time (each gap tries every way), and a
world can write thousands of words and class entries: the expressions (a pattern's
shape, its ``unless`` words) are compiled there, and the word scan checks the
same deadline.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from narrative.diffusers import budget, classes

if TYPE_CHECKING:
    import regex

MAX_PARTS = 12
MAX_FORMS = 64  # forms one alternative may expand to ("~go ~run" is 5 x 5)
MAX_GAP = 60  # characters between two parts of a pattern: a clause, not a chapter
GAP = rf"[^\n]{{0,{MAX_GAP}}}?"
NEGATIONS = "不没未别"  # 莫 is also a surname (莫长老): not a negation here
DOUBLE_NEGATIVES = ("不得不", "不能不", "不会不", "不可能不", "没法不", "不敢不")
MARK_BASE = 0xF0000  # one private-use character stands for each name or word in the text
JOINER = "\u2063"  # stands where a clause is interrupted by another ("Lee, who ..., walked")
FILLER = "\u2062"  # the rest of a word after its marker
SENTENCE_END = re.compile(r"[.!?;。！？；\n]+")
_SLOT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_CLASS_REF = re.compile(r"^@([a-z][a-z0-9-]{0,39}(?:\.ed)?)$")
_CLASS_SPLIT = re.compile(r"(@[a-z][a-z0-9-]{0,39}(?:\.ed)?)(?![a-z0-9-])")
_BAD_STAR = re.compile(r"\*(?!\s|$)|(?:^|\s)\*")
_TOKEN = re.compile(r"[A-Za-z0-9]+(?:['’][A-Za-z]+)*(?:-[A-Za-z0-9]+)*")
_PARTICLE_STOP = re.compile(r"[,;:.!?，；：。！？\n]")
PARTICLE_REACH = 6  # words between a separable verb and its particle ("finished Oliver Cook off")


class Span(Protocol):
    """What a pattern needs of a mention: where it is in the text."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class Part:
    """One part of a pattern: a slot, or alternative words and classes. ``dropped``: the slot is
    written ``{~item}`` and only an object the words leave out fills it (see
    :mod:`narrative.diffusers.referents`)."""

    slot: str | None = None
    words: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    dropped: bool = False


@dataclass(frozen=True)
class Pattern:
    text: str
    parts: tuple[Part, ...]
    anchored: bool = False  # "^...": only at the start of a clause (a scene's "The next morning")
    spaceless: bool = False  # written as Chinese is, with no space between its parts

    @property
    def chinese(self) -> bool:
        """A pattern written as Chinese is: its classes stand for their Chinese words only.

        "{who}(@go|@arrive){place}" would otherwise read "Ana ran from the Tower" as going
        there, its gaps swallowing the English words that say where to.
        """
        return self.spaceless or any(is_cjk_char(c) for p in self.parts for w in p.words for c in w)

    @property
    def slots(self) -> list[str]:
        return [p.slot for p in self.parts if p.slot is not None]

    @property
    def dropped(self) -> set[str]:
        """The slots only an object the words leave out fills (``{~item}``)."""
        return {p.slot for p in self.parts if p.slot is not None and p.dropped}

    @property
    def classes(self) -> set[str]:
        """The classes the pattern names (``@kill.ed`` names ``kill``)."""
        return {c.removesuffix(".ed") for p in self.parts for c in p.classes}


@dataclass(frozen=True)
class Match:
    """Where a pattern matched (offsets into the original text) and the mention in each slot."""

    start: int
    end: int
    slots: dict[str, int] = field(default_factory=dict)
    blocked_by: str | None = None
    skipped: int = 0  # characters inside the match that no part of the pattern covers
    words: tuple[tuple[int, int], ...] = ()  # where the pattern's own words matched
    bases: tuple[bool, ...] = ()  # for each of ``words``: an English verb in its base form

    @property
    def length(self) -> int:
        return self.end - self.start


# --- parsing --------------------------------------------------------------------------------

@lru_cache(maxsize=8192)
def parse(text: str) -> Pattern:
    """Parse a pattern; a ``ValueError`` says what is wrong with it.

    Patterns are immutable, so one parse serves every rule file read in the process.
    """
    parts: list[Part] = []
    buf: list[str] = []
    anchored = text.startswith("^")
    source, text = text, text[1:] if anchored else text

    def flush() -> None:
        literal = "".join(buf).strip()
        buf.clear()
        if not literal:
            return
        for k, piece in enumerate(_CLASS_SPLIT.split(literal)):
            if k % 2:
                parts.append(Part(classes=(piece[1:],)))
                continue
            piece = piece.strip()
            if "@" in piece:
                raise ValueError(f"pattern {text!r}: '@' starts a class name: lowercase letters, "
                                 f"digits and '-' ({piece!r})")
            if piece:
                parts.append(Part(words=_expand(_check_words(piece, text), text)))

    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "{(":
            close = "}" if c == "{" else ")"
            j = text.find(close, i + 1)
            if j < 0:
                raise ValueError(f"pattern {text!r}: {c!r} is never closed")
            inner = text[i + 1 : j]
            if any(ch in inner for ch in "{}()"):
                raise ValueError(f"pattern {text!r}: brackets cannot nest")
            flush()
            if c == "{":
                dropped = inner.startswith("~")
                name = inner[1:] if dropped else inner
                if not _SLOT_NAME.match(name):
                    raise ValueError(f"pattern {text!r}: {{{inner}}} is not a variable name "
                                     "(lowercase letters, digits, '_'; '~' first for an object "
                                     "the words leave out)")
                parts.append(Part(slot=name, dropped=dropped))
            else:
                alts = tuple(a.strip() for a in inner.split("|"))
                if any(not a for a in alts):
                    raise ValueError(f"pattern {text!r}: empty alternative in ({inner})")
                classes = []
                words: list[str] = []
                for a in alts:
                    ref = _CLASS_REF.match(a)
                    if ref is not None:
                        classes.append(ref.group(1))
                    elif "@" in a:
                        raise ValueError(f"pattern {text!r}: '@' starts a class name ({a!r})")
                    else:
                        words.extend(_expand(_check_words(a, text), text))
                parts.append(Part(words=tuple(dict.fromkeys(words)), classes=tuple(classes)))
            i = j + 1
        elif c in "})|":
            raise ValueError(f"pattern {text!r}: unexpected {c!r}")
        else:
            buf.append(c)
            i += 1
    flush()
    if not any(p.slot is None for p in parts):
        raise ValueError(f"pattern {text!r}: needs at least one word besides its slots")
    if len(parts) > MAX_PARTS:
        raise ValueError(f"pattern {text!r}: more than {MAX_PARTS} parts")
    slots = [p.slot for p in parts if p.slot]
    if len(slots) != len(set(slots)):
        raise ValueError(f"pattern {text!r}: a slot appears twice")
    spaceless = len(parts) > 1 and not any(c.isspace() for c in re.sub(r"\([^)]*\)", "", text))
    return Pattern(source, tuple(parts), anchored, spaceless)


def _check_words(words: str, pattern: str) -> str:
    if _BAD_STAR.search(words):
        raise ValueError(f"pattern {pattern!r}: '*' may only end a word ({words!r})")
    return words


def _expand(words: str, pattern: str) -> tuple[str, ...]:
    """The words with each ``~verb`` token replaced by every form of the verb (``~go`` -> went ...)."""
    if "~" not in words:
        return (words,)
    options: list[tuple[str, ...]] = []
    for token in words.split():
        if not token.startswith("~"):
            if "~" in token:
                raise ValueError(f"pattern {pattern!r}: '~' may only start a word ({words!r})")
            options.append((token,))
            continue
        if token.endswith("*"):
            raise ValueError(f"pattern {pattern!r}: '~' and '*' do not go together ({token!r})")
        try:
            options.append(classes.verb_forms(token[1:]))
        except ValueError as exc:
            raise ValueError(f"pattern {pattern!r}: {exc}") from None
    out = [" ".join(combo) for combo in itertools.product(*options)]
    if len(out) > MAX_FORMS:
        raise ValueError(f"pattern {pattern!r}: {words!r} gives more than {MAX_FORMS} forms")
    return tuple(out)


def _ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


def word_regex(words: str) -> str:
    """The expression for literal words: whole words in Latin script, anywhere in CJK."""
    pieces = []
    for token in words.split():
        star = token.endswith("*")
        core = token[:-1] if star else token
        pieces.append(re.escape(core) + (r"[^\W\d_]*" if star else ""))
    body = r"\s+".join(pieces)
    if _ascii_alnum(words[0]):
        body = r"(?<![A-Za-z0-9])" + body
    if _ascii_alnum(words.rstrip("*")[-1]):
        body += r"(?![A-Za-z0-9])"
    return body


def normalize_text(text: str) -> str:
    """Typographic apostrophes read as plain ones (same length, so offsets stay valid)."""
    return text.replace("\u2019", "'").replace("\u2018", "'")


def is_cjk_char(ch: str) -> bool:
    o = ord(ch)
    return (0x3400 <= o <= 0x9FFF or 0xF900 <= o <= 0xFAFF or 0x20000 <= o <= 0x2FFFF
            or 0x3040 <= o <= 0x30FF or 0xAC00 <= o <= 0xD7AF)


# --- the words of a rule set, found once per text -------------------------------------------

@dataclass(frozen=True)
class _Entry:
    """A phrase some atom is made of: English tokens (``walk*`` a prefix), or Chinese characters."""

    tokens: tuple[str, ...]
    particle: tuple[str, ...]
    atoms: frozenset[int]
    base: bool


@dataclass(frozen=True)
class Occurrence:
    """Where a word, phrase or class member stands in the text, and which atoms it is."""

    start: int
    end: int
    atoms: frozenset[int]
    base: bool = False
    reach: int = 0  # unused: see ``particles``
    particle_start: int = 0
    # for atoms read as a separable verb: (atom, particle end, particle start, only so)
    particles: tuple[tuple[int, int, int, bool], ...] = ()


class Vocabulary:
    """Every word, phrase and class member a set of patterns uses, as *atoms* (ids).

    An atom is one part's alternatives or one class. Built once per process for a
    rule set (:func:`vocabulary`).
    """

    def __init__(self, pats: Iterable[Pattern], classes: object = None) -> None:
        self.ids: dict[tuple[str, object], int] = {}
        self.part_atoms: dict[tuple[str, int], frozenset[int]] = {}
        en: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[set[int], bool]] = {}
        zh: dict[str, set[int]] = {}
        whole: dict[str, set[int]] = {}  # a pattern's own words, which may be a whole name too

        def atom(key: tuple[str, object]) -> tuple[int, bool]:
            if key in self.ids:
                return self.ids[key], False
            self.ids[key] = len(self.ids)
            return self.ids[key], True

        for pattern in pats:
            for pi, part in enumerate(pattern.parts):
                if part.slot is not None:
                    continue
                mine: set[int] = set()
                if part.words:
                    aid, new = atom(("w", tuple(sorted(part.words))))
                    mine.add(aid)
                    if new:
                        for w in part.words:
                            if any(is_cjk_char(c) for c in w):
                                zh.setdefault(w, set()).add(aid)
                                whole.setdefault(w, set()).add(aid)
                            else:
                                toks = tuple(normalize_text(w).lower().split())
                                en.setdefault((toks, ()), (set(), False))[0].add(aid)
                                whole.setdefault(" ".join(toks), set()).add(aid)
                for name in part.classes:
                    zh_only = pattern.chinese
                    aid, new = atom(("c", f"{name} zh") if zh_only else ("c", name))
                    mine.add(aid)
                    if new and classes is not None:
                        past_only = name.endswith(".ed")
                        cls = classes.get(name.removesuffix(".ed"))  # type: ignore[attr-defined]
                        for phrase in () if zh_only else cls.en:
                            if past_only and not phrase.past:
                                continue
                            ids, base = en.setdefault((phrase.tokens, phrase.particle), (set(), False))
                            ids.add(aid)
                            if phrase.base and not base:
                                en[(phrase.tokens, phrase.particle)] = (ids, True)
                        for w in cls.zh:
                            if not past_only:
                                zh.setdefault(w, set()).add(aid)
                self.part_atoms[(pattern.text, pi)] = frozenset(mine)
        self.en_first: dict[str, list[_Entry]] = {}
        self.en_star: list[_Entry] = []
        for (toks, particle), (ids, base) in en.items():
            entry = _Entry(toks, particle, frozenset(ids), base)
            if toks[0].endswith("*"):
                self.en_star.append(entry)
            else:
                self.en_first.setdefault(toks[0], []).append(entry)
        for entries in self.en_first.values():
            entries.sort(key=lambda e: (-len(e.tokens), -len(e.particle)))
        self.en_star.sort(key=lambda e: -len(e.tokens))
        self.whole = {w: frozenset(ids) for w, ids in whole.items()}
        """Literal words of the patterns: where a name the text spells is exactly one of them
        ("the bell" naming the temple bell, in "(the bell|a bell) rings"), it is that word too."""
        self.zh_first: dict[str, list[tuple[str, frozenset[int]]]] = {}
        for w, ids in zh.items():
            self.zh_first.setdefault(w[0], []).append((w, frozenset(ids)))
        for zh_entries in self.zh_first.values():
            zh_entries.sort(key=lambda e: -len(e[0]))

    def atoms_of(self, pattern: Pattern, index: int) -> frozenset[int]:
        return self.part_atoms.get((pattern.text, index), frozenset())

    def scan(self, text: str, taken: Sequence[tuple[int, int]] = (),
             closed: Sequence[tuple[int, int]] = ()) -> list[Occurrence]:
        """Every atom occurrence in ``text``, leftmost and longest, outside the ``taken`` spans
        (names) and the ``closed`` ones (figures of speech)."""
        norm = normalize_text(text)
        shut = sorted([*taken, *closed])
        starts = [s for s, _ in shut]
        ends = list(itertools.accumulate((e for _, e in shut), max))

        def free(a: int, b: int) -> bool:
            k = bisect.bisect_left(starts, b)
            return not (k > 0 and ends[k - 1] > a)

        out: list[Occurrence] = []
        tokens = [(m.start(), m.end(), m.group(0).lower()) for m in _TOKEN.finditer(norm)]
        skip_until = -1
        for i, (s, e, _) in enumerate(tokens):
            if s < skip_until or not free(s, e):
                continue
            budget.check()
            got = self._english_at(norm, tokens, i, free)
            if got is not None:
                out.append(got)
                skip_until = got.end if not got.atoms or got.end > e else e
        if self.zh_first:
            pos = 0
            n = len(norm)
            while pos < n:
                ch = norm[pos]
                cands = self.zh_first.get(ch)
                if cands is None or not free(pos, pos + 1):
                    pos += 1
                    continue
                budget.check()
                # the longest word here, standing for every word of the rules that starts here
                # too ("点亮了" is also "点亮"); a word starting inside it is not read
                longest = 0
                here: set[int] = set()
                for w, ids in cands:
                    if norm.startswith(w, pos) and free(pos, pos + len(w)):
                        longest = max(longest, len(w))
                        here |= ids
                if longest:
                    out.append(Occurrence(pos, pos + longest, frozenset(here)))
                    pos += longest
                else:
                    pos += 1
        for a, b in taken:
            key = " ".join(norm[a:b].lower().split())
            if key in self.whole:
                out.append(Occurrence(a, b, self.whole[key]))
        out.sort(key=lambda o: o.start)
        return out

    def _english_at(self, text: str, tokens: list[tuple[int, int, str]], i: int,
                    free: object) -> Occurrence | None:
        """The longest phrase of the rules starting at token ``i`` (its verb's words; a separable
        verb's particle is looked for after them), standing for every phrase of that length."""
        tok = tokens[i][2]
        cands = [*self.en_first.get(tok, ()), *self.en_star]
        best_n = 0
        found: list[tuple[_Entry, int, int, int]] = []  # entry, particle end and start, tokens
        for entry in cands:
            n = _phrase_length(text, tokens, i, entry.tokens) if len(entry.tokens) > 1 else (
                1 if _token_is(tok, entry.tokens[0]) else 0)
            if not n or len(entry.tokens) < best_n:
                continue
            if not free(tokens[i][0], tokens[i + n - 1][1]):  # type: ignore[operator]
                continue
            reach = start = 0
            if entry.particle:
                reach, start = _particle_follows(text, tokens, i + n, entry.particle)
                if not reach:
                    continue
            if len(entry.tokens) > best_n:
                best_n, found = len(entry.tokens), []
            found.append((entry, reach, start, n))
        if not found:
            return None
        atoms: set[int] = set()
        plain: set[int] = set()
        particles: dict[int, tuple[int, int]] = {}
        for entry, reach, start, _ in found:
            atoms |= entry.atoms
            if not entry.particle:
                plain |= entry.atoms
                continue
            for a in entry.atoms:
                old = particles.get(a)
                if old is None or reach > old[0]:
                    particles[a] = (reach, start)
        # an atom read only as a separable verb needs its object inside: "sold [him] out"
        only = tuple((a, r, st, a not in plain) for a, (r, st) in sorted(particles.items()))
        used = max(n for _, _, _, n in found)
        return Occurrence(tokens[i][0], tokens[i + used - 1][1], frozenset(atoms),
                          any(e.base for e, _, _, _ in found), 0, 0, only)


# adverbs that may stand inside a phrase after its verb: "was soon the talk of", "came quickly to"
_INNER_ADVERBS = frozenset({"soon", "now", "already", "then", "still", "just", "also", "all"})


def _tokens_match(text: str, tokens: list[tuple[int, int, str]], i: int, want: tuple[str, ...]) -> bool:
    return _phrase_length(text, tokens, i, want, skip=False) > 0


def _phrase_length(text: str, tokens: list[tuple[int, int, str]], i: int, want: tuple[str, ...],
                   skip: bool = True) -> int:
    """How many tokens ``want`` covers from token ``i`` (0: it does not stand there). With
    ``skip``, one adverb may stand right after the phrase's first word ("was soon the talk of")."""
    k = i
    skipped = False
    for w_i, w in enumerate(want):
        if k >= len(tokens):
            return 0
        s, _, tok = tokens[k]
        if w_i and text[tokens[k - 1][1]:s].strip():
            return 0  # the words of a phrase stand side by side
        if not _token_is(tok, w):
            if not (skip and w_i == 1 and not skipped and (tok in _INNER_ADVERBS or (
                    tok.endswith("ly") and len(tok) > 4 and tok != "only"))):
                return 0
            skipped = True
            k += 1
            if k >= len(tokens) or text[tokens[k - 1][1]:tokens[k][0]].strip() or \
                    not _token_is(tokens[k][2], w):
                return 0
        k += 1
    return k - i


def _token_is(tok: str, w: str) -> bool:
    if w.endswith("*"):
        return (tok.startswith(w[:-1]) and tok[len(w) - 1:].isalpha()) or tok == w[:-1]
    return tok == w


def _particle_follows(text: str, tokens: list[tuple[int, int, str]], j: int,
                      particle: tuple[str, ...]) -> tuple[int, int]:
    """Where ``particle`` ends and starts when it follows within a few words in the same
    clause ("sold Boss Du out"), else ``(0, 0)``. Its last word may come up to two words
    late ("fed it to the drawing-room fire")."""
    for k in range(j, min(len(tokens), j + PARTICLE_REACH + 1)):
        if _PARTICLE_STOP.search(text, tokens[k - 1][1] if k > 0 else 0, tokens[k][0]):
            return 0, 0
        if k <= j or k + len(particle) > len(tokens) + 2:
            continue
        if k + len(particle) <= len(tokens) and _tokens_match(text, tokens, k, particle):
            return tokens[k + len(particle) - 1][1], tokens[k][0]
        if len(particle) >= 2 and k + len(particle) - 1 <= len(tokens) and _tokens_match(
                text, tokens, k, particle[:-1]):
            for extra in (1, 2):
                last = k + len(particle) - 1 + extra
                if last < len(tokens) and tokens[last][2] == particle[-1] and not _PARTICLE_STOP.search(
                        text, tokens[k][0], tokens[last][1]):
                    return tokens[last][1], tokens[k][0]
    return 0, 0


def vocabulary(pats: Iterable[Pattern], classes: object = None) -> Vocabulary:
    """The vocabulary of these patterns. A world's is built once per set of its rule files and
    kept with them (:class:`narrative.diffusers.rulefile.RuleSet`)."""
    return Vocabulary(list({p.text: p for p in pats}.values()), classes)


# --- clauses ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Unit:
    """One clause: the spans of text it holds (several when another clause interrupts it)."""

    spans: tuple[tuple[int, int], ...]

    @property
    def start(self) -> int:
        return self.spans[0][0]

    @property
    def end(self) -> int:
        return self.spans[-1][1]

    def holds(self, start: int, end: int) -> bool:
        return any(a <= start and end <= b for a, b in self.spans)


def sentence_units(text: str) -> list[Unit]:
    """Units that are whole sentences, for a caller with no clause analysis."""
    out = []
    pos = 0
    for m in SENTENCE_END.finditer(text):
        out.append(Unit(((pos, m.start()),)))
        pos = m.end()
    out.append(Unit(((pos, len(text)),)))
    return [u for u in out if u.end > u.start]


@dataclass
class Scan:
    """One text, read once: its clauses, the names in it and every word the rules use."""

    text: str
    mentions: Sequence[Span]
    units: list[Unit]
    occurrences: list[Occurrence]
    vocab: Vocabulary

    def __post_init__(self) -> None:
        self._occ_starts = [o.start for o in self.occurrences]
        self._mention_starts = sorted((m.start, k) for k, m in enumerate(self.mentions))
        self.units_with: dict[int, set[int]] = {}  # atom -> the units holding it
        self.units_of_mention: dict[int, set[int]] = {}  # mention -> the units holding it
        self.mentions_of_unit: list[list[int]] = []
        self.occurrences_of_unit: list[list[Occurrence]] = []
        for u, unit in enumerate(self.units):
            occ = self._occ_in(unit)
            self.occurrences_of_unit.append(occ)
            for o in occ:
                for a in o.atoms:
                    self.units_with.setdefault(a, set()).add(u)
            held = self._mentions_in(unit)
            self.mentions_of_unit.append(held)
            for k in held:
                self.units_of_mention.setdefault(k, set()).add(u)

    def _occ_in(self, unit: Unit) -> list[Occurrence]:
        out = []
        for a, b in unit.spans:
            k = bisect.bisect_left(self._occ_starts, a)
            while k < len(self.occurrences) and self.occurrences[k].start < b:
                o = self.occurrences[k]
                if o.end <= b:
                    out.append(o)
                k += 1
        return out

    def _mentions_in(self, unit: Unit) -> list[int]:
        out = []
        for a, b in unit.spans:
            k = bisect.bisect_left(self._mention_starts, (a, -1))
            while k < len(self._mention_starts) and self._mention_starts[k][0] <= b:
                start, idx = self._mention_starts[k]
                m = self.mentions[idx]
                if a <= start and m.end <= b and (start < b or m.end == start):
                    out.append(idx)
                k += 1
        return out

    def occurrence_between(self, start: int, end: int, atoms: frozenset[int]) -> Occurrence | None:
        """The first occurrence of one of ``atoms`` starting in ``[start, end]``."""
        k = bisect.bisect_left(self._occ_starts, start)
        while k < len(self.occurrences) and self.occurrences[k].start <= end:
            if self.occurrences[k].atoms & atoms:
                return self.occurrences[k]
            k += 1
        return None

    def occurrence_at(self, pos: int, atoms: frozenset[int]) -> Occurrence | None:
        """The occurrence starting at ``pos`` that is one of ``atoms``, if any."""
        k = bisect.bisect_left(self._occ_starts, pos)
        while k < len(self.occurrences) and self.occurrences[k].start == pos:
            if self.occurrences[k].atoms & atoms:
                return self.occurrences[k]
            k += 1
        return None


def scan_text(text: str, mentions: Sequence[Span], units: list[Unit], vocab: Vocabulary,
              closed: Sequence[tuple[int, int]] = (), taken: Sequence[Span] | None = None) -> Scan:
    """The text's names and rule words; none is read inside a ``closed`` span, nor inside a
    mention (or one of ``taken``, when given: the mentions no word may cover)."""
    spans = sorted((m.start, m.end) for m in (mentions if taken is None else taken) if m.end > m.start)
    return Scan(text, mentions, units, vocab.scan(text, spans, closed), vocab)


# --- matching -------------------------------------------------------------------------------

def find(pattern: Pattern, text: str | Scan, mentions: Sequence[Span] | None = None,
         allowed: dict[str, set[int]] | None = None, unless: Sequence[str] = (),
         terminators: regex.Pattern[str] | None = None) -> list[Match]:
    """Every non-overlapping, tightest match of ``pattern``.

    ``text`` is a :class:`Scan` (from :func:`scan_text`), or plain text with its
    ``mentions`` (then sentences are the clauses and the pattern's own words its
    vocabulary). ``allowed`` gives, for each slot, the mentions (by index) that may
    fill it; a match containing one of the ``unless`` words is returned with
    ``blocked_by`` set. With ``terminators`` (punctuation and words that end a
    phrase), an ``unless`` word blocks only when one of the pattern's words follows
    it with no terminator between: in "Lin Yuan did not hesitate and walked to the
    gate", "not" is about hesitating.
    """
    allowed = allowed or {}
    if isinstance(text, str):
        vocab = vocabulary([pattern])
        scan = scan_text(text, mentions or [], sentence_units(text), vocab)
    else:
        scan = text
    if any(not allowed.get(s) for s in pattern.slots):
        return []
    part_atoms = [scan.vocab.atoms_of(pattern, i) if p.slot is None else frozenset()
                  for i, p in enumerate(pattern.parts)]
    # only the clauses holding every word of the pattern and a candidate for each slot
    candidates: set[int] | None = None
    for i, p in enumerate(pattern.parts):
        if p.slot is None:
            units = set().union(*(scan.units_with.get(a, ()) for a in part_atoms[i]))
            candidates = units if candidates is None else candidates & units
            if not candidates:
                return []
    for name in pattern.slots:
        wanted = allowed[name]
        if candidates is None:
            candidates = set().union(*(scan.units_of_mention.get(k, ()) for k in wanted))
        else:
            candidates = {u for u in candidates if any(k in wanted for k in scan.mentions_of_unit[u])}
        if not candidates:
            return []
    stops = [(_stop_rx(w.strip()), w.strip()) for w in unless if w.strip()]
    out: list[Match] = []
    for u in sorted(candidates or ()):
        out.extend(_find_in_unit(pattern, scan, u, allowed, part_atoms, stops, terminators))
    return out


@lru_cache(maxsize=4096)
def _stop_rx(word: str) -> regex.Pattern[str]:
    return budget.compile(word_regex(word))


@lru_cache(maxsize=1024)
def _shape_regex(shape: tuple[str | None, ...]) -> regex.Pattern[str]:
    """The expression for a pattern's shape: each part a class of marker characters."""
    n = len(shape)
    pieces = []
    for i, slot in enumerate(shape):
        bit = 1 << i
        marks = "".join(chr(MARK_BASE | b) for b in range(1, 1 << n) if b & bit)
        name = slot if slot is not None else f"w{i}"
        # a word keeps its length (its marker, then fillers), so the gaps between the parts of
        # a pattern count the characters of the text between them, as written
        pieces.append(f"(?P<{name}>[{marks}])" + ("" if slot is not None else f"{FILLER}*"))
    return budget.compile(GAP.join(pieces), ignore_case=False)


@dataclass
class _Abstract:
    """A unit's text with each marked name or word as one marker character."""

    s: str
    back: list[int]  # abstract index -> original start
    ends: dict[int, int]  # abstract index of a marker -> original end
    mention: dict[int, int]  # abstract index of a slot marker -> mention index
    base: dict[int, bool]


def _find_in_unit(pattern: Pattern, scan: Scan, u: int, allowed: dict[str, set[int]],
                  part_atoms: list[frozenset[int]], stops: list[tuple[regex.Pattern[str], str]],
                  terminators: regex.Pattern[str] | None) -> list[Match]:
    text = scan.text
    unit = scan.units[u]
    here = scan.mentions_of_unit[u]
    # (start, order, end, bits, mention index or -1, base): a dropped subject (no length)
    # sorts before the word at its position
    items: dict[tuple[int, int, int], list[object]] = {}
    reach: dict[int, int] = {}  # a separable verb's particle end, by the verb's start
    particle_at: dict[int, int] = {}  # and where the particle starts
    for i, p in enumerate(pattern.parts):
        if p.slot is None:
            continue
        wanted = allowed.get(p.slot, set())
        for k in here:
            if k not in wanted:
                continue
            who = scan.mentions[k]
            if who.start == who.end and who.start >= unit.end:
                continue
            # a dropped subject and a dropped object may stand at one place: each its own marker
            key = (who.start, 0, k) if who.start == who.end else (who.start, 1, 0)
            item = items.setdefault(key, [who.end, 0, k, False])
            item[1] = int(item[1]) | (1 << i)  # type: ignore[call-overload]
    for o in scan.occurrences_of_unit[u]:
        bits = 0
        for i, atoms in enumerate(part_atoms):
            if atoms & o.atoms:
                bits |= 1 << i
        if bits and (o.start, 1, 0) not in items:
            items[(o.start, 1, 0)] = [o.end, bits, -1, o.base]
            if o.particles:
                relevant = {a for i, atoms in enumerate(part_atoms) if bits & (1 << i)
                            for a in atoms & o.atoms}
                read = {a: (end, at, only) for a, end, at, only in o.particles if a in relevant}
                if read:
                    reach[o.start] = max(end for end, _, _ in read.values())
                if read and len(read) == len(relevant) and all(only for _, _, only in read.values()):
                    particle_at[o.start] = min(at for _, at, _ in read.values())
    ab = _abstract(text, unit, items)
    s = ab.s
    rx = _shape_regex(tuple(p.slot for p in pattern.parts))
    out: list[Match] = []
    pos = 0
    while pos <= len(s):
        m = budget.search(rx, s, pos)
        if m is None:
            break
        best = m
        for st in range(m.end() - 1, m.start(), -1):
            if ord(s[st]) < MARK_BASE or not (ord(s[st]) & 1):
                continue
            tighter = budget.match(rx, s, st, m.end())
            if tighter is not None:
                best = tighter
                break
        if pattern.anchored and not _leads(s[:best.start()]):
            pos = best.start() + 1
            continue
        if not _objects_inside(pattern, best, ab, reach, particle_at):
            pos = best.start() + 1
            continue
        groups = range(1, rx.groups + 1)
        word_groups = [g for g in groups if pattern.parts[g - 1].slot is None and best.start(g) >= 0]
        words = tuple((ab.back[best.start(g)], ab.ends[best.start(g)]) for g in word_groups)
        start = ab.back[best.start()]
        end = max(ab.ends[best.start(g)] for g in groups if best.start(g) >= 0)
        end = max([end, *(reach.get(w[0], 0) for w in words)])  # "shot Sun dead" reaches "dead"
        blocked = next((w for stop, w in stops
                        if _governs(text, unit, stop, start, end, words, scan, u, terminators)), None)
        if blocked is None:
            blocked = _negated(s, best, word_groups)
        slots = {name: ab.mention[best.start(name)] for name in pattern.slots}
        covered = sum(ab.ends[best.start(g)] - ab.back[best.start(g)] for g in groups)
        out.append(Match(start, end, slots, blocked, max(0, end - start - covered), words,
                         tuple(ab.base.get(best.start(g), False) for g in word_groups)))
        pos = best.end()
    return out


def _objects_inside(pattern: Pattern, m: regex.Match[str], ab: _Abstract, reach: dict[int, int],
                    particle_at: dict[int, int]) -> bool:
    """A separable verb's object stands between it and its particle ("sold [Boss Du] out", not
    "handed the rifle over to [Quinn]"): the slot right after such a verb ends before the particle."""
    groups = m.re.groups
    for g in range(1, groups):
        if pattern.parts[g - 1].slot is not None or m.start(g) < 0:
            continue
        origin = ab.back[m.start(g)]
        if origin not in particle_at or pattern.parts[g].slot is None:
            continue
        if ab.ends[m.start(g + 1)] > particle_at[origin]:
            return False
    return True


_LEADS = re.compile(r"^(?:[\s\W\d_]|\u2063|\u2062|(?i:then|and|but|so|early|late|by|on|at|in|it|was|that|"
                    r"very|until|till|finally|at last|one|only)\b)*$")


def _leads(before: str) -> bool:
    """Whether only punctuation and a few leading words stand before an anchored match."""
    return bool(_LEADS.match(before)) and not any(ord(c) >= MARK_BASE for c in before)


def _abstract(text: str, unit: Unit, items: dict[tuple[int, int, int], list[object]]) -> _Abstract:
    out: list[str] = []
    back: list[int] = []
    ends: dict[int, int] = {}
    mention: dict[int, int] = {}
    base: dict[int, bool] = {}
    order = sorted(items)
    k = 0
    n_out = 0

    def put(chunk: str, origin: int) -> None:
        nonlocal n_out
        out.append(chunk)
        back.extend(range(origin, origin + len(chunk)))
        n_out += len(chunk)

    for n, (a, b) in enumerate(unit.spans):
        if n:
            out.append(JOINER)
            back.append(a)
            n_out += 1
        pos = a
        while k < len(order) and order[k][0] < a:
            k += 1
        while k < len(order) and order[k][0] < b:
            (start, _, _), (end, bits, who, is_base) = order[k], items[order[k]]
            k += 1
            if start < pos:
                continue  # inside something marked already
            put(normalize_text(text[pos:start]), pos)
            out.append(chr(MARK_BASE | int(bits)))  # type: ignore[call-overload]
            back.append(start)
            ends[n_out] = int(end)  # type: ignore[call-overload]
            if int(who) >= 0:  # type: ignore[call-overload]
                mention[n_out] = int(who)  # type: ignore[call-overload]
            base[n_out] = bool(is_base)
            n_out += 1
            if int(who) < 0:  # type: ignore[call-overload]
                rest = int(end) - start - 1  # type: ignore[call-overload]
                out.append(FILLER * rest)
                back.extend(range(start + 1, start + 1 + rest))
                n_out += rest
            pos = int(end)  # type: ignore[call-overload]
        put(normalize_text(text[pos:b]), pos)
    back.append(unit.end)
    return _Abstract("".join(out), back, ends, mention, base)


def _governs(text: str, unit: Unit, stop: regex.Pattern[str], start: int, end: int,
             words: tuple[tuple[int, int], ...], scan: Scan, u: int,
             terminators: regex.Pattern[str] | None) -> bool:
    """Whether an ``unless`` word inside the match stands over one of the pattern's words."""
    for found in budget.finditer(stop, text, start, end):
        a, b = found.span()
        if not unit.holds(a, b) or any(s <= a < e for s, e in words):
            continue  # in a clause the match skips, or the pattern's own word ("no longer")
        if any(scan.mentions[k].start <= a < scan.mentions[k].end for k in scan.mentions_of_unit[u]):
            continue  # inside a name
        if terminators is None:
            return True
        after = [s for s, _ in words if s >= b]
        if not after:
            return True  # nothing of the pattern follows it: keep the cautious reading
        if budget.search(terminators, text, b, min(after)) is None:
            return True
    return False


def _negated(s: str, m: regex.Match[str], word_groups: list[int]) -> str | None:
    """A Chinese negation standing right before a word of the pattern ("林远不去藏经阁").

    Chinese negates a verb by the character before it, which the gap between a
    pattern's parts would otherwise swallow; a negation that is part of a pattern's
    own word ("不见了", "没收", "不信任") is that word, not a negation of it.
    """
    for g in word_groups:
        start = m.start(g)
        before = start - 1
        if before > m.start() and s[before] in "曾敢能" and before - 1 > m.start():
            before -= 1  # 未曾去, 不敢去, 没能去: the negation is one further back
        if before <= m.start() or s[before] not in NEGATIONS:
            continue
        if any(s[max(0, start - len(d)):start] == d for d in DOUBLE_NEGATIVES):
            continue  # 不得不去: he has to go
        return s[before]
    return None
