"""A chapter draft cut into its title, its scenes and its sentences.

Writers mark scenes in a handful of ways, and a draft pasted from a word processor
or a web serial uses any of them: a Markdown heading, a rule (``***``, ``* * *``,
``---``, ``___``, ``~~~``), an ornament (a line of symbols only: ``◇◇◇``, ``※※※``,
``＊＊＊``, ``❖``), or a line holding nothing but the scene's number (``2``, ``II``,
``(3)``, ``（三）``, ``§ 4``). Each starts a new scene; a heading names it. The first
heading of the draft, or a first line that reads as a chapter heading (``Chapter 3:
The Ferry``, ``第三章 渡口``), is the chapter's title, and the number it spells is the
chapter's number unless the writer gives one.

Inside a scene the sentences are cut by the very segmenter events use
(:func:`narrative.diffusers.clauses.sentences`, with the world's titles and
abbreviations), so a sentence of a chapter is what the same words would be as an
event. No sentence crosses a scene's edge. The cut is one pass over the lines and one
over each scene's text: linear in the draft.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from narrative.errors import InvalidInputError

if TYPE_CHECKING:
    from narrative.diffusers.clauses import Lexicon

MAX_CHAPTER = 200_000
"""Characters a chapter may hold: a long novel's longest chapters run to a few tens of thousands."""

_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_SETEXT = re.compile(r"^\s{0,3}=+\s*$")
_RULE = re.compile(r"^\s{0,3}(?:([*\-_~=])\s*){3,}$")
_CN_NUMERAL = "0-9〇零一二三四五六七八九十百千两壹贰叁肆伍陆柒捌玖拾佰仟"
_SCENE_NUMBER = re.compile(
    r"^\s*(?:"
    r"[0-9]{1,4}[.)]?"                      # 2  2.  2)
    r"|[(（][0-9]{1,4}[)）]"                 # (2) （2）
    r"|(?=[IVXLC])M{0,3}(?:C[MD]|D?C{0,3})(?:X[CL]|L?X{0,3})(?:I[XV]|V?I{0,3})\.?"  # II  XIV.
    rf"|[(（]?[{_CN_NUMERAL}]{{1,6}}[)）]?"     # 三  （三）
    rf"|第[{_CN_NUMERAL}]{{1,6}}[节幕场]"        # 第三节
    r"|§\s*[0-9]{1,4}"                       # § 4
    r")\s*$")
_CHAPTER_HEADING = re.compile(
    r"^\s*(?:(?:chapter|chap\.|ch\.)\s+([0-9]{1,5}|[ivxlc]{1,8}|[a-z\-]{3,20})\b"
    rf"|第\s*([{_CN_NUMERAL}]{{1,8}})\s*[章回卷])", re.IGNORECASE)
# a line of these only is prose (a silence, a trailing-off), never a scene break
_PROSE_MARKS = frozenset("….。⋯·!?！？\"'“”‘’「」『』()（）《》〈〉,，、:：;；")
_WORDS_EN = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
             "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
             "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
             "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50}
_DIGITS_ZH = {"〇": 0, "零": 0, "一": 1, "壹": 1, "二": 2, "两": 2, "贰": 2, "三": 3, "叁": 3,
              "四": 4, "肆": 4, "五": 5, "伍": 5, "六": 6, "陆": 6, "七": 7, "柒": 7, "八": 8,
              "捌": 8, "九": 9, "玖": 9}
_UNITS_ZH = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}


@dataclass(frozen=True)
class Sentence:
    """One sentence of the chapter: its number (from 1, through the whole chapter), its scene,
    where it lies in the chapter's text, and its words."""

    number: int
    scene: int
    start: int
    end: int
    text: str

    def to_json(self) -> dict[str, Any]:
        return {"number": self.number, "scene": self.scene, "start": self.start, "end": self.end,
                "text": self.text}


@dataclass
class SceneText:
    number: int
    title: str | None
    start: int
    end: int
    sentences: list[Sentence] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        first = self.sentences[0].number if self.sentences else 1
        return {"number": self.number, "title": self.title, "start": self.start, "end": self.end,
                "first_sentence": first, "sentences": len(self.sentences)}


@dataclass
class ChapterText:
    """A draft cut into scenes and sentences; ``number`` is what its heading spells, if it does."""

    text: str
    title: str | None
    number: int | None
    language: str
    scenes: list[SceneText]

    @property
    def sentences(self) -> list[Sentence]:
        return [s for scene in self.scenes for s in scene.sentences]


def check_text(text: str, source: str = "the chapter") -> None:
    """Refuse a draft no chapter can be made of: empty, not text, or past the limit."""
    if "\x00" in text:
        raise InvalidInputError(f"{source} is not text (it holds NUL characters: a binary file?)",
                                hint="a chapter is UTF-8 text, plain or Markdown")
    if len(text) > MAX_CHAPTER:
        raise InvalidInputError(
            f"{source} is {len(text):,} characters; a chapter holds at most {MAX_CHAPTER:,}",
            hint="split it into chapters (narr chapter takes one at a time)")
    if not text.strip():
        raise InvalidInputError(f"{source} is empty", hint="give a file of prose, or - for stdin")


