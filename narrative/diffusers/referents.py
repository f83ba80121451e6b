"""Who "he", "她", "who", "it" and a dropped subject stand for, and which names are not the one acting.

Rules bind slots to names the text spells out. A novelist writes "Su Qing reaches
the ferry. She lights the lantern." and "林远来到渡口，拿起了灯笼": the second verb's
subject is a pronoun or nothing at all. This module adds *referent mentions* for
them, bound to one node, and sets aside names that must not fill a slot:

- a personal pronoun is bound to the one character it can be. Its candidates are
  the characters the event names before it; when none of them can be it, those of
  the latest of the last events that named someone. A character can be "he" or
  "she" by its ``pronouns`` trait ("he", "she", "they"), else by a ``gender`` trait,
  else by a title among its names (Mr., Mrs., Miss, 先生, 太太) or the pronouns of
  its summary; a character none of these tell about could be either. The one
  candidate left binds; two (a known "he" and one that could be) bind nobody, and
  the event's notes say so. An object pronoun is not the subject of its own
  clause ("Bishop trusted him": not Bishop). A guess could write to the wrong
  person; a miss costs one ``--set``.
- "who" after a name (", who ...") is that name; "it" and "它" are the one item the
  event names before them.
- a dropped subject (after "and"/"then" in English, at the start of a Chinese
  clause) is the subject of the sentence: its first character, unless it is two
  ("Lin Yuan and Su Qing"). It only ever fills a rule's slot that it stands right
  before (checked by :func:`zero_fits`), so "有人拿走了黑戒" (someone took it) does
  not give the ring to the last subject.
- a name after an exclusion word ("not Su Qing", "instead of Lin Yuan", "不是苏晴")
  and a possessor ("Lin Yuan's sister", "林远的妹妹") is set aside, unless the rule's
  own pattern goes on with the possessive ("{who}的伤").
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from narrative.diffusers import budget
from narrative.diffusers.clauses import PUNCT_BOUNDARY, Analysis, Lexicon
from narrative.diffusers.context import Mention, is_cjk
from narrative.nodefile import NodeDict

PRONOUNS = {"he": "he", "him": "he", "his": "he", "she": "she", "her": "she", "they": "they",
            "them": "they", "他": "he", "她": "she"}
_PRONOUN_RX = re.compile(r"(?<![\w'])(?:he|him|his|she|her|they|them)(?![\w'])"
                         r"|(?<!其)他(?![们人])|她(?![们])", re.IGNORECASE)
_IT_RX = re.compile(r"(?<![\w'])it(?![\w'])|它(?![们])", re.IGNORECASE)
# after "her", a word that makes it an object ("gives her the ring"), not a possessive ("her ring")
_OBJECT_AFTER = re.compile(r"\s*(?:$|[^\w\s]|(?:the|a|an|to|at|in|into|on|and|back|away|up|down|out|of|for|"
                           r"with|from|about|as|by|off|over|again|alone|too|that|once|twice|so|"
                           r"there|here|now|then|if|when|before|after|until|because)(?!\w))",
                           re.IGNORECASE)
_ZERO_EN = re.compile(r"(?<![\w'])(?:and then|and|then|but)(?:,\s*[^,.;!?]{1,40},)?\s+(?=[a-z])",
                      re.IGNORECASE)
_NOT_A_VERB = re.compile(r"(?:the|a|an|his|her|their|its|he|she|they|it|we|i|you|so|yet|all|both|"
                         r"every|some|no|one|two|this|that|these|those|there|here|now)(?!\w)",
                         re.IGNORECASE)
_POSSESSIVE = re.compile(r"(?:['’]s?(?!\w)|的)")
# after a place, what puts one outside it, not at it ("守在重症监护室外面的走廊上"); a bare 外 is
# the ground before a gate as often ("跪在午门外")
_OUTSIDE_ZH = re.compile(r"(?:外面|外边|外头|之外|以外|门外)")
_POSSESSIVE_EN = re.compile(r"['’]s?\s+[a-z]")  # "the Key's chain": the chain is taken, not the Key
# before an item's name: another thing of its kind ("a key from the drawer", "a different lantern")
_ANOTHER = re.compile(r"(?<![\w'’])(?:a|an|another|any|some|one more|a second|a different|"
                      r"some other|any other|a new|one other)\s+(?:[a-z]+\s+)?$", re.IGNORECASE)
# what may stand between a dropped subject and its verb
FILLERS_ZH = ("又", "也", "便", "就", "才", "还", "再", "都", "随即", "立刻", "马上", "转身", "连忙",
              "急忙", "赶紧", "悄悄", "默默", "径直", "慢慢", "缓缓", "终于", "随后", "独自", "一路",
              "匆匆", "快步", "冒雨", "冒着雨", "冒着大雨", "顺手", "一把", "轻轻", "狠狠", "当即", "也就",
              "却", "但", "可", "竟", "竟然", "居然", "果然", "仍", "仍然", "依然", "只好", "只得", "已经",
              "说完", "说罢", "听罢", "听完", "想了想", "起身", "终于起身", "直接", "今天", "当晚", "当夜",
              "次日", "第二天", "一早", "一大早", "这才", "于是", "然后", "接着", "连夜", "立即", "赶忙",
              "便又", "则", "倒", "倒是", "早已", "早就", "已", "也已", "又一次", "一个人", "悄悄地", "径自",
              "亲自", "再次", "重新", "只身", "偷偷", "偷偷地", "出门", "一出门", "还是",
              "仍旧", "照样", "依旧", "只是", "偏偏", "硬是", "干脆", "索性", "毅然", "放心地", "放心",
              "回过神来", "不久", "随即又", "一直", "一口气", "一溜烟", "一路小跑", "头也不回",
              "自己", "人", "一步一步", "一步步", "双手", "亲手", "转手", "顺手", "随手", "一边", "一面",
              "独自一人", "这一次", "这次", "那一次", "那次", "这时", "此时", "那时", "这会儿", "上楼",
              "下楼")
# A Chinese verb phrase before the verb that goes on from it is no subject: "V了(一)+measure+N"
# (叫了辆车, 划了根火柴, 叹了口气), "V之后"/"V后" (醒来之后), "...就/便".
_SERIAL_ZH = (r"[^\W\d_]{1,2}了一?(?:辆|根|个|只|把|声|口|眼|下|趟|番|杯|碗|张|支|盒)[^\W\d_，。、]{0,4}"
              r"|[^\W\d_]{1,3}(?:之后|以后|后)"
              r"|[^，。,；！？、\s]{1,8}?(?:就|便)"
              # the manner of the act: "哭着跑出了", "抱着罐子光着脚跑到了"
              r"|[^\W\d_]着[^\W\d_，。、]{0,3}")
# The way one goes before the verb ("沿着大街一直走到了教堂", "穿过院子进了宿舍"): the phrase
# has no end a pattern can see, so it reaches to the clause's end, past the verb after it.
_PATH_ZH = (r"(?:沿着|顺着|穿过|绕过|越过|跨过|迎着|顶着|踩着|踏着|从(?![前来此小未不没头]))[^\W\d_]{1,16}"
            r"|[^\W\d_]{1,4}?地(?![方点上下里面图区带主位板])"
            # an instrument ("用靴跟碾得粉碎"), a gesture ("一甩手去了食堂")
            r"|用[^\W\d_]{1,6}|一[^\W\d_](?:手|脚|牙|头|身|袖)")
_FILLERS = re.compile(r"(?:\s|[a-z]+ly(?![a-z])|,\s*[^,.;!?]{1,40},\s*|having\s|"
                      + "|".join(sorted(FILLERS_ZH, key=len, reverse=True))
                      + r"|" + _SERIAL_ZH + r"|" + _PATH_ZH + r"|地)*", re.IGNORECASE)
_TITLES_HE = ("mr", "mr.", "sir", "lord", "master", "father", "brother", "uncle", "king", "prince",
              "monsieur", "herr", "señor", "don")
_TITLES_SHE = ("mrs", "mrs.", "miss", "ms", "ms.", "madam", "madame", "mme", "mme.", "lady", "dame",
               "mistress", "sister", "aunt", "queen", "princess", "mlle", "señora", "doña", "widow")
_ZH_HE = ("先生", "少爷", "老爷", "公子", "师兄", "大哥", "伯伯", "叔叔")
_ZH_SHE = ("太太", "夫人", "小姐", "女士", "姑娘", "娘子", "师姐", "大姐", "阿姨", "婆婆", "老板娘")
_SUMMARY_HE = re.compile(r"\b(?:he|his|him|himself|husband|widower|father|son|brother|man|boy|"
                         r"gentleman|houseboy|king)\b", re.IGNORECASE)
_SUMMARY_SHE = re.compile(r"\b(?:she|her|hers|herself|wife|widow|mother|daughter|sister|woman|girl|"
                          r"lady|mistress|queen|actress)\b", re.IGNORECASE)

# a Chinese summary says 他 or 她 ("他是个船夫。"); 其他 is "other", 他们 and 她们 are plural
_SUMMARY_HE_ZH = re.compile(r"(?<!其)他(?!们)")
_SUMMARY_SHE_ZH = re.compile(r"她(?!们)")
# without a pronoun, what a Chinese summary calls the character ("翊坤宫的宫女，十六岁")
_SUMMARY_HE_NOUN_ZH = re.compile(r"太监|公公|皇子|王爷|男人|男子|丈夫|父亲|儿子|哥哥|弟弟|老爷|少爷|"
                                 r"和尚|书生|老头")
_SUMMARY_SHE_NOUN_ZH = re.compile(r"宫女|嬷嬷|妃|皇后|公主|女人|女子|姑娘|妻子|母亲|女儿|妹妹|姐姐|"
                                  r"夫人|尼姑|丫鬟|乳母|老太太|老妇")

Recent = Callable[[], list[list[tuple[str, NodeDict]]]]


@dataclass(frozen=True)
class Referents:
    """Mentions to match against (names, pronouns, dropped subjects) and the names set aside."""

    mentions: list[Mention]
    zeros: set[int]  # indexes (into ``mentions``) of dropped subjects
    set_aside: list[tuple[Mention, str]]  # names that fill no slot, and why
    notes: list[str] = field(default_factory=list)  # pronouns left unbound, and why
    possessive: set[int] = field(default_factory=set)  # possessors: only a pattern going on with 的 or 's
    dropped: set[int] = field(default_factory=set)  # objects the words leave out: only a {~slot}


def _is_character(node: NodeDict | None) -> bool:
    return node is not None and node.get("layer") == "character"


def _pronoun_of(node: NodeDict | None) -> str | None:
    """"he", "she", "they", or None when nothing about the node tells."""
    if node is None:
        return None
    traits = node.get("traits") or {}
    value = traits.get("pronouns")
    if isinstance(value, str) and value.strip():
        return value.strip().lower().split("/")[0]
    gender = traits.get("gender")
    if isinstance(gender, str):
        g = gender.strip().lower()
        if g in ("male", "man", "m", "he", "男"):
            return "he"
        if g in ("female", "woman", "f", "she", "女"):
            return "she"
    names = [str(node.get("name", "")), *(str(a) for a in node.get("aliases", []) or [])]
    found = set()
    for name in names:
        first = name.split()[0].lower() if name.split() else ""
        if first in _TITLES_HE or name.endswith(_ZH_HE):
            found.add("he")
        if first in _TITLES_SHE or name.endswith(_ZH_SHE):
            found.add("she")
    if len(found) == 1:
        return found.pop()
    if found:
        return None
    summary = str(node.get("summary") or "")
    he = bool(_SUMMARY_HE.search(summary) or _SUMMARY_HE_ZH.search(summary))
    she = bool(_SUMMARY_SHE.search(summary) or _SUMMARY_SHE_ZH.search(summary))
    if he != she:
        return "he" if he else "she"
    if not he:  # no pronoun at all: the nouns that name the character
        he = bool(_SUMMARY_HE_NOUN_ZH.search(summary))
        she = bool(_SUMMARY_SHE_NOUN_ZH.search(summary))
        if he != she:
            return "he" if he else "she"
    return None


def resolve(text: str, mentions: list[Mention], nodes: dict[str, NodeDict | None], lex: Lexicon,
            analysis: Analysis, recent: Recent) -> Referents:
    """Add pronoun, "who", "it" and dropped-subject mentions; set aside excluded names and possessors.

    ``recent()`` gives, newest first, the nodes each recent event named (in the
    order it named them); it is only called when the event does not tell.
    """
    set_aside: list[tuple[Mention, str]] = []
    kept: list[Mention] = []
    notes: list[str] = []
    possessors: set[tuple[int, int]] = set()
    for m in mentions:
        why = _aside(text, m, nodes, lex)
        if why == "possessive":
            possessors.add((m.start, m.end))
            kept.append(m)
        elif why:
            set_aside.append((m, why))
        else:
            kept.append(m)
    taken = [(m.start, m.end) for m in mentions]
    chars = [m for m in kept if len(m.ids) == 1 and _is_character(nodes.get(m.ids[0]))]
    added: list[Mention] = []
    recent_cache: list[list[list[tuple[str, NodeDict]]]] = []

    def recent_once() -> list[list[tuple[str, NodeDict]]]:
        if not recent_cache:
            recent_cache.append(recent())
        return recent_cache[0]

    taken_starts = sorted(s for s, _ in taken)
    taken_end = dict(taken)
    for pm in _PRONOUN_RX.finditer(text):
        k = bisect.bisect_right(taken_starts, pm.start()) - 1
        if k >= 0 and taken_end[taken_starts[k]] > pm.start():
            continue  # inside a name
        word = pm.group(0).lower()
        # "his ribs", "her ring": a possessor, who fills only a slot a possessive or a thing owned
        # follows ("{who} @body")
        owner = word == "his" or (word == "her" and not _OBJECT_AFTER.match(text, pm.end()))
        who, why = _antecedent(text, PRONOUNS[word], pm.start(),
                               word in ("him", "her", "them") and not owner, chars, nodes, analysis,
                               recent_once, owner=owner)
        if who is not None:
            m = Mention(pm.start(), pm.end(), pm.group(0), (who,))
            added.append(m)
            if owner:
                possessors.add((m.start, m.end))
            else:
                bisect.insort(chars, m, key=lambda c: c.start)
        elif why and not owner:
            notes.append(f"{pm.group(0)!r} bound to nobody: {why}")
    added += _relative_who(text, kept, nodes, analysis, taken)
    added += _it(text, kept, nodes, taken, analysis)
    ordered = sorted(kept + added, key=lambda m: m.start)
    zeros = _zero_positions(text, ordered, analysis)
    acting = [m for m in ordered if (m.start, m.end) not in possessors]
    zero_mentions: list[Mention] = []
    for pos in zeros:
        subject = _subject(text, pos, acting, nodes, analysis, recent_once)
        if subject is not None:
            ids = subject if isinstance(subject, tuple) else (subject,)
            zero_mentions.append(Mention(pos, pos, "", ids))
    taken_zero = {m.start for m in zero_mentions}
    zero_mentions += [m for m in _participle_subjects(text, analysis, acting, nodes)
                      if m.start not in taken_zero]
    left_out = _dropped_objects(text, ordered, nodes, analysis)
    final = sorted(ordered + zero_mentions + left_out, key=lambda m: (m.start, m.end))
    dropped = {i for i, m in enumerate(final) if any(m is o for o in left_out)}
    zero_ids = {i for i, m in enumerate(final) if m.start == m.end and i not in dropped}
    owners = {i for i, m in enumerate(final) if (m.start, m.end) in possessors and m.start < m.end}
    return Referents(final, zero_ids, set_aside, notes, owners, dropped)


def _aside(text: str, m: Mention, nodes: dict[str, NodeDict | None], lex: Lexicon) -> str | None:
    before = text[max(0, m.start - 20):m.start]
    if lex.exclusion_rx is not None and budget.search(lex.exclusion_rx, before):
        return "set aside (contrast)"
    if _OUTSIDE_ZH.match(text, m.end) and all(_is_place(nodes.get(i)) for i in m.ids):
        return "set aside (outside it: 重症监护室外面的走廊)"
    if any(_is_character(nodes.get(i)) for i in m.ids) and _POSSESSIVE.match(text, m.end):
        return "possessive"
    if all(_is_item(nodes.get(i)) for i in m.ids):
        if _POSSESSIVE_EN.match(text, m.end):
            return "set aside (a part of it: the Key's chain)"
        if _ANOTHER.search(before) and not m.text[:1].isupper():
            return "set aside (one of its kind, not this one: a key, a different lantern)"
    return None


def _is_place(node: NodeDict | None) -> bool:
    return node is not None and node.get("kind") == "place"


def _is_item(node: NodeDict | None) -> bool:
    return node is not None and node.get("layer") == "item"


def _name_of(nodes: dict[str, NodeDict | None], node_id: str) -> str:
    node = nodes.get(node_id) or {}
    return str(node.get("name") or node_id)


def _antecedent(text: str, pronoun: str, pos: int, is_object: bool, chars: list[Mention],
                nodes: dict[str, NodeDict | None], analysis: Analysis, recent: Recent,
                owner: bool = False) -> tuple[str | None, str | None]:
    """The one character the pronoun at ``pos`` can be, or None with the reason (None: no note).

    A pronoun is none of the others its own clause names (reflexives aside): "Bishop trusted
    him" is not Bishop, and in "他一刀砍在了高公公的胳膊上" 他 is not 高公公. A Chinese object in
    a clause whose subject is left out is not that subject, the sentence's first character
    ("陈博文一拳打在何院长脸上，打断了他的鼻梁": 他 is 何院长). A possessive ("his", "her") may
    be anyone, its clause's subject included ("Ray drew his baton").
    """
    clause = analysis.clause_of(pos)
    window = _window_start(analysis, pos)
    s0, s1 = analysis.sentence_of(pos)
    lo = bisect.bisect_left(chars, window, key=lambda c: c.start)
    mid = bisect.bisect_left(chars, pos, key=lambda c: c.start)
    hi = bisect.bisect_left(chars, s1, key=lambda c: c.start)
    others: set[str] = set()
    if clause is not None and not owner:
        others = {m.ids[0] for m in chars[lo:hi] if clause.unit.holds(m.start, m.end)
                  and clause.unit.start <= m.start and not m.start <= pos < m.end}
        cjk_object = _zh_object(text, pos, clause.unit.start)
        if cjk_object and not any(m.start < pos for m in chars[lo:mid]
                                  if clause.unit.holds(m.start, m.end) and clause.unit.start <= m.start):
            dropped = _clause_opener(text, clause.unit.start, chars, nodes, analysis)
            if dropped is None:
                first = next((m for m in chars[lo:mid] if m.start >= s0), None)
                dropped = first.ids[0] if first is not None else None
            if isinstance(dropped, str):
                others.add(dropped)  # the dropped subject of its clause
    before = [m for m in chars[lo:mid] if m.end <= pos and m.ids[0] not in others]
    got = _pick(pronoun, [m.ids[0] for m in before], nodes)
    if got[0] is not None or got[1]:
        return got
    later = [m for m in chars[mid:hi] if m.start > pos and m.ids[0] not in others]
    if later and clause is not None and any(not clause.unit.holds(m.start, m.end) for m in later) \
            and _pick(pronoun, [m.ids[0] for m in later], nodes)[0] is not None:
        return None, "a character named after it could be the one meant"
    for named in recent():
        people = [i for i, node in named if _is_character(node) and i not in others]
        for i, node in named:
            nodes.setdefault(i, node)
        if people:
            return _pick(pronoun, people, nodes)
    return None, None


def _window_start(analysis: Analysis, pos: int) -> int:
    """Where the sentence of ``pos`` and the three before it start: what a pronoun looks back at."""
    k = bisect.bisect_right(analysis._sentence_starts, pos) - 1
    return analysis.sentences[max(0, k - 3)][0] if analysis.sentences else 0


def _pick(pronoun: str, ids: list[str], nodes: dict[str, NodeDict | None]) -> tuple[str | None, str | None]:
    """Among ``ids``: the one that agrees with ``pronoun`` and nobody else could be it."""
    sure = sorted({i for i in ids if _pronoun_of(nodes.get(i)) == pronoun})
    maybe = sorted({i for i in ids if _pronoun_of(nodes.get(i)) is None} - set(sure))
    if len(sure) + len(maybe) == 1:
        return (sure or maybe)[0], None
    if not sure and not maybe:
        return None, None
    names = " or ".join(_name_of(nodes, i) for i in [*sure, *maybe][:3])
    return None, f"it could be {names}"


def _zh_object(text: str, pos: int, clause_start: int) -> bool:
    """A Chinese pronoun that does not open its clause is an object ("对她", "交给了他")."""
    if not is_cjk(text[pos:pos + 1]):
        return False
    head = text[clause_start:pos].strip()
    return bool(head) and not re.fullmatch(r"[\s“”\"「」『』]*", head)


def _relative_who(text: str, mentions: list[Mention], nodes: dict[str, NodeDict | None],
                  analysis: Analysis, taken: list[tuple[int, int]]) -> list[Mention]:
    """"Ma Ling, who left it behind": "who" is Ma Ling."""
    out = []
    ends = {m.end: m for m in mentions if len(m.ids) == 1 and _is_character(nodes.get(m.ids[0]))}
    for c in analysis.clauses:
        if c.kind != "relative" or c.opener not in ("who", "whom"):
            continue
        comma = c.unit.start
        m = re.match(r",\s*(who|whom)\b", text[comma:], re.IGNORECASE)
        if m is None:
            continue
        antecedent = ends.get(comma) or ends.get(comma - 1)
        if antecedent is None or c.opener != "who":
            continue
        start = comma + m.start(1)
        if any(s < start + 3 and start < e for s, e in taken):
            continue
        out.append(Mention(start, start + 3, text[start:start + 3], antecedent.ids))
    return out


def _it(text: str, mentions: list[Mention], nodes: dict[str, NodeDict | None],
        taken: list[tuple[int, int]], analysis: Analysis) -> list[Mention]:
    """"burned it", "把它烧了": the one item the event names before "it" (in its sentence or the
    three before)."""
    items = [m for m in mentions if len(m.ids) == 1 and (nodes.get(m.ids[0]) or {}).get("layer") == "item"]
    starts = sorted(s for s, _ in taken)
    ends = {s: e for s, e in taken}
    out = []
    for pm in _IT_RX.finditer(text):
        k = bisect.bisect_right(starts, pm.start()) - 1
        if k >= 0 and ends[starts[k]] > pm.start():
            continue  # inside a name
        window = _window_start(analysis, pm.start())
        before = {m.ids[0] for m in items if window <= m.start and m.end <= pm.start()}
        if len(before) == 1 and _it_is_object(text, pm.start()):
            out.append(Mention(pm.start(), pm.end(), pm.group(0), (before.pop(),)))
    return out


def _it_is_object(text: str, pos: int) -> bool:
    """"burned it", "left it behind", "把它": "it" after a verb, not "it rained", "make it to"."""
    if text[pos] == "它":
        return True
    before = re.search(r"([A-Za-z]+)\s*$", text[max(0, pos - 30):pos])
    if before is None:
        return False
    word = before.group(1).lower()
    after = text[pos + 2:pos + 12].lower()
    if word in ("make", "made", "makes", "making", "take", "took", "takes", "taking") \
            and after.lstrip().startswith(("to ", "for ", "easy", "that")):
        return False
    return word not in ("is", "was", "be", "been", "that", "if", "when", "and", "but", "as", "so",
                        "because", "though", "although", "while", "where", "what", "how", "why")


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
             analysis: Analysis, recent: Recent) -> str | tuple[str, ...] | None:
    """The subject a dropped one continues: the first name of its sentence, or of the one before.

    After "and" with no comma ("Edith stayed behind and learned ..."), the verb goes on
    with the clause it is joined to: the first name of that clause. Two names joined
    ("林远和苏晴吵了一架，回到了藏经阁") are both the subject: a tuple of both ids.
    """
    s0, _ = analysis.sentence_of(pos)
    clause = analysis.clause_of(pos)
    quoted = _quoted(text, s0, pos)
    if quoted:  # a name inside a quotation is someone's words, not the one who goes on acting
        mentions = [m for m in mentions if not any(a <= m.start < b for a, b in quoted)]
    starts = _starts(mentions)
    if clause is not None and clause.kind == "vp":
        i = analysis.index_of(clause)
        prev = next((c for c in reversed(analysis.clauses[max(0, i - 8):i])
                     if c.sentence == clause.sentence and c.kind not in ("relative", "paren", "sub")),
                    None)
        if prev is not None:
            lo, hi = bisect.bisect_left(starts, prev.unit.start), bisect.bisect_left(starts, prev.unit.end)
            inside = [m for m in mentions[lo:hi] if prev.unit.holds(m.start, m.end) and m.start < m.end]
            if inside:
                return _head(text, inside, nodes)
    if is_cjk(text[pos:pos + 1]):
        opener = _clause_opener(text, pos, mentions, nodes, analysis)
        if opener is not None:
            return opener
    spans = [(s0, pos)]
    k = analysis.sentence_index(pos)
    spans += [analysis.sentences[j] for j in range(k - 1, max(-1, k - 4), -1)]
    for start, end in spans:
        lo, hi = bisect.bisect_left(starts, start), bisect.bisect_left(starts, end)
        inside = [m for m in mentions[lo:hi] if m.end <= end and m.start < m.end]
        if inside:
            return _head(text, inside, nodes)
    if any(m.start < m.end for m in mentions):
        return None
    for named in recent():
        chars = [i for i, node in named if _is_character(node)]
        if chars:
            return chars[0] if len(set(chars)) == 1 else None
    return None


_QUOTED = re.compile(r"“[^”\n]*”|\"[^\"\n]*\"|「[^」\n]*」|『[^』\n]*』")


def _quoted(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """The quotations in ``text[start:end]`` (what someone says), as spans."""
    if not any(q in text[start:end] for q in "“\"「『"):
        return []
    return [m.span() for m in _QUOTED.finditer(text, start, end)]


_OPENING_ZH = re.compile(r"[\s“”\"「」『』]*")


def _clause_opener(text: str, pos: int, mentions: list[Mention], nodes: dict[str, NodeDict | None],
                   analysis: Analysis) -> str | tuple[str, ...] | None:
    """The character (or the two joined) opening the nearest clause before ``pos`` in its
    sentence that opens with one: a Chinese sentence changes its subject at a clause that
    names a new one, and the clauses after go on with it ("皇上宣方阁老进宫，方阁老冒着大雪，半
    个时辰后便赶到了乾清宫": 方阁老 arrives; "小雨的心跳停了，林晓月按了二十分钟，还是没能…":
    林晓月 fails)."""
    s0, _ = analysis.sentence_of(pos)
    starts = _starts(mentions)
    cuts = [m.end() for m in PUNCT_BOUNDARY.finditer(text, s0, pos)]
    for at in reversed([s0, *cuts]):
        opening = _OPENING_ZH.match(text, at)
        at = opening.end() if opening else at
        if at >= pos:
            continue
        k = bisect.bisect_left(starts, at)
        if k < len(mentions) and mentions[k].start == at and mentions[k].start < mentions[k].end:
            head = _head(text, [m for m in mentions[k:] if m.start < pos and m.start < m.end], nodes)
            if head is not None:
                return head
    return None


_STARTS: dict[int, tuple[list[Mention], list[int]]] = {}


def _starts(mentions: list[Mention]) -> list[int]:
    """The starts of ``mentions`` (sorted), computed once per list."""
    cached = _STARTS.get(id(mentions))
    if cached is None or cached[0] is not mentions:
        _STARTS.clear()
        cached = (mentions, [m.start for m in mentions])
        _STARTS[id(mentions)] = cached
    return cached[1]


def _head(text: str, inside: list[Mention],
          nodes: dict[str, NodeDict | None]) -> str | tuple[str, ...] | None:
    """The subject a clause starts with: its first character, or the two joined there."""
    first = inside[0]
    if len(first.ids) != 1 or not _is_character(nodes.get(first.ids[0])):
        return None  # the sentence is about something else (the rain, the ring)
    if len(inside) > 1 and re.fullmatch(r"\s*(?:and|&|和|与|跟|同|、)\s*",
                                        text[first.end:inside[1].start], re.IGNORECASE):
        second = inside[1]
        if len(second.ids) == 1 and _is_character(nodes.get(second.ids[0])) \
                and (len(inside) < 3 or not re.fullmatch(r"\s*(?:and|,|&|和|与|跟|同|、)\s*",
                                                         text[second.end:inside[2].start])):
            return (first.ids[0], second.ids[0])  # "Lin Yuan and Su Qing": both
        return None
    return first.ids[0]


FILLER_REACH = 40  # characters of adverbs, manner and way that may stand before a verb


def _dropped_objects(text: str, mentions: list[Mention],
                     nodes: dict[str, NodeDict | None], analysis: Analysis) -> list[Mention]:
    """The item a Chinese clause goes on acting on without naming it: "高公公把玉玺从袖中取出来，
    双手捧着，交到了柳贵妃手里" hands over the seal; "又还给了她" gives back what was taken.

    At the start of a Chinese clause that names no item, a zero-length mention of the one item
    the clauses before it name (in its sentence, else in the one before); none where they name
    two. Only a pattern's ``{~item}`` slot takes it, and only when the pattern's next word
    follows at once (:func:`zero_fits`).
    """
    out: list[Mention] = []
    items = [m for m in mentions if m.start < m.end and len(m.ids) == 1 and _is_item(nodes.get(m.ids[0]))]
    if not items:
        return out
    starts = [m.start for m in items]
    subjects = {m.start: m.end for m in mentions if m.start < m.end and len(m.ids) == 1
                and _is_character(nodes.get(m.ids[0]))}
    clause_starts = {s for s, _ in analysis.sentences} | {m.end() for m in PUNCT_BOUNDARY.finditer(text)}
    for at in sorted(clause_starts):
        while at < len(text) and text[at].isspace():
            at += 1
        pos = subjects.get(at, at)  # after the subject it names: "白鹭转手又给了奥卡福"
        if not is_cjk(text[pos:pos + 1]):
            continue
        clause = analysis.clause_of(pos)
        end = clause.unit.end if clause is not None else pos
        k = bisect.bisect_left(starts, pos)
        if k < len(items) and items[k].start < end:
            continue  # the clause names its own item
        k_sentence = analysis.sentence_index(pos)
        for j in (k_sentence, k_sentence - 1):
            if j < 0:
                break
            a, b = analysis.sentences[j]
            named = {m.ids[0] for m in items if a <= m.start and m.end <= min(b, pos)}
            if named:
                if len(named) == 1:
                    out.append(Mention(pos, pos, "", (named.pop(),)))
                break
    return out


def _participle_subjects(text: str, analysis: Analysis, mentions: list[Mention],
                         nodes: dict[str, NodeDict | None]) -> list[Mention]:
    """"Having given the ring to Ana, Bo left": the participle's subject is the subject of the
    clause after its comma. A participle of perceiving ("Seeing Bo stab Ana, Cy ...") gives
    that subject nothing: what is seen is told, and the onlooker did none of it."""
    from narrative.diffusers.clauses import opens_with_participle

    out: list[Mention] = []
    starts = _starts(mentions)
    for s0, s1 in analysis.sentences:
        at = opens_with_participle(text, s0, s1)
        if at is None or any(a <= at < b for a, b in analysis.factive):
            continue
        comma = text.find(",", at, s1)
        k = bisect.bisect_left(starts, comma)
        if k >= len(mentions) or mentions[k].start >= s1:
            continue
        after = mentions[k]
        if text[comma + 1:after.start].strip() or len(after.ids) != 1 \
                or not _is_character(nodes.get(after.ids[0])):
            continue
        out.append(Mention(at, at, "", after.ids))
    return out


@functools.lru_cache(maxsize=4096)
def after_fillers(text: str, pos: int) -> int:
    """Where the verb of a dropped subject would start: past adverbs ("quietly", "随即"), the
    manner ("哭着", "顶着风雪") and the way ("沿着…", "从北镇抚司") before it.

    The furthest point that a run of fillers reaches exactly, within the clause: one filler
    can end where another begins in more than one way ("顶着风雪|一路" and "顶着风雪一|路"),
    and only an exact run says where the verb may start.
    """
    m = _FILLERS.match(text, pos)
    greedy = m.end() if m else pos
    stop = _CLAUSE_END.search(text, pos, pos + FILLER_REACH)
    limit = stop.start() if stop else min(len(text), pos + FILLER_REACH)
    for end in range(limit, greedy, -1):
        if _FILLERS.fullmatch(text, pos, end):
            return end
    return greedy


_CLAUSE_END = re.compile(r"[，。,；;！？!?：:\n]")


def zero_fits(text: str, zero: Mention, words: tuple[tuple[int, int], ...]) -> bool:
    """A dropped subject fills a slot only when the pattern's next word follows it at once."""
    after = [s for s, _ in words if s >= zero.end]
    return bool(after) and after_fillers(text, zero.end) >= min(after)
