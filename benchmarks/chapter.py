#!/usr/bin/env python
"""A chapter on a 10k-node world: review and recording of a 5,000-word English chapter and a
10,000-character Chinese one, and ``narr audit`` at 10k, 40k and 200k characters.

    python benchmarks/chapter.py [--nodes 10000] [--rounds 3] [--scratch DIR] [--json OUT]

The world is :mod:`worldgen`'s (sharded, its names in English, pinyin and Chinese) with narr's
generic rules for both languages. The chapters are written from its own people, places and
things: walking from place to place, taking and handing over things, falling ill, between
sentences that name nobody, in scenes of a dozen sentences. Each figure is the median of
``rounds`` after a warm-up:

- review, in process (``narr.review_chapter``, the catalog warm) and through the server
  (``narr chapter FILE --dry-run --json`` as the installed client runs it, ``narr serve``
  started first);
- recording, through the server (``narr chapter FILE --accept all``), the chapter rewound
  (``narr reset --chapter N``, not timed) before each round;
- audit, in process, of chapters of 10k, 40k and 200k characters, and the time per 10k
  characters of each, which a linear reading keeps level.

The targets (a chapter's review within 2 s, its recording within 3 s with the server, an
audit of 200k characters within 20 s) are printed beside the figures; the script fails none.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from worldgen import WorldSpec, build_world

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"review_s": 2.0, "record_s": 3.0, "audit_200k_s": 20.0}
FILLER_EN = ["The rain kept falling on the tiled roofs of the town, steady and grey, as it had all week.",
             "Nobody spoke for a long while, and the only sound was the creak of the boards.",
             "Far off, beyond the river and the dark line of the hills, a bell rang twice and stopped.",
             "The lanterns swung in the wind that came down the valley, throwing their light about.",
             "It was late, the road was empty, and the dogs of the last farm had fallen silent."]
FILLER_ZH = ["雨一直下着，打在镇上的瓦顶上，灰蒙蒙的，整整一个星期都没有停过。",
             "很久都没有人说话，屋里只剩下木板吱呀吱呀的声音。",
             "远处，河那边的山影里，钟响了两声，又停了。",
             "山谷里吹下来的风把灯笼吹得左右摇晃，光影在墙上乱跳。",
             "夜已经深了，路上空无一人，连最后一户人家的狗也不叫了。"]
TAILS_EN = [", without a word to anyone who stood near", " as the last light left the sky",
            ", though the cold had reached the bones of the hands", " while the others watched in silence"]
TAILS_ZH = ["，一句话也没有对旁人说", "，这时天边最后一点光也暗了下去", "，手指早已冻得发僵",
            "，旁边的人都默默地看着"]


def _unique(nodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Nodes whose name and Chinese alias no other node carries (a name is one node)."""
    seen: dict[str, int] = {}
    for n in nodes:
        for name in [n["name"], *n.get("aliases", [])]:
            seen[name] = seen.get(name, 0) + 1
    return [n for n in nodes if seen[n["name"]] == 1 and _zh(n) and seen[_zh(n)] == 1]


def _zh(node: dict[str, Any]) -> str:
    return next((a for a in node.get("aliases", []) if all("\u4e00" <= c <= "\u9fff" for c in a)), "")


def cast(root: Path) -> dict[str, list[dict[str, Any]]]:
    """The people, places and things a chapter names."""
    out: dict[str, list[dict[str, Any]]] = {"people": [], "places": [], "things": []}
    for path in sorted((root / "world").rglob("*.json")):
        node = json.loads(path.read_text("utf-8"))
        if node["layer"] == "character" and node["kind"] == "person" \
                and node["state"].get("health") != "dead":
            out["people"].append(node)
        elif node.get("kind") == "place":
            out["places"].append(node)
        elif node["layer"] == "item":
            out["things"].append(node)
    return {k: _unique(v)[:40] for k, v in out.items()}


