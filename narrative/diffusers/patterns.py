"""Rule patterns: a few words and ``{slots}``, matched against an event's text.

A pattern is literal words, ``{var}`` slots and ``(a|b|c)`` alternatives, for
example ``{who} (walks|goes) (to|into) {place}`` or ``{who}(来到|走到){place}``:

- Words match case-insensitively. A word written in Latin letters matches a
  whole word only (``walk`` does not match ``walkway``), and a trailing ``*``
  takes any ending (``walk*``: walks, walked, walking). Chinese (and Japanese,
  Korean) words match anywhere, since those scripts put no spaces between words.
- ``~verb`` stands for every English form of the verb, irregular ones included
  (``~go``: go, goes, went, gone, going; ``~pick up``: picks up, picked up ...),
  from :mod:`narrative.diffusers.inflect`. Only the word after ``~`` is inflected.
- A slot is filled by one node that the text names by name or alias (found with
  the world's own name index, longest name first), and that the variable's
  constraints accept.
- Other words may stand between the parts ("Lin Yuan, soaked, walks slowly to
  the ferry" matches the pattern above), but not the end of a sentence
  (``. ! ? ;`` and their full-width forms), so a rule reads one sentence at a time,
  and at most 60 characters between two parts: matching stays linear in the length
  of the text however long a sentence runs.
- A Chinese negation (不 没 未 别) right before a word of the pattern blocks the match
  ("林远不去藏经阁"); one that is part of the pattern's own word ("不见了") does not.
- Where a pattern matches several ways, the tightest match wins: in "Su Qing
  watches Lin Yuan walk to the ferry", ``{who} walk to {place}`` binds Lin Yuan.
  A match records how many characters inside it no part covered (``skipped``), so
  that between rules the more specific match can win.

Patterns are compiled into regular expressions made only of escaped words, so a
world's rules cannot inject an expression of their own; they are matched within
the event's time budget (:mod:`narrative.diffusers.budget`), since gaps between
many alternatives can still make an expression match in exponential time.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Protocol

from narrative.diffusers import budget, inflect

if TYPE_CHECKING:
    import regex

MAX_PARTS = 12
MAX_FORMS = 64  # forms one alternative may expand to ("~go ~run" is 5 x 5)
MAX_GAP = 60  # characters between two parts of a pattern: a clause, not a chapter
GAP = rf"[^.!?;。！？；\n]{{0,{MAX_GAP}}}?"
NEGATIONS = "不没未别"  # 莫 is also a surname (莫长老): not a negation here
DOUBLE_NEGATIVES = ("不得不", "不能不", "不会不", "不可能不", "没法不", "不敢不")
MARK_BASE = 0xF0000  # one private-use character stands for each named node in the text
_SLOT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_BAD_STAR = re.compile(r"\*(?!\s|$)|(?:^|\s)\*")


class Span(Protocol):
    """What a pattern needs of a mention: where it is in the text."""

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


@dataclass(frozen=True)
class Part:
    """One part of a pattern: a slot, or a set of alternative words."""

    slot: str | None = None
    words: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pattern:
    text: str
    parts: tuple[Part, ...]

    @property
    def slots(self) -> list[str]:
        return [p.slot for p in self.parts if p.slot is not None]


@dataclass(frozen=True)
class Match:
    """Where a pattern matched (offsets into the original text) and the mention in each slot."""

    start: int
    end: int
    slots: dict[str, int] = field(default_factory=dict)
    blocked_by: str | None = None
    skipped: int = 0  # characters inside the match that no part of the pattern covers
    words: tuple[tuple[int, int], ...] = ()  # where the pattern's own words matched

    @property
    def length(self) -> int:
        return self.end - self.start


def parse(text: str) -> Pattern:
    """Parse a pattern; a ``ValueError`` says what is wrong with it."""
    parts: list[Part] = []
    buf: list[str] = []

    def flush() -> None:
        literal = "".join(buf).strip()
        buf.clear()
        if literal:
            parts.append(Part(words=_expand(_check_words(literal, text), text)))

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
                if not _SLOT_NAME.match(inner):
                    raise ValueError(f"pattern {text!r}: {{{inner}}} is not a variable name "
                                     "(lowercase letters, digits, '_')")
                parts.append(Part(slot=inner))
            else:
                alts = tuple(a.strip() for a in inner.split("|"))
                if any(not a for a in alts):
                    raise ValueError(f"pattern {text!r}: empty alternative in ({inner})")
                parts.append(Part(words=tuple(dict.fromkeys(
                    w for a in alts for w in _expand(_check_words(a, text), text)))))
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
    return Pattern(text, tuple(parts))


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
            options.append(inflect.verb_forms(token[1:]))
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


def abstract(text: str, mentions: Sequence[Span], marks: dict[int, str]) -> tuple[str, list[int]]:
    """The text with each mention in ``marks`` as its marker character, and a map back to offsets."""
    out: list[str] = []
    back: list[int] = []
    pos = 0
    for k in sorted(marks, key=lambda k: mentions[k].start):
        m = mentions[k]
        out.append(text[pos:m.start])
        back.extend(range(pos, m.start))
        out.append(marks[k])
        back.append(m.start)
        pos = m.end
    out.append(text[pos:])
    back.extend(range(pos, len(text)))
    back.append(len(text))  # the end of a marker maps to the end of its mention
    return "".join(out), back


def find(pattern: Pattern, text: str, mentions: Sequence[Span], allowed: dict[str, set[int]],
         unless: Sequence[str] = (), terminators: regex.Pattern[str] | None = None) -> list[Match]:
    """Every non-overlapping, tightest match of ``pattern`` in ``text``.

    ``allowed`` gives, for each slot, the mentions (by index) that may fill it; a
    match containing one of the ``unless`` words is returned with ``blocked_by`` set.
    With ``terminators`` (punctuation and words that end a phrase), an ``unless``
    word blocks only when one of the pattern's words follows it with no terminator
    between: in "Lin Yuan did not hesitate and walked to the gate", "not" is about
    hesitating.
    """
    if any(not allowed.get(s) for s in pattern.slots):
        return []
    # A mention becomes one marker character saying which slots may take it (a bit per
    # slot), so each slot is a class of a few characters however many mentions there are;
    # which mention filled a slot is read back from its position.
    names = list(pattern.slots)
    marks: dict[int, str] = {}
    for bit, name in enumerate(names):
        for k in allowed[name]:
            marks[k] = chr(ord(marks.get(k, chr(MARK_BASE))) | (1 << bit))
    at = {mentions[k].start: k for k in marks}
    s, back = abstract(normalize_text(text), mentions, marks)
    rx = _pattern_rx(pattern)
    stops = [(budget.compile(word_regex(w.strip())), w.strip()) for w in unless if w.strip()]
    first_is_slot = pattern.parts[0].slot is not None
    out: list[Match] = []
    pos = 0
    while pos <= len(s):
        m = budget.search(rx, s, pos)
        if m is None:
            break
        best = m
        for st in range(m.end() - 1, m.start(), -1):
            if first_is_slot and ord(s[st]) < MARK_BASE:
                continue
            tighter = budget.match(rx, s, st, m.end())
            if tighter is not None:
                best = tighter
                break
        word_groups = [g for g in range(1, rx.groups + 1)
                       if pattern.parts[g - 1].slot is None and best.start(g) >= 0]
        blocked = next((w for stop, w in stops
                        if _governs(s, stop, best, word_groups, terminators)), None)
        if blocked is None:
            blocked = _negated(s, best)
        slots = {name: at[back[best.start(name)]] for name in pattern.slots}
        covered = sum(back[best.end(g)] - back[best.start(g)] for g in range(1, rx.groups + 1))
        start, end = back[best.start()], back[best.end()]
        words = tuple((back[best.start(g)], back[best.end(g)]) for g in word_groups)
        out.append(Match(start, end, slots, blocked, end - start - covered, words))
        pos = best.end()
    return out


def _governs(s: str, stop: regex.Pattern[str], m: regex.Match[str], word_groups: list[int],
             terminators: regex.Pattern[str] | None) -> bool:
    """Whether an ``unless`` word inside the match stands over one of the pattern's words."""
    for found in budget.finditer(stop, s, m.start(), m.end()):
        if terminators is None:
            return True
        after = [m.start(g) for g in word_groups if m.start(g) >= found.end()]
        if not after:
            return True  # nothing of the pattern follows it: keep the cautious reading
        if budget.search(terminators, s, found.end(), min(after)) is None:
            return True
    return False


