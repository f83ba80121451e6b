"""A chapter's summary: what its events did to the world, in a few clauses of its own language.

A long story cannot hand a writer (or a model) every event of a hundred chapters; a
chapter's summary stands for the chapter once it is far behind (``narr brief`` gives the
summaries of far chapters and the events of the last few). It is made offline, from the
changes the chapter's events recorded, with no model: the net effect on each node, the
things that matter most first (a death, something made or ended, a thing changing hands,
a thread moving, a secret learnt, where people went), in English or in Chinese as the
chapter is written. With the ``llm`` diffuser configured the model may write it instead,
from the same facts and the chapter's text; if it cannot, the offline summary stands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from narrative import fields

if TYPE_CHECKING:
    from narrative.model import Change

MAX_CLAUSES = 12
MAX_LLM_TEXT = 24_000  # characters of the chapter a model is shown


def _cjk_name(node: dict[str, Any] | None, node_id: str) -> str:
    """A node's name for a Chinese sentence: a Chinese alias when its name is not Chinese."""
    from narrative.diffusers.context import is_cjk

    if node is None:
        return node_id
    name = str(node.get("name") or node_id)
    if any(is_cjk(c) for c in name):
        return name
    for alias in node.get("aliases") or []:
        if isinstance(alias, str) and alias and all(is_cjk(c) for c in alias):
            return alias
    return name


def _value(value: Any, name: Callable[[str], str] | None = None) -> str:
    """A value in words: a node's id as its name (a reference field), text as it is."""
    if isinstance(value, str):
        return name(value) if name is not None else value
    return fields.show(value)


def offline(changes: Iterable[Change], node: Callable[[str], dict[str, Any] | None],
            language: str) -> str:
    """The summary of a chapter whose events recorded ``changes`` (oldest first); ``node``
    gives a node as it is known (after the chapter, or as it ended), for its name."""
    zh = language.startswith("zh")

    def name(node_id: str) -> str:
        found = node(node_id)
        if zh:
            return _cjk_name(found, node_id)
        return str((found or {}).get("name") or node_id)

    first: dict[tuple[str, str], Any] = {}
    last: dict[tuple[str, str], Any] = {}
    order: list[tuple[str, str]] = []
    for ch in changes:
        key = (ch.target, ch.field)
        if key not in first:
            first[key] = ch.old
            order.append(key)
        last[key] = ch.new
    clauses: list[tuple[int, str]] = []  # (rank, clause): the most telling first
    gained: dict[str, list[str]] = {}  # item -> who took it
    lost: dict[str, list[str]] = {}  # item -> who let it go
    for key in order:
        target, ptr = key
        before, after = first[key], last[key]
        if fields.same(before, after):
            continue  # back as it was by the chapter's end
        tokens = fields.split(ptr)
        who = name(target)
        if ptr == "":
            if before is fields.ABSENT:
                clauses.append((1, f"出现了{who}" if zh else f"{who} appears"))
            elif after is fields.ABSENT and (before or {}).get("lifecycle") == "permanent":
                clauses.append((1, f"{who}不复存在" if zh else f"{who} ends"))
            continue
        if tokens[:1] == ["relations"] and len(tokens) == 3:
            rtype, other = tokens[1], name(tokens[2])
            if rtype == "holds":
                (gained if after is not fields.ABSENT else lost).setdefault(tokens[2], []).append(target)
            elif rtype == "knows" and after is not fields.ABSENT:
                clauses.append((3, f"{who}得知{other}" if zh else f"{who} learns {other}"))
            elif after is not fields.ABSENT:
                clauses.append((5, f"{who} {rtype} {other}"))
            else:
                clauses.append((6, f"{who}不再{rtype} {other}" if zh else f"{who} no longer {rtype} {other}"))
            continue
        if ptr == "/state/health" and after == "dead":
            clauses.append((0, f"{who}死去" if zh else f"{who} dies"))
        elif ptr == "/state/location" and isinstance(after, str):
            place = name(after)
            clauses.append((4, f"{who}来到{place}" if zh else f"{who} goes to {place}"))
        elif ptr == "/state/status":
            clauses.append((2, f"{who}：{_value(after)}" if zh else f"{who} is {_value(after)}"))
        elif ptr == "/state/holder":
            continue  # told by who takes or gives it (the holder's relation)
        elif tokens[:1] == ["state"] and after is not fields.ABSENT:
            what = ".".join(tokens[1:])
            shown = _value(after, lambda v: name(v) if node(v) is not None else v)
            clauses.append((6, f"{who}的{what}变为{shown}" if zh else f"{who}'s {what} becomes {shown}"))
    for item, takers in gained.items():
        thing = name(item)
        givers = [g for g in lost.get(item, []) if g not in takers]
        taker = name(takers[-1])
        if givers:
            clauses.append((1, f"{thing}从{name(givers[0])}转到{taker}手中" if zh
                            else f"{thing} passes from {name(givers[0])} to {taker}"))
        else:
            clauses.append((3, f"{taker}拿到{thing}" if zh else f"{taker} takes {thing}"))
    for item, givers in lost.items():
        if item not in gained:
            clauses.append((4, f"{name(givers[-1])}失去{name(item)}" if zh
                            else f"{name(givers[-1])} lets go of {name(item)}"))
    if not clauses:
        return "世界没有变化。" if zh else "Nothing in the world changes."
    ranked = sorted(range(len(clauses)), key=lambda i: (clauses[i][0], i))[:MAX_CLAUSES]
    picked = [clauses[i][1] for i in sorted(ranked)]  # in the order they happened
    more = len(clauses) - len(picked)
    if zh:
        text = "；".join(picked) + (f"；另有{more}处变化" if more else "") + "。"
    else:
        text = "; ".join(picked) + (f"; and {more} more changes" if more else "") + "."
        text = text[:1].upper() + text[1:]
    return text


def by_model(text: str, facts: str, language: str) -> str:
    """A summary the configured model writes from the chapter's text and its facts (the
    offline summary); :class:`~narrative.errors.DiffuserError` when it cannot."""
    from narrative.diffusers.chat import ChatClient
    from narrative.errors import DiffuserError
    from narrative.userconfig import load_user_config

    client = ChatClient.from_settings(load_user_config().llm)
    tongue = "Chinese" if language.startswith("zh") else "English"
    schema = {"type": "object", "properties": {"summary": {"type": "string"}},
              "required": ["summary"], "additionalProperties": False}
    messages = [
        {"role": "system", "content": (
            f"Summarise a chapter of a story in {tongue}, in two to four sentences: what "
            "happens, what it sets up, and what it leaves open. Keep to the facts given. "
            'Answer with one JSON object {"summary": "..."} and nothing else.')},
        {"role": "user", "content": f"Facts (what the chapter changed): {facts}\n\n"
                                    f"Chapter:\n{text[:MAX_LLM_TEXT]}"},
    ]
    reply = client.complete(messages, schema)
    import json

    try:
        summary = json.loads(reply.content or "")["summary"]
    except (ValueError, KeyError, TypeError):
        raise DiffuserError("the model's summary is not the JSON asked for",
                            raw_reply=reply.body) from None
    if not isinstance(summary, str) or not summary.strip():
        raise DiffuserError("the model wrote an empty summary", raw_reply=reply.body)
    return summary.strip()[:2000]