def chapter(names: dict[str, list[dict[str, Any]]], size: int, language: str, seed: int = 3) -> str:
    """A chapter of about ``size`` words (English) or characters (Chinese)."""
    rng = random.Random(seed)
    zh = language == "zh"

    def name(n: dict[str, Any]) -> str:
        return _zh(n) if zh else str(n["name"])

    people, places, things = names["people"], names["places"], names["things"]
    scenes: list[list[str]] = [[]]
    measure = 0
    while measure < size:
        a, b = rng.sample(people, 2)
        pick = rng.random()
        tail = rng.choice(TAILS_ZH if zh else TAILS_EN)
        if pick < 0.35:
            s = (f"{name(a)}来到{name(rng.choice(places))}{tail}。" if zh
                 else f"{name(a)} walks to {name(rng.choice(places))}{tail}.")
        elif pick < 0.55:
            s = (f"{name(a)}拿起{name(rng.choice(things))}{tail}。" if zh
                 else f"{name(a)} picks up {name(rng.choice(things))}{tail}.")
        elif pick < 0.65:
            s = (f"{name(a)}把{name(rng.choice(things))}交给{name(b)}{tail}。" if zh
                 else f"{name(a)} gives {name(rng.choice(things))} to {name(b)}{tail}.")
        elif pick < 0.70:
            s = f"{name(a)}受了伤{tail}。" if zh else f"{name(a)} is wounded{tail}."
        else:
            s = rng.choice(FILLER_ZH if zh else FILLER_EN)
        scenes[-1].append(s)
        measure += len(s) if zh else len(s.split())
        if len(scenes[-1]) >= 10:
            scenes.append([])
    title = "第七章 夜渡" if zh else "# Chapter 7: The Night Crossing"
    sep = "\n\n◇◇◇\n\n" if zh else "\n\n* * *\n\n"
    return title + "\n\n" + sep.join(("" if zh else " ").join(x) for x in scenes if x) + "\n"


def make_world(scratch: Path, nodes: int) -> Path:
    cache = scratch / f"chapter-world-{nodes}"
    if not (cache / ".git").is_dir():
        shutil.rmtree(cache, ignore_errors=True)
        build_world(cache, WorldSpec(nodes, "sharded"))
        # the generic rules of both languages, and the rules diffuser, in the genesis itself
        shutil.copytree(ROOT / "narrative" / "rules_generic" / "both", cache / "rules")
        toml = cache / "narr.toml"
        toml.write_text(toml.read_text("utf-8").replace('default = "explicit"',
                                                         'default = "rules"'), "utf-8")
        subprocess.run(["git", "-C", str(cache), "add", "rules", "narr.toml"], check=True)
        subprocess.run(["git", "-C", str(cache), "commit", "-q", "--amend", "--no-edit"],
                       check=True)
        shutil.rmtree(cache / ".git" / "narr", ignore_errors=True)  # its catalog named the old one
    work = scratch / f"chapter-work-{nodes}"
    shutil.rmtree(work, ignore_errors=True)
    shutil.copytree(cache, work, symlinks=True)
    return work


def narr_cmd() -> list[str]:
    """The ``narr`` installed beside this interpreter (the code measured in process too), never
    another one the PATH names first: another checkout's narr would be timed, and its servers
    started."""
    found = shutil.which("narr", path=str(Path(sys.executable).parent))
    return [found] if found else [sys.executable, "-m", "narrative"]


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    started = time.perf_counter()
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return took


def median(xs: list[float]) -> float:
    return statistics.median(xs) if xs else float("nan")