def split(text: str, lex: Lexicon | None = None) -> ChapterText:
    """The chapter's title, number, language, scenes and sentences."""
    from narrative.diffusers.clauses import sentences as sentence_spans

    lines = text.splitlines(keepends=True)
    offsets = []
    at = 0
    for line in lines:
        offsets.append(at)
        at += len(line)
    title: str | None = None
    number: int | None = None
    breaks: list[tuple[int, int, str | None]] = []  # (start, end, heading) of each marker line
    seen_text = False
    for i, line in enumerate(lines):
        bare = line.strip()
        if not bare:
            continue
        heading = _heading(lines, i)
        if heading is None and _SETEXT.match(line) and i and lines[i - 1].strip():
            continue  # the underline of the heading before it, taken with it
        first = not seen_text and title is None
        if heading is None and first and _CHAPTER_HEADING.match(bare):
            heading = bare
        if heading is not None and first:
            title = heading
            number = chapter_number(heading)
            breaks.append((offsets[i], _line_end(lines, offsets, i), None))
            continue
        if heading is not None or _is_break(bare):
            breaks.append((offsets[i], _line_end(lines, offsets, i), heading))
            continue
        seen_text = True
    scenes: list[SceneText] = []
    # the scenes lie between the markers: [0, first marker), [its end, the next one's start)...
    edges = [(0, None), *((end, heading) for _, end, heading in breaks)]
    stops = [start for start, _, _ in breaks] + [len(text)]
    pending: str | None = None  # a heading over a scene that has no sentence names the next
    for (start, heading), end in zip(edges, stops, strict=True):
        pending = heading if heading is not None else pending
        if end <= start or not text[start:end].strip():
            continue
        scene = SceneText(len(scenes) + 1, pending, start, end)
        for s, e in sentence_spans(text[start:end], lex):
            piece = text[start + s:start + e]
            words = piece.strip()
            if words:
                lead = start + s + len(piece) - len(piece.lstrip())
                scene.sentences.append(Sentence(0, scene.number, lead, lead + len(words), words))
        if scene.sentences:
            scenes.append(scene)
            pending = None
    n = 0
    for scene in scenes:
        for k, one in enumerate(scene.sentences):
            n += 1
            scene.sentences[k] = Sentence(n, one.scene, one.start, one.end, one.text)
    return ChapterText(text, title, number, language_of(text), scenes)


def _line_end(lines: list[str], offsets: list[int], i: int) -> int:
    """Where line ``i`` ends, a setext underline below it included."""
    if i + 1 < len(lines) and _SETEXT.match(lines[i + 1]) and lines[i].strip():
        return offsets[i + 1] + len(lines[i + 1])
    return offsets[i] + len(lines[i])


def _heading(lines: list[str], i: int) -> str | None:
    """The text of a Markdown heading on line ``i`` (``# Title``, or ``Title`` over ``===``)."""
    m = _HEADING.match(lines[i])
    if m is not None:
        return m.group(2).strip() or None
    if i + 1 < len(lines) and _SETEXT.match(lines[i + 1]) and lines[i].strip():
        return lines[i].strip()
    return None


def _is_break(bare: str) -> bool:
    """A scene break: a rule, an ornament (symbols only), or a scene's number alone."""
    if _RULE.match(bare) or _SCENE_NUMBER.match(bare):
        return True
    chars = [c for c in bare if not c.isspace()]
    if not chars or len(chars) > 40:
        return False
    if all(c in _PROSE_MARKS for c in chars):
        return False
    return all(not c.isalnum() and unicodedata.category(c)[0] in "SP" for c in chars)


def chapter_number(heading: str) -> int | None:
    """The number a chapter heading spells (``Chapter 12``, ``Chapter Three``, ``CHAPTER IV``,
    ``第十二章``, ``第3回``), or None."""
    m = _CHAPTER_HEADING.match(heading)
    if m is None:
        return None
    word = m.group(1) or m.group(2)
    if word.isdigit():
        return int(word) or None
    if m.group(2):
        return _chinese_number(word)
    low = word.lower()
    if low in _WORDS_EN:
        return _WORDS_EN[low]
    if re.fullmatch(r"[ivxlc]+", low):
        return _roman(low)
    if "-" in low:
        tens, _, ones = low.partition("-")
        if tens in _WORDS_EN and ones in _WORDS_EN:
            return _WORDS_EN[tens] + _WORDS_EN[ones]
    return None


def _roman(word: str) -> int | None:
    values = {"i": 1, "v": 5, "x": 10, "l": 50, "c": 100}
    total = 0
    for k, ch in enumerate(word):
        v = values[ch]
        total += -v if k + 1 < len(word) and values[word[k + 1]] > v else v
    return total or None


def _chinese_number(word: str) -> int | None:
    if word.isdigit():
        return int(word) or None
    if all(c in _DIGITS_ZH for c in word):  # 一二 as 12
        return int("".join(str(_DIGITS_ZH[c]) for c in word)) or None
    total, digit = 0, 0
    for c in word:
        if c in _DIGITS_ZH:
            digit = _DIGITS_ZH[c]
        elif c in _UNITS_ZH:
            total += (digit or 1) * _UNITS_ZH[c]
            digit = 0
        else:
            return None
    return (total + digit) or None


def language_of(text: str) -> str:
    """``zh`` when Chinese characters outnumber Latin letters, else ``en``: the language a
    chapter's summary is written in."""
    from narrative.diffusers.context import is_cjk

    cjk = latin = 0
    for ch in text:
        if is_cjk(ch):
            cjk += 1
        elif ch.isascii() and ch.isalpha():
            latin += 1
    # a Chinese character carries a word's weight; a Latin letter a fifth of one
    return "zh" if cjk * 5 > latin else "en"
