"""Contradictions a chapter can hold that no rule has to spell out, found from the world alone.

``narr audit`` checks the ``require`` lines of the world's rules; these checks need
none, so a world whose rules say nothing (or phrasing no rule matches) is still read:

- **the dead act**: a dead character is the subject of a clause that asserts an
  action, speech included ("Elder Mo walks in", "Elder Mo says", "'Run,' said Elder
  Mo", "他说", "莫长老道"), a pronoun or a dropped subject bound to them as well;
- **an ended node is used or present**: a node the story ended (eaten, burnt, a
  scene's crowd) is named in a clause that asserts something, not in words of its
  absence ("the ashes of the letter", "the letter is gone", "想起那封信");
- **a transfer between two characters in different places**: the sentence moves an
  item's ``holds`` from one character to another while both have a
  ``state.location`` and the two differ (checked at the moment of the transfer, so
  "walks to the ferry and gives him the ring" counts the walk first);
- **a secret told by one who does not know it**, or (a note, not a contradiction)
  **learnt by one who knows it already**.

Which clauses assert something is the diffusers' clause analysis
(:mod:`narrative.diffusers.clauses`: a question, a negation, a condition, reported
speech assert nothing), who "he" is and a dropped subject are theirs too
(:mod:`narrative.diffusers.referents`), and names are found by
:func:`narrative.diffusers.context.find_mentions` (the longest name wins), so what
improves there improves here. The word lists below (verbs of speech, of telling and
learning, the words around a name that make it no subject) are this module's, in
English and Chinese.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any

from narrative.diffusers import clauses, referents
from narrative.diffusers.context import Mention, find_mentions, is_cjk
from narrative.nodefile import NodeDict

# --- who acts ---------------------------------------------------------------------------


def _words(text: str) -> frozenset[str]:
    """A word list written as one string of words (they read better so than as a list)."""
    return frozenset(text.split())


SPEECH_EN = _words(
    "say says said ask asks asked reply replies replied answer answers answered whisper whispers "
    "whispered shout shouts shouted cry cries cried call calls called mutter mutters muttered "
    "murmur murmurs murmured add adds added continue continues continued snap snaps snapped sigh "
    "sighs sighed laugh laughs laughed tell tells told insist insists insisted begin begins began "
    "protest protests protested growl growls growled hiss hisses hissed")
"""Verbs of a dialogue tag that comes before the speaker ("'Run,' said Elder Mo")."""

_STATE_EN = _words(
    "is was are were be been being 's ’s lies lay lain lying rests rested remains remained seems "
    "seemed looked appears appeared had would could might should may must will shall can cannot "
    "can't won't wouldn't couldn't shouldn't isn't wasn't aren't weren't doesn't didn't don't "
    "hasn't haven't hadn't dies died dead once never no not himself herself themselves itself "
    "alone too who whom whose which that of the a an to in on at by for with from as or "
    "used")
"""A word after a name that makes the clause no action of theirs: being, a state, a
modal, a flashback ("had"), a negation, a relative or a preposition."""
_STILL_EN = _words("lying resting rotting decaying decomposing floating hanging buried laid "
                   "rots decays floats hangs")
"""What a body does: "is lying in the godown" is no deed of the dead."""
_BE_EN = _words("is was are were")
_HAVE_EN = _words("has have")
_DO_EN = _words("does do did")
_JOIN_EN = re.compile(r"\s*(?:,\s*)?(?:and|&)\s+|\s*,\s*", re.IGNORECASE)
_JOIN_ZH = re.compile(r"\s*(?:和|、)\s*")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")

_STATE_ZH = ("的", "之", "是", "乃", "已", "早已", "曾", "曾经", "生前", "死", "被", "遭", "躺",
             "静静地躺", "尸", "遗", "墓", "坟", "灵位", "在世", "还活着的时候", "活着时", "去世",
             "身亡", "过世", "也是", "一直是", "不", "没", "未", "别", "莫非", "若", "如果", "要是")
"""What follows a name in Chinese when the name is no one acting: a possessor (的), being
(是), a state or the past (已, 曾, 生前), death, the passive (被), a negation."""

_PREFIX = re.compile(
    r"(?:[\s\"'“”‘’「」『』(\[（—–\-…]|\x00|,|，|、|"
    r"(?:and|then|but|so|now|later|meanwhile|suddenly|at last|finally|slowly|quietly|still|"
    r"at once|again|soon|outside|inside|here|there)(?![A-Za-z])|"
    r"然后|随后|随即|这时|此时|突然|忽然|接着|于是|终于|也|又|便|就|和)*$", re.IGNORECASE)
"""What may stand between a clause's start and its subject (another subject joined by
"and", fillers, quotes): anything else makes the name an object or a complement."""
_TAG_BEFORE = re.compile(r"^[\s\"'“”‘’「」『』,，—–-]*([A-Za-z]+)\s*$")


@dataclass(frozen=True)
class Act:
    """A character the sentence has act: who (a mention: a name, a pronoun, a dropped
    subject) and the words of the verb."""

    who: Mention
    node: str
    start: int  # the verb
    end: int

    def words(self, text: str) -> str:
        first = min(self.who.start, self.start)
        last = max(self.who.end, self.end)
        return text[first:last].strip() if self.who.end > self.who.start else text[self.start:self.end]


def _next_word(text: str, pos: int) -> re.Match[str] | None:
    while pos < len(text) and text[pos] == " ":
        pos += 1
    return _WORD.match(text, pos)


def _verb_after(text: str, pos: int, mentions: list[Mention]) -> tuple[int, int] | None:
    """The verb a subject ending at ``pos`` governs, past fillers and others joined with it
    ("Lin Yuan and Su Qing walk"): ``(start, end)``, or None when what follows is no action."""
    starts = {m.start: m for m in mentions if m.end > m.start}
    for _ in range(8):  # "A, B and C walk": past the other subjects
        joined = _JOIN_EN.match(text, pos) or _JOIN_ZH.match(text, pos)
        if joined and joined.end() in starts:
            pos = starts[joined.end()].end
            continue
        break
    pos = referents.after_fillers(text, pos)
    if pos >= len(text):
        return None
    if is_cjk(text[pos]):
        if text.startswith(_STATE_ZH, pos):
            return None
        end = pos
        while end < len(text) and is_cjk(text[end]) and end - pos < 4:
            end += 1
        return pos, end
    first = _next_word(text, pos)
    if first is None or first.group(0)[0].isupper():
        return None
    word = first.group(0).lower()
    if word in _BE_EN | _HAVE_EN | _DO_EN:
        then = _next_word(text, first.end())
        nxt = then.group(0).lower() if then else ""
        if word in _BE_EN and nxt.endswith("ing") and nxt not in _STILL_EN:  # "is walking"
            return first.start(), then.end()  # type: ignore[union-attr]
        if word in _HAVE_EN and nxt and nxt not in ("been", "not", "never", "no") and then is not None:
            return first.start(), then.end()  # "has walked"
        if word in _DO_EN and nxt and nxt not in ("not", "never") and then is not None:
            return first.start(), then.end()  # "does walk"
        return None
    if word in _STATE_EN or word in _STILL_EN:
        return None
    return first.start(), first.end()


def acts(text: str, analysis: clauses.Analysis, mentions: list[Mention], zeros: set[int],
         nodes: dict[str, NodeDict | None]) -> list[Act]:
    """Every character the sentence asserts an action of (the clause's subject with a verb
    after it, or the speaker of a dialogue tag), once each, in the order of the text."""
    out: list[Act] = []
    taken = [m for m in mentions if m.end > m.start]
    for k, m in enumerate(mentions):
        if len(m.ids) != 1 or (nodes.get(m.ids[0]) or {}).get("layer") != "character":
            continue
        span: tuple[int, int] | None = None
        if k in zeros:
            span = _verb_after(text, m.end, mentions)
        else:
            start = analysis.clause_start(m.start)
            before = text[start:m.start]
            for other in taken:
                if start <= other.start and other.end <= m.start:
                    before = before.replace(other.text, "\x00", 1)
            tag = _TAG_BEFORE.match(before)
            if tag and tag.group(1).lower() in SPEECH_EN:  # "'Run,' said Elder Mo"
                at = start + before.index(tag.group(1))
                span = (at, at + len(tag.group(1)))
            elif _PREFIX.match(before):
                span = _verb_after(text, m.end, mentions)
        if span is None or analysis.blocking([span]) is not None:
            continue
        out.append(Act(m, m.ids[0], *span))
    return out


# --- secrets ------------------------------------------------------------------------------

TELL_EN = _words(
    "tell tells told telling reveal reveals revealed revealing confide confides confided whisper "
    "whispers whispered explain explains explained disclose discloses disclosed admit admits "
    "admitted confess confesses confessed inform informs informed show shows showed shown warn "
    "warns warned betray betrays betrayed")
LEARN_EN = _words(
    "learn learns learned learnt discover discovers discovered hear hears heard realise realises "
    "realised realize realizes realized uncover uncovers uncovered guess guesses guessed "
    "read reads")
LEARN_EN_OUT = _words("find finds found figure figures figured")  # "finds out"
TELL_ZH = ("告诉", "告知", "透露", "说出", "讲出", "泄露", "坦白", "吐露", "讲给", "说给", "揭露",
           "揭穿", "公开", "道出")
LEARN_ZH = ("得知", "知道了", "知道", "发现了", "发现", "听说", "获悉", "查明", "查出", "猜到", "明白了",
            "识破", "看穿", "打听到", "了解到")


def verb_kind(text: str, act: Act) -> str | None:
    """``"tell"``, ``"learn"`` or None: what the act's verb does with what it names."""
    if is_cjk(text[act.start:act.start + 1]):
        if text.startswith(TELL_ZH, act.start):
            return "tell"
        if text.startswith(LEARN_ZH, act.start):
            return "learn"
        # a verb of a few characters past a filler: 悄悄告诉, 终于得知
        window = text[act.start:act.start + 6]
        if any(w in window for w in TELL_ZH):
            return "tell"
        if any(w in window for w in LEARN_ZH):
            return "learn"
        return None
    words = text[act.start:act.end].lower().split()
    verb = words[-1] if words else ""
    if verb in TELL_EN:
        return "tell"
    if verb in LEARN_EN:
        return "learn"
    if verb in LEARN_EN_OUT:
        after = _next_word(text, act.end)
        if after is not None and after.group(0).lower() == "out":
            return "learn"
    return None


