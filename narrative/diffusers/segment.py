"""Where sentences end: full stops that are not abbreviations, initials or decimals.

"If Dr. Lee goes to the chapel, he prays" is one sentence; a splitter that ends
it at "Dr." loses the condition and makes the rules write what did not happen,
and makes ``narr audit`` count two sentences. So a full stop ends a sentence
unless the word before it is

- a *title* ("Dr.", "Mrs.", "St.", "Col.", "Maj."): a name follows, never a new sentence;
- an *initial* (one capital letter: "H. W. Barrett", "Maj. F. Bishop");
- an *abbreviation* or an acronym with inner stops ("p.m.", "etc.", "S.M.P."), which
  ends a sentence only when the next word is capitalised ("at 9 p.m. sharp" does not);

and a "?", "!" or "." followed (after any closing quote) by a lowercase word ends
nothing ("'Will you go?' she asked"). A digit right after the stop is a decimal.
Chinese 。！？ end a sentence after any closing quotes, as do ";" and "；" (a rule
never reads across them) and a line break.

The titles and abbreviations are data (``titles`` and ``abbreviations`` in the
``[cues]`` table of ``cues.toml``; a world adds its own the same way). pysbd, a
rule-based segmenter, was measured as the alternative: 12-15 ms to import, about
0.5 ms a sentence, 1.1 s for 47 KB, and Chinese closing quotes put at the start of
the next sentence; this is one linear pass of one expression.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# a run of stops (".", "...", "?!"), then closing quotes and brackets; or a line break, after
# which a quote opens the next line's words ('"Leave," said Old Rowe.')
_END = re.compile(r"(?:[.!?…]+|[。！？]+|[;；])[\"'”’」』)）\]》]*|\n")
_WORD_BEFORE = re.compile(r"([A-Za-z][A-Za-z.'’-]*)$")
_NEXT = re.compile(r"\s*[\"'“‘(\[«「『]*(\S)?")


class Segmenter:
    """Sentence ends for one set of titles and abbreviations (see :func:`sentences`)."""

    def __init__(self, titles: Iterable[str], abbreviations: Iterable[str]) -> None:
        self.titles = frozenset(t.strip(".").lower() for t in titles if t.strip("."))
        self.abbreviations = frozenset(a.strip(".").lower() for a in abbreviations if a.strip("."))

    def ends(self, text: str) -> list[int]:
        """Offsets just past each sentence end (the last is not necessarily ``len(text)``)."""
        out: list[int] = []
        for m in _END.finditer(text):
            mark = m.group(0)
            if mark[0] in ";；\n" or mark[0] in "。！？":
                out.append(m.end())
                continue
            nxt = _NEXT.match(text, m.end())
            following = nxt.group(1) if nxt else None
            if following is not None and following.islower():
                continue  # "'Will you go?' she asked", "at 9 p.m. sharp"
            if mark[0] == "." and not self._stop_ends(text, m.start(), m.end(), following):
                continue
            out.append(m.end())
        return out

    def _stop_ends(self, text: str, at: int, end: int, following: str | None) -> bool:
        """Whether the full stop at ``at`` ends a sentence."""
        if end < len(text) and text[end].isdigit():
            return False  # 3.5
        if end < len(text) and text[end] == "." and text[at:end] == ".":
            return True
        before = _WORD_BEFORE.search(text, max(0, at - 60), at)
        if before is None:
            return True
        word = before.group(1).strip("'’-")
        key = word.rstrip(".").lower()
        if key in self.titles:
            return following is None  # "Dr." is followed by a name, never by a new sentence
        if len(word) == 1 and word.isupper():
            return following is None or not following.isupper()  # an initial: "H. W. Barrett"
        if "." in word or key in self.abbreviations:
            return following is None or following.isupper() or not following.isalpha()
        return True


def spans(text: str, ends: list[int]) -> list[tuple[int, int]]:
    """Contiguous sentence spans covering ``text``; trailing blank text joins the last one."""
    out: list[tuple[int, int]] = []
    pos = 0
    for end in ends:
        if end <= pos:
            continue
        out.append((pos, end))
        pos = end
    if text[pos:].strip() or not out:
        out.append((pos, len(text)))
    elif pos < len(text):
        out[-1] = (out[-1][0], len(text))
    return out