def measure(root: Path, rounds: int) -> dict[str, Any]:
    import narrative as narr

    names = cast(root)
    texts = {"en": chapter(names, 5000, "en"), "zh": chapter(names, 10_000, "zh")}
    out: dict[str, Any] = {"nodes": sum(1 for _ in (root / "world").rglob("*.json")),
                           "chapters": {}, "audit": {}, "targets": TARGETS}
    env = {k: v for k, v in os.environ.items() if k != "NARR_NO_SERVER"}
    cmd = narr_cmd()
    subprocess.run([*cmd, "-C", str(root), "serve", "--detach"], cwd=root, check=True,
                   capture_output=True, env=env)
    try:
        for language, text in texts.items():
            path = root.parent / f"chapter-{language}.md"
            path.write_text(text, "utf-8")
            row: dict[str, Any] = {"characters": len(text), "words": len(text.split()),
                                   "sentences": None}
            with narr.open_world(root) as world:
                inproc, cpu = [], []
                for r in range(rounds + 1):
                    started, used = time.perf_counter(), time.process_time()
                    review = narr.review_chapter(world, text)
                    if r:
                        inproc.append(time.perf_counter() - started)
                        cpu.append(time.process_time() - used)
                row["sentences"] = len(review.sentences)
                row["changes"] = len(review.changes)
                row["findings"] = len(review.findings)
            served = [timed([*cmd, "chapter", str(path), "--dry-run", "--json"], root, env)
                      for _ in range(rounds + 1)][1:]
            record = []
            for _ in range(rounds + 1):
                record.append(timed([*cmd, "chapter", str(path), "--accept", "all"], root, env))
                subprocess.run([*cmd, "reset", "--chapter", "7"], cwd=root, check=True,
                               capture_output=True, env=env)
            row.update(review_in_process_s=median(inproc), review_cpu_s=median(cpu),
                       review_served_s=median(served), record_served_s=median(record[1:]))
            out["chapters"][language] = row
    finally:
        subprocess.run([*cmd, "-C", str(root), "serve", "--stop"], cwd=root, capture_output=True,
                       env=env)
    base = chapter(names, 40_000, "en", seed=5)
    with narr.open_world(root) as world:
        for size in (10_000, 40_000, 200_000):
            text = (base * (size // len(base) + 1))[:size]
            text = text[:text.rfind(".") + 1]
            times, cpu = [], []
            for _ in range(max(1, rounds if size < 200_000 else 1)):
                started, used = time.perf_counter(), time.process_time()
                report = narr.audit(world, text, budget=3600)  # the most an audit may take
                times.append(time.perf_counter() - started)
                cpu.append(time.process_time() - used)
            took = median(times)
            out["audit"][str(size)] = {"seconds": took, "cpu_s": median(cpu),
                                       "sentences": report.sentences,
                                       "per_10k_chars_s": took / len(text) * 10_000}
    out["load_average"] = os.getloadavg()[0]
    return out


def show(result: dict[str, Any]) -> str:
    lines = [f"chapter on a {result['nodes']:,}-node world (targets: review <= 2 s, "
             "recording <= 3 s with the server, audit of 200k characters <= 20 s)"]
    for language, row in result["chapters"].items():
        size = (f"{row['words']:,} words" if language == "en" else f"{row['characters']:,} characters")
        lines.append(f"  {language} chapter, {size}, {row['sentences']} sentences, "
                     f"{row['changes']} changes: review {row['review_in_process_s']:.2f} s in "
                     f"process ({row['review_cpu_s']:.2f} s CPU), {row['review_served_s']:.2f} s "
                     f"served; recording {row['record_served_s']:.2f} s served")
    for size, row in result["audit"].items():
        lines.append(f"  audit {int(size):,} characters ({row['sentences']} sentences): "
                     f"{row['seconds']:.2f} s ({row['cpu_s']:.2f} s CPU), "
                     f"{row['per_10k_chars_s']:.2f} s per 10k characters")
    lines.append(f"  (load average {result['load_average']:.1f} while measured)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scratch", type=Path, default=None,
                        help="where the world is made and cached (default: a temporary folder)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = parser.parse_args(argv)
    scratch = args.scratch or Path(os.environ.get("NARR_BENCH_DIR")
                                   or Path(tempfile.gettempdir()) / "narr-bench")
    scratch.mkdir(parents=True, exist_ok=True)
    root = make_world(scratch, args.nodes)
    result = measure(root, args.rounds)
    print(show(result))
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=2), "utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