def clause_end(analysis: clauses.Analysis, pos: int) -> int:
    """Where the clause holding ``pos`` ends (the sentence's end at the latest)."""
    _, s1 = analysis.sentence_of(pos)
    k = bisect.bisect_right(analysis.clause_ends, pos)
    return min(analysis.clause_ends[k], s1) if k < len(analysis.clause_ends) else s1


# --- ended nodes --------------------------------------------------------------------------

_GONE_BEFORE_EN = re.compile(
    r"(?:(?:remains|ashes|ash|memory|memories|thought|thoughts|loss|absence|ghost|shards|pieces|"
    r"remnants|fragments|smell|scent|taste|lack|fate|end|rest)\s+of|remembers?|remembered|recalls?|"
    r"recalled|misses|missed|mourns?|mourned|thinks\s+of|thought\s+of|dreams?\s+of|dreamt\s+of|"
    r"without|no|never|once|lost|where)\s+(?:the\s+|his\s+|her\s+|their\s+|its\s+|a\s+)?$",
    re.IGNORECASE)
_GONE_AFTER_EN = re.compile(
    r"^(?:\s+(?:is|was|has\s+been|had\s+been|were|are)\s+(?:gone|no\s+more|lost|destroyed|eaten|"
    r"burnt|burned|ash|ashes|used\s+up|missing|over|finished|ended)|['’]s?\s+(?:ashes|remains|"
    r"shards|absence|loss|memory|ghost|end))", re.IGNORECASE)
