"""Who "he", "她" and a dropped subject stand for, and which names are not the one acting.

Rules bind slots to names the text spells out. A novelist writes "Su Qing reaches
the ferry. She lights the lantern." and "林远来到渡口，拿起了灯笼": the second verb's
subject is a pronoun or nothing at all. This module adds *referent mentions* for
them, bound to one character, and sets aside names that must not fill a slot:

- a pronoun is bound to the one character it can be: among those the event names
  before it (or, when the event names nobody, those of the latest event that named
  someone), the ones whose ``pronouns`` trait (``"he"``, ``"she"``, ``"they"``)
  agrees. Two candidates, or a character without the trait: nothing is bound, and
  a rule that needed it does not fire. A guess could write to the wrong person;
  a miss costs one ``--set``.
- a dropped subject (after "and"/"then" in English, at the start of a Chinese
  clause) is the subject of the sentence: its first character, unless it is two
  ("Lin Yuan and Su Qing"). It only ever fills a rule's slot that it stands right
  before (checked by :func:`zero_fits`), so "有人拿走了黑戒" (someone took it) does
  not give the ring to the last subject.
- a name after an exclusion word ("not Su Qing", "instead of Lin Yuan", "不是苏晴"),
  a possessor ("Lin Yuan's sister", "林远的妹妹") and a name inside a relative clause
  or a parenthesis ("Old Zhou, who never trusted Su Qing, walks ...") is set aside.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from narrative.diffusers import budget
from narrative.diffusers.clauses import PUNCT_BOUNDARY, Analysis, Lexicon
from narrative.diffusers.context import Mention, is_cjk
from narrative.nodefile import NodeDict

PRONOUNS = {"he": "he", "him": "he", "she": "she", "her": "she", "they": "they", "them": "they",
            "他": "he", "她": "she"}
_PRONOUN_RX = re.compile(r"(?<![\w'])(?:he|him|she|her|they|them)(?![\w'])|(?<!其)他(?![们人])|她(?![们])",
                         re.IGNORECASE)
# after "her", a word that makes it an object ("gives her the ring"), not a possessive ("her ring")
_OBJECT_AFTER = re.compile(r"\s*(?:$|[\W_]|(?:the|a|an|to|at|in|into|on|and|back|away|up|down|out)(?!\w))",
                           re.IGNORECASE)
_ZERO_EN = re.compile(r"(?<![\w'])(?:and then|and|then|but)\s+(?=[a-z])", re.IGNORECASE)
_NOT_A_VERB = re.compile(r"(?:the|a|an|his|her|their|its|he|she|they|it|we|i|you|so|yet|all|both|"
                         r"every|some|no|one|two|this|that|these|those|there|here|now)(?!\w)",
                         re.IGNORECASE)
_PLURAL = re.compile(r"\s*(?:and|,|和|与|跟|同|、)\s*$", re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:['’]s?(?!\w)|的)")
# what may stand between a dropped subject and its verb
FILLERS_ZH = ("又", "也", "便", "就", "才", "还", "再", "都", "随即", "立刻", "马上", "转身", "连忙",
              "急忙", "赶紧", "悄悄", "默默", "径直", "慢慢", "缓缓", "终于", "随后", "独自", "一路",
              "匆匆", "快步", "冒雨", "冒着雨", "冒着大雨", "顺手", "一把", "轻轻", "狠狠", "当即", "也就",
              "却", "但", "可", "竟", "竟然", "居然", "果然", "仍", "仍然", "依然", "只好", "只得", "已经")
_FILLERS = re.compile(r"(?:\s|[a-z]+ly(?![a-z])|" + "|".join(sorted(FILLERS_ZH, key=len, reverse=True))
                      + r"|地)*", re.IGNORECASE)

Character = Callable[[str], NodeDict | None]


@dataclass(frozen=True)
class Referents:
    """Mentions to match against (names, pronouns, dropped subjects) and the names set aside."""

    mentions: list[Mention]
    zeros: set[int]  # indexes (into ``mentions``) of dropped subjects
    set_aside: list[tuple[Mention, str]]  # names that fill no slot, and why


def _is_character(node: NodeDict | None) -> bool:
    return node is not None and node.get("layer") == "character"


def _pronoun_of(node: NodeDict | None) -> str | None:
    if node is None:
        return None
    value = (node.get("traits") or {}).get("pronouns")
    return value.strip().lower() if isinstance(value, str) else None


def resolve(text: str, mentions: list[Mention], nodes: dict[str, NodeDict | None], lex: Lexicon,
            analysis: Analysis, recent: Callable[[], list[list[tuple[str, NodeDict]]]]) -> Referents:
    """Add pronoun and dropped-subject mentions; set aside excluded names and possessors.

    ``recent()`` gives, newest first, the nodes each recent event named (in the
    order it named them); it is only called when the event names nobody.
    """
    set_aside: list[tuple[Mention, str]] = []
    kept: list[Mention] = []
    parentheses = [p.span() for p in _PARENTHESIS.finditer(text)]
    for m in mentions:
        why = _aside(text, m, nodes, lex, parentheses)
        if why:
            set_aside.append((m, why))
        else:
            kept.append(m)
    taken = [(m.start, m.end) for m in mentions]
    chars = [m for m in mentions if len(m.ids) == 1 and _is_character(nodes.get(m.ids[0]))]
    added: list[Mention] = []
    for pm in _PRONOUN_RX.finditer(text):
        if any(s < pm.end() and pm.start() < e for s, e in taken):
            continue
        word = pm.group(0).lower()
        if word == "her" and not _OBJECT_AFTER.match(text, pm.end()):
            continue  # "her ring": a possessive names no one who acts
        who = _antecedent(PRONOUNS[word], pm.start(), chars, nodes, recent)
        if who is not None:
            m = Mention(pm.start(), pm.end(), pm.group(0), (who,))
            added.append(m)
            chars.append(m)
    ordered = sorted(kept + added, key=lambda m: m.start)
    zeros = _zero_positions(text, ordered, analysis)
    out = list(ordered)
    zero_mentions: list[Mention] = []
    for pos in zeros:
        who = _subject(text, pos, ordered, nodes, analysis, recent)
        if who is not None:
            zero_mentions.append(Mention(pos, pos, "", (who,)))
    final = sorted(out + zero_mentions, key=lambda m: (m.start, m.end))
    zero_ids = {i for i, m in enumerate(final) if m.start == m.end}
    return Referents(final, zero_ids, set_aside)


_PARENTHESIS = re.compile(r",\s*(?:who|whom|whose|which|where|once|still|already)\b[^,.;!?]*,"
                          r"|\([^()]*\)|（[^（）]*）|——[^——]*——", re.IGNORECASE)


def _aside(text: str, m: Mention, nodes: dict[str, NodeDict | None], lex: Lexicon,
           parentheses: list[tuple[int, int]]) -> str | None:
    if any(s <= m.start and m.end <= e for s, e in parentheses):
        return "set aside (inside a relative clause or parenthesis)"
    before = text[max(0, m.start - 20):m.start]
    if lex.exclusion_rx is not None and budget.search(lex.exclusion_rx, before):
        return "set aside (contrast)"
    if any(_is_character(nodes.get(i)) for i in m.ids) and _POSSESSIVE.match(text, m.end):
        return "set aside (possessive)"
    return None


def _antecedent(pronoun: str, pos: int, chars: list[Mention], nodes: dict[str, NodeDict | None],
                recent: Callable[[], list[list[tuple[str, NodeDict]]]]) -> str | None:
    before = [m for m in chars if m.end <= pos]
    if before:
        ids = {m.ids[0] for m in before if _pronoun_of(nodes.get(m.ids[0])) == pronoun}
        return ids.pop() if len(ids) == 1 else None
    if chars:
        return None  # the event names someone, only later: no guessing across a cataphora
    for named in recent():
        people = [(i, node) for i, node in named if _is_character(node)]
        if people:
            fits = {i for i, node in people if _pronoun_of(node) == pronoun}
            return fits.pop() if len(fits) == 1 else None
    return None


def _zero_positions(text: str, mentions: list[Mention], analysis: Analysis) -> list[int]:
    """Where a subject may have been dropped: after "and"/"then", at a Chinese clause start."""
    starts = {m.start for m in mentions}
    out: list[int] = []
    for z in _ZERO_EN.finditer(text):
        pos = z.end()
        if pos not in starts and not _NOT_A_VERB.match(text, pos):
            out.append(pos)
    clause_starts = {s for s, _ in analysis.sentences}
    clause_starts |= {m.end() for m in PUNCT_BOUNDARY.finditer(text)}
    for pos in sorted(clause_starts):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos < len(text) and is_cjk(text[pos]) and pos not in starts:
            out.append(pos)
    return sorted(set(out))


def _subject(text: str, pos: int, mentions: list[Mention], nodes: dict[str, NodeDict | None],
             analysis: Analysis, recent: Callable[[], list[list[tuple[str, NodeDict]]]]) -> str | None:
    """The subject a dropped one continues: the first name of its sentence, or of the one before."""
    s0, _ = analysis.sentence_of(pos)
    spans = [(s0, pos), *[(s, e) for s, e in reversed(analysis.sentences) if e <= s0]]
    for start, end in spans:
        inside = [m for m in mentions if start <= m.start and m.end <= end and m.start < m.end]
        if not inside:
            continue
        first = inside[0]
        if len(first.ids) != 1 or not _is_character(nodes.get(first.ids[0])):
            return None  # the sentence is about something else (the rain, the ring)
        if len(inside) > 1 and re.fullmatch(r"\s*(?:and|,|和|与|跟|同|、)\s*",
                                            text[first.end:inside[1].start], re.IGNORECASE):
            return None  # "Lin Yuan and Su Qing": two subjects
        return first.ids[0]
    if any(m.start < m.end for m in mentions):
        return None
    for named in recent():
        chars = [i for i, node in named if _is_character(node)]
        if chars:
            return chars[0] if len(set(chars)) == 1 else None
    return None


def after_fillers(text: str, pos: int) -> int:
    """Where the verb of a dropped subject would start: past adverbs ("quietly", "随即")."""
    m = _FILLERS.match(text, pos)
    return m.end() if m else pos


def zero_fits(text: str, zero: Mention, words: tuple[tuple[int, int], ...]) -> bool:
    """A dropped subject fills a slot only when the pattern's next word follows it at once."""
    after = [s for s, _ in words if s >= zero.end]
    return bool(after) and after_fillers(text, zero.end) >= min(after)