def _negated(s: str, m: regex.Match[str]) -> str | None:
    """A Chinese negation standing right before a word of the pattern ("林远不去藏经阁").

    Chinese negates a verb by the character before it, which the gap between a
    pattern's parts would otherwise swallow; a negation that is part of a pattern's
    own word ("不见了", "没收", "不信任") is that word, not a negation of it.
    """
    spans = [m.span(g) for g in range(1, (m.re.groups or 0) + 1) if m.start(g) >= 0]
    for start, _end in spans:
        before = start - 1
        if before > m.start() and s[before] in "曾敢能" and before - 1 > m.start():
            before -= 1  # 未曾去, 不敢去, 没能去: the negation is one further back
        if before <= m.start() or s[before] not in NEGATIONS:
            continue
        if any(a <= before < b for a, b in spans):
            continue
        if any(s[max(0, start - len(d)):start] == d for d in DOUBLE_NEGATIVES):
            continue  # 不得不去: he has to go
        return s[before]
    return None


@lru_cache(maxsize=4096)
def _words_rx(words: tuple[str, ...]) -> regex.Pattern[str]:
    return budget.compile("|".join(word_regex(a) for a in sorted(words, key=len, reverse=True)))


def part_starts_at(part: Part, text: str, pos: int) -> bool:
    """Whether the words of ``part`` start ``text`` at ``pos``."""
    return part.slot is None and budget.match(_words_rx(part.words), normalize_text(text), pos) is not None


@lru_cache(maxsize=4096)
def _pattern_rx(pattern: Pattern) -> regex.Pattern[str]:
    names = list(pattern.slots)
    return budget.compile(GAP.join(_part_regex(p, names) for p in pattern.parts))


def _part_regex(part: Part, names: list[str]) -> str:
    if part.slot is not None:
        bit = 1 << names.index(part.slot)
        marks = "".join(chr(MARK_BASE | b) for b in range(1, 1 << len(names)) if b & bit)
        return f"(?P<{part.slot}>[{marks}])"
    alts = sorted(part.words, key=len, reverse=True)
    return "(" + "|".join(word_regex(a) for a in alts) + ")"  # a group, to measure what it covers