_GONE_BEFORE_ZH = re.compile(r"(?:想起|想起了|记得|记起|怀念|思念|没有了|没了|失去了|失去|少了|缺了|"
                             r"不见了|回忆起|梦见|梦到)$")
_GONE_AFTER_ZH = re.compile(r"^(?:已经不在|不在了|没了|不见了|早已|已被|已经被|已|的灰烬|的残骸|的碎片|"
                            r"的余味|化为灰烬|烧成了灰|烧成灰|消失|早就|曾经)")


def absent_context(text: str, m: Mention) -> bool:
    """Whether the words around a name speak of the thing as gone: nothing is there to use."""
    before, after = text[max(0, m.start - 40):m.start], text[m.end:m.end + 40]
    return bool(_GONE_BEFORE_EN.search(before) or _GONE_AFTER_EN.match(after)
                or _GONE_BEFORE_ZH.search(before) or _GONE_AFTER_ZH.match(after))


@dataclass
class EndedMention:
    mention: Mention
    node: str


def ended_mentions(world: Any, text: str, analysis: clauses.Analysis,
                   live: Any) -> list[EndedMention]:
    """Names of ended nodes the sentence uses as there: in a clause that asserts, not as gone.

    ``world`` knows the ended nodes' names (:class:`~narrative.engine.history_of.MentionWorld`),
    so the longest name still wins; a name a live node shares means the live one."""
    out = []
    for m in find_mentions(world, text):
        if not m.ids or any(live(i) for i in m.ids):
            continue
        if analysis.blocking([(m.start, m.end)]) is not None or absent_context(text, m):
            continue
        out.append(EndedMention(m, m.ids[0]))
    return out


# --- what is held -------------------------------------------------------------------------


def location(node: NodeDict | None) -> str | None:
    loc = ((node or {}).get("state") or {}).get("location")
    return loc if isinstance(loc, str) else None
