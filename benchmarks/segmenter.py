"""Would a Chinese word segmenter (jieba) keep names from matching inside longer words?

Names are found in Chinese text at any character boundary (``find_mentions``), so
"林远" is found inside "树林远处" (the wood's far side) and inside "林远山" (another
man's name). A segmenter could veto a name whose span cuts through one of its words.
This measures, on the Chinese sentences of the evaluation set (where every name is
meant) and on a few adversarial ones (where the starred names are not meant):

- names a segmenter veto would drop, meant or not;
- what the rules diffuser writes for the adversarial sentences today;
- what jieba costs: loading its dictionary, and cutting one sentence.

    pip install jieba && python benchmarks/segmenter.py [--names]
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from narrative.delta.request import EventRequest
from narrative.delta.world import DictWorld
from narrative.diffusers.context import Mention, find_mentions
from narrative.diffusers.rules import RulesDiffuser

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "sample-world"
EVAL_SET = ROOT / "tests" / "data" / "diffusion_eval.jsonl"

# (sentence, the names in it that are not meant)
ADVERSARIAL = [
    ("树林远处走来一人，来到渡口。", {"林远"}),
    ("林远山来到渡口，向老周点了点头。", {"林远"}),
    ("树林雪地里一片寂静，老周来到藏经阁。", {"林雪"}),
    ("苏晴朗声一笑，走进了藏经阁。", set()),  # 苏晴 is meant: "朗声" is the next word
    ("山门外的树林远远望去一片漆黑。", {"林远"}),
    ("老周全身湿透，回到渡口。", set()),  # 老周 meant, though "周全" is a word
    ("一位姓林远道而来的客人走进了藏经阁。", {"林远"}),
    ("灯笼里的烛火映着黑戒指上的纹路。", set()),  # 黑戒 inside 黑戒指 is still the ring
]


def cuts_through(m: Mention, bounds: set[int]) -> bool:
    return m.start not in bounds or m.end not in bounds


def main() -> int:
    try:
        started = time.perf_counter()
        import jieba
        jieba.setLogLevel(60)
        jieba.initialize()
        load_ms = (time.perf_counter() - started) * 1000
    except ImportError:
        print("jieba is not installed: pip install jieba", file=sys.stderr)
        return 1
    nodes = [json.loads(p.read_text(encoding="utf-8")) for p in (SAMPLE / "world").rglob("*.json")]
    world = DictWorld(nodes)
    rows = [json.loads(line) for line in EVAL_SET.read_text(encoding="utf-8").splitlines() if line.strip()]
    zh = [r["text"] for r in rows if r["lang"] == "zh"]

    if "--names" in sys.argv:  # the world's names as words of the segmenter's dictionary
        for n in nodes:
            for name in [n["name"], *n.get("aliases", [])]:
                jieba.add_word(name, freq=100000)
        print("with the world's names added to jieba's dictionary")

    def bounds(text: str) -> set[int]:
        out, pos = {0}, 0
        for word in jieba.cut(text, HMM=True):
            pos += len(word)
            out.add(pos)
        return out

    started = time.perf_counter()
    for text in zh:
        bounds(text)
    cut_ms = (time.perf_counter() - started) * 1000 / len(zh)

    meant_dropped = []
    total = 0
    for text in zh:
        b = bounds(text)
        for m in find_mentions(world, text):
            total += 1
            if cuts_through(m, b):
                meant_dropped.append((text, m.text))
    print(f"evaluation set: {len(zh)} Chinese sentences, {total} names found, all meant")
    print(f"  a segmenter veto would drop {len(meant_dropped)} of them")
    for text, name in meant_dropped:
        print(f"    {name} in {text}")

    diffuser = RulesDiffuser(SAMPLE)
    false_found = false_caught = meant_kept = meant_total = 0
    print(f"\nadversarial: {len(ADVERSARIAL)} sentences")
    for text, unmeant in ADVERSARIAL:
        b = bounds(text)
        found = find_mentions(world, text)
        for m in found:
            if m.text in unmeant:
                false_found += 1
                false_caught += cuts_through(m, b)
            else:
                meant_total += 1
                meant_kept += not cuts_through(m, b)
        ops = diffuser.propose(world, EventRequest(content=text, diffuser="rules")).delta.ops
        writes = [f"{getattr(op, 'target', '')} {getattr(op, 'field', '')}={getattr(op, 'value', '')}"
                  for op in ops]
        print(f"  {text}  names {[m.text for m in found]}  cut {'/'.join(jieba.cut(text))}")
        print(f"    rules write today: {writes or 'nothing'}")
    print(f"  unmeant names found: {false_found}, a veto drops {false_caught}")
    print(f"  meant names: {meant_total}, a veto keeps {meant_kept}")
    print(f"\njieba: import and dictionary load {load_ms:.0f} ms (once per process, "
          f"i.e. once per narr event), cut {cut_ms:.2f} ms per sentence")
    return 0


if __name__ == "__main__":
    sys.exit(main())
