"""Synthetic worlds for the benchmarks: realistic node files and a genesis commit, made fast.

A world of ``n`` nodes spreads over the four layers, carries English, pinyin and
Chinese names and aliases, relations between the layers and every lifecycle
(a few ``scene`` and ``event`` nodes, as a story in progress has). Everything is
derived from a seed, so the same parameters always give the same world.

The node files are written directly in narr's canonical form and the genesis
commit is built from ``git add -A`` plus a narr genesis record: for 100k nodes
this takes seconds where validating every node through the library would take
minutes. ``narr check`` accepts the result (the smoke test checks it).
"""

from __future__ import annotations

import random
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GEN_VERSION = 1

LAYER_SHARE = (("character", 0.30), ("item", 0.25), ("ambient", 0.10), ("background", 0.35))

SURNAMES = [
    ("Lin", "林"), ("Su", "苏"), ("Mo", "莫"), ("Zhou", "周"), ("Chen", "陈"), ("Wang", "王"),
    ("Li", "李"), ("Zhang", "张"), ("Liu", "刘"), ("Yang", "杨"), ("Huang", "黄"), ("Zhao", "赵"),
    ("Wu", "吴"), ("Xu", "徐"), ("Sun", "孙"), ("Ma", "马"), ("Zhu", "朱"), ("Hu", "胡"),
    ("Guo", "郭"), ("Gao", "高"), ("Luo", "罗"), ("Zheng", "郑"), ("Liang", "梁"), ("Xie", "谢"),
    ("Song", "宋"), ("Tang", "唐"), ("Han", "韩"), ("Feng", "冯"), ("Deng", "邓"), ("Cao", "曹"),
    ("Peng", "彭"), ("Xiao", "萧"), ("Tian", "田"), ("Dong", "董"), ("Pan", "潘"), ("Yuan", "袁"),
    ("Ye", "叶"), ("Shen", "沈"), ("Lu", "陆"), ("Qin", "秦"), ("Gu", "顾"), ("Meng", "孟"),
    ("Long", "龙"), ("Duan", "段"), ("Lei", "雷"), ("Qian", "钱"), ("Murong", "慕容"),
    ("Ouyang", "欧阳"), ("Shangguan", "上官"), ("Zhuge", "诸葛"),
]
GIVEN = [
    ("Yuan", "远"), ("Xue", "雪"), ("Qing", "青"), ("Feng", "风"), ("Yun", "云"), ("Hua", "华"),
    ("Ming", "明"), ("Lan", "兰"), ("Jian", "剑"), ("Hao", "浩"), ("Yu", "雨"), ("Shan", "山"),
    ("Xin", "心"), ("Ling", "灵"), ("Mei", "梅"), ("Zhu", "竹"), ("Song", "松"), ("Yue", "月"),
    ("Xing", "星"), ("Chen", "晨"), ("Bai", "白"), ("Hong", "红"), ("Tian", "天"), ("Hai", "海"),
    ("Wen", "文"), ("An", "安"), ("Ning", "宁"), ("Jing", "静"), ("Rui", "瑞"), ("Zhi", "志"),
    ("Fei", "飞"), ("Ying", "英"), ("Fang", "芳"), ("Shuang", "霜"), ("Xuan", "玄"), ("Chun", "春"),
    ("Qiu", "秋"), ("Han", "寒"), ("Lian", "莲"), ("Ye", "夜"), ("Guang", "光"), ("Ru", "如"),
]
WESTERN_FIRST = ["Ada", "Bram", "Cora", "Dorian", "Elin", "Fenn", "Greta", "Hugo", "Iris", "Jonas",
                 "Kasia", "Leif", "Mira", "Nils", "Odile", "Piet", "Runa", "Soren", "Tove", "Ulla"]
WESTERN_LAST = ["Ashdown", "Blackwood", "Crane", "Dunmore", "Everly", "Fairweather", "Greaves",
                "Holloway", "Ingram", "Kestrel", "Lockhart", "Marsh", "Northcott", "Oakes",
                "Pryce", "Ravenscroft", "Stone", "Thorne", "Vance", "Wren"]
TITLES = [("Elder", "长老"), ("Senior Brother", "师兄"), ("Senior Sister", "师姐"),
          ("Sect Master", "掌门"), ("Young Master", "公子"), ("Miss", "姑娘"), ("Uncle", "大叔")]
EPITHETS = ["the quiet one", "the ferryman's son", "the wanderer", "the one-eyed", "the scholar",
            "the exile", "the last heir", "the herbalist", "the night watch", "the storyteller"]
CHAR_KINDS = ["person"] * 8 + ["spirit", "beast"]
MOODS = ["calm", "anxious", "angry", "hopeful", "grieving", "curious", "wary", "tired", "elated"]
HEALTH = ["unhurt", "wounded", "poisoned", "recovering", "exhausted"]
SPEECH = ["short sentences, never exclaims", "gentle, slow, full of proverbs", "loud and blunt",
          "speaks in questions", "formal, old-fashioned", "mocking, quick", "whispers"]
TEMPER = ["patient", "calculating", "hot-headed", "loyal", "secretive", "generous", "proud"]

ITEM_ADJ = [("Black", "黑"), ("White", "白"), ("Crimson", "赤"), ("Azure", "青"), ("Golden", "金"),
            ("Silver", "银"), ("Ancient", "古"), ("Broken", "断"), ("Frost", "寒"), ("Jade", "玉"),
            ("Hidden", "隐"), ("Thunder", "雷"), ("Paper", "纸"), ("Bronze", "铜")]
ITEM_NOUN = [("Ring", "戒", "ring"), ("Sword", "剑", "sword"), ("Token", "令", "token"),
             ("Lantern", "灯", "lantern"), ("Scroll", "卷", "scroll"), ("Mirror", "镜", "mirror"),
             ("Bell", "钟", "bell"), ("Fan", "扇", "fan"), ("Seal", "印", "seal"),
             ("Letter", "信", "letter"), ("Pill", "丹", "pill"), ("Blade", "刀", "blade"),
             ("Flute", "笛", "flute"), ("Pendant", "佩", "pendant")]
MATERIALS = ["jade", "black iron", "bronze", "silk", "bone", "paper", "spirit stone", "cold steel"]

AMBIENT = [("Rain", "雨", "weather"), ("Mist", "雾", "weather"), ("Wind", "风", "weather"),
           ("Snow", "雪", "weather"), ("Crowd", "人群", "crowd"), ("Bell", "钟声", "sound"),
           ("Drums", "鼓声", "sound"), ("Incense", "香火", "smell"), ("Moonlight", "月光", "light")]
AMBIENT_TIME = [("Autumn", "秋"), ("Morning", "晨"), ("Night", "夜"), ("Spring", "春"),
                ("Winter", "冬"), ("Evening", "暮"), ("Market", "集市"), ("Festival", "节日")]

PLACE_TYPES = [("Gate", "门"), ("Peak", "峰"), ("Valley", "谷"), ("Lake", "湖"), ("Ferry", "渡"),
               ("Pavilion", "阁"), ("Hall", "殿"), ("Town", "镇"), ("Temple", "寺"), ("Cave", "洞"),
               ("Forest", "林"), ("Bridge", "桥"), ("Market", "市")]
FACTION_TYPES = [("Sect", "宗"), ("School", "派"), ("Gang", "帮"), ("Society", "会"),
                 ("Alliance", "盟")]
BACKGROUND_KINDS = ["place"] * 5 + ["faction"] * 2 + ["rule", "history", "hook"]
RULES = [("Spirit Veins", "灵脉"), ("Sword Oath", "剑誓"), ("Blood Debt", "血债"),
         ("Night Curfew", "宵禁"), ("Inner Trial", "内门试炼"), ("Heavenly Tribulation", "天劫")]


@dataclass
class WorldSpec:
    nodes: int
    layout: str = "sharded"
    seed: int = 7

    @property
    def key(self) -> str:
        return f"world-{self.nodes}-{self.layout}-s{self.seed}-g{GEN_VERSION}"


class _Ids:
    def __init__(self) -> None:
        self.used: set[str] = set()

    def make(self, english: str) -> str:
        base = "-".join("".join(c for c in w.lower() if c.isascii() and c.isalnum())
                        for w in english.split())
        base = "-".join(p for p in base.split("-") if p)[:60] or "node"
        candidate, n = base, 1
        while candidate in self.used:
            n += 1
            candidate = f"{base}-{n}"
        self.used.add(candidate)
        return candidate


def _pinyin_word(rng: random.Random) -> tuple[str, str]:
    a, b = rng.sample(GIVEN, 2)
    return a[0] + b[0].lower(), a[1] + b[1]


def _character(rng: random.Random) -> tuple[str, list[str], str]:
    if rng.random() < 0.25:
        first, last = rng.choice(WESTERN_FIRST), rng.choice(WESTERN_LAST)
        name = f"{first} {last}"
        aliases = [first, f"{last} {rng.choice(['of the North', 'the Younger', 'the Elder'])}"]
        if rng.random() < 0.5:
            aliases.append(rng.choice(EPITHETS))
        return name, aliases, name
    (sn, sz) = rng.choice(SURNAMES)
    (g1, z1) = rng.choice(GIVEN)
    two = rng.random() < 0.4
    (g2, z2) = rng.choice(GIVEN) if two else ("", "")
    given = g1 + g2.lower()
    name = f"{sn} {given}"
    title_en, title_zh = rng.choice(TITLES)
    aliases = [sz + z1 + z2, given, f"{title_en} {sn}", sz + title_zh]
    if rng.random() < 0.3:
        aliases.append(rng.choice(EPITHETS))
    return name, aliases, name


def _item(rng: random.Random) -> tuple[str, list[str], str]:
    (adj, adj_zh) = rng.choice(ITEM_ADJ)
    (noun, noun_zh, kind) = rng.choice(ITEM_NOUN)
    name = f"{adj} {noun}"
    aliases = [adj_zh + noun_zh, f"the {adj.lower()} {noun.lower()}"]
    if rng.random() < 0.3:
        word, zh = _pinyin_word(rng)
        name = f"{word} {noun}"
        aliases = [zh + noun_zh, f"the {noun.lower()}"]
    return name, aliases, kind


def _ambient(rng: random.Random) -> tuple[str, list[str], str]:
    (t, t_zh) = rng.choice(AMBIENT_TIME)
    (a, a_zh, kind) = rng.choice(AMBIENT)
    return f"{t} {a}", [t_zh + a_zh, f"the {a.lower()}"], kind


def _background(rng: random.Random, kind: str) -> tuple[str, list[str], str]:
    word, zh = _pinyin_word(rng)
    if kind == "place":
        (pt, pt_zh) = rng.choice(PLACE_TYPES)
        return f"{word} {pt}", [zh + pt_zh, word], kind
    if kind == "faction":
        (ft, ft_zh) = rng.choice(FACTION_TYPES)
        return f"{word} {ft}", [zh + ft_zh, f"the {ft.lower()}"], kind
    if kind == "rule":
        (r, r_zh) = rng.choice(RULES)
        return f"{r} of {word}", [zh + r_zh], kind
    if kind == "history":
        return f"The Fall of {word}", [zh + "之陷", f"the {word} affair"], kind
    return f"The Secret of {word}", [zh + "之谜"], kind


def generate_nodes(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """``n`` canonical node dicts (every key present, as narr writes them)."""
    rng = random.Random(seed)
    ids = _Ids()
    counts = {layer: max(1, round(n * share)) for layer, share in LAYER_SHARE}
    counts["background"] += n - sum(counts.values())
    stubs: list[dict[str, Any]] = []
    for layer, count in counts.items():
        for _ in range(count):
            if layer == "character":
                name, aliases, _ = _character(rng)
                kind = rng.choice(CHAR_KINDS)
            elif layer == "item":
                name, aliases, kind = _item(rng)
            elif layer == "ambient":
                name, aliases, kind = _ambient(rng)
            else:
                kind = rng.choice(BACKGROUND_KINDS)
                name, aliases, kind = _background(rng, kind)
            stubs.append({"id": ids.make(name), "name": name, "layer": layer, "kind": kind,
                          "aliases": aliases})
    rng.shuffle(stubs)
    # A story in progress has a few transient nodes, not thousands: scene and event
    # nodes are capped so that closing a scene stays a scene-sized change.
    n_scene = min(max(1, n // 50), 40)
    n_event = min(max(1, n // 200), 8)
    for i, stub in enumerate(stubs):
        stub["lifecycle"] = ("scene" if i < n_scene else
                             "event" if i < n_scene + n_event else "permanent")
    permanent = [s for s in stubs if s["lifecycle"] == "permanent"]
    by_kind: dict[str, list[str]] = {}
    for s in permanent:
        by_kind.setdefault(s["layer"], []).append(s["id"])
        by_kind.setdefault(s["kind"], []).append(s["id"])
    places = by_kind.get("place") or by_kind.get("background") or [permanent[0]["id"]]
    factions = by_kind.get("faction") or places
    characters = by_kind.get("character") or [permanent[0]["id"]]
    items = by_kind.get("item") or characters
    lore = (by_kind.get("rule", []) + by_kind.get("history", []) + by_kind.get("hook", [])) or places

    out = []
    for s in stubs:
        nid = s["id"]
        rels: dict[str, dict[str, Any]] = {}

        def rel(rtype: str, pool: list[str], attrs: dict[str, Any] | None = None,
                nid: str = nid, rels: dict[str, dict[str, Any]] = rels) -> None:
            dst = rng.choice(pool)
            if dst != nid:
                rels.setdefault(rtype, {})[dst] = attrs or {}

        layer = s["layer"]
        if layer == "character":
            traits = {"speech": rng.choice(SPEECH), "temper": rng.choice(TEMPER)}
            state = {"location": rng.choice(places), "mood": rng.choice(MOODS),
                     "health": rng.choice(HEALTH)}
            rel("member-of", factions, {"rank": rng.choice(["outer disciple", "inner disciple", "elder"])})
            for _ in range(rng.randint(0, 2)):
                rel("knows", characters)
            if rng.random() < 0.5:
                rel("holds", items)
            if rng.random() < 0.3:
                since = rng.choice(["the ferry", "the trial", "spring"])
                rel("distrusts", characters, {"note": f"since {since}"})
            if rng.random() < 0.2:
                rel("knows", lore)
            summary = (f"{s['name']}, {rng.choice(EPITHETS)}, is {rng.choice(MOODS)} "
                       f"and looking for {rng.choice(['a sister', 'revenge', 'the truth', 'a way home'])}.")
        elif layer == "item":
            traits = {"material": rng.choice(MATERIALS)}
            state = {"holder": rng.choice(characters),
                     "condition": rng.choice(["intact", "cracked", "glowing"])}
            if rng.random() < 0.5:
                rel("attuned-to", lore)
            rel("found-at", places)
            summary = f"A {traits['material']} {s['kind']} with a story nobody tells the same way twice."
        elif layer == "ambient":
            traits = {}
            state = {"intensity": rng.choice(["faint", "steady", "heavy"])}
            rel("over", places)
            summary = rng.choice(["A cold, steady presence over the valley.", "雨一直下，没有停的意思。",
                                  "Everyone notices it; no one mentions it."])
        else:
            traits = {"era": rng.choice(["founding", "the long peace", "the schism", "now"])}
            state = {"status": rng.choice(["stable", "contested", "forgotten", "rising"])}
            if s["kind"] == "place":
                rel("part-of", places)
            elif s["kind"] == "faction":
                rel("based-at", places)
                rel("rival-of", factions)
            else:
                rel("concerns", characters)
            summary = rng.choice(["Older than anyone remembers.", "宗门里人人都知道，却无人提起。",
                                  "The reason the valley is quiet at night."])
        if s["lifecycle"] != "permanent":
            summary = "Only here for now: " + summary
        out.append({
            "aliases": s["aliases"],
            "created_by_event": None,
            "id": nid,
            "kind": s["kind"],
            "layer": layer,
            "lifecycle": s["lifecycle"],
            "name": s["name"],
            "relations": rels,
            "state": state,
            "summary": summary,
            "traits": traits,
        })
    return out


def git(root: Path, *args: str, capture: bool = False) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], check=True, text=True,
                          stdout=subprocess.PIPE if capture else subprocess.DEVNULL)
    return proc.stdout.strip() if capture else ""


def build_world(root: Path, spec: WorldSpec, *, name: str | None = None) -> dict[str, Any]:
    """Write a world of ``spec.nodes`` nodes at ``root`` (which must not exist) with its genesis.

    Returns facts about it (node ids by lifecycle, genesis commit) for the benchmarks.
    """
    from datetime import UTC, datetime

    import pygit2

    from narrative.config import WorldConfig
    from narrative.engine.init import GITIGNORE
    from narrative.ids import new_event_id, node_path
    from narrative.model import EventRecord
    from narrative.nodefile import dump
    from narrative.store import records
    from narrative.store.worldrepo import WorldRepo

    nodes = generate_nodes(spec.nodes, spec.seed)
    root.mkdir(parents=True)
    config = WorldConfig(name=name or f"Bench {spec.nodes} {spec.layout}", language="en",
                         layout=spec.layout, diffuser="explicit")  # type: ignore[arg-type]
    (root / "narr.toml").write_text(config.render(), encoding="utf-8")
    (root / ".gitignore").write_text(GITIGNORE, encoding="utf-8")
    made: set[Path] = set()
    for node in nodes:
        path = root / node_path(node["id"], node["layer"], spec.layout)  # type: ignore[arg-type]
        if path.parent not in made:
            path.parent.mkdir(parents=True, exist_ok=True)
            made.add(path.parent)
        path.write_bytes(dump(node))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    repo = pygit2.Repository(str(root))
    tree = repo.index.write_tree()
    wr = WorldRepo(root, repo, config)
    when = datetime.now(UTC)
    event_id = new_event_id()
    record = EventRecord(kind="genesis", id=event_id, parent=None, content=f"Genesis: {config.name}",
                         created_at=when.strftime("%Y-%m-%dT%H:%M:%SZ"))
    sig = wr.signature(when)
    commit = repo.create_commit(None, sig, sig, records.encode(record), tree, [])
    repo.create_reference_direct("refs/heads/main", commit, True,
                                 message=f"narr init: genesis of {config.name}")
    wr.catalog.sync(repo, wr.world_tree_id(repo[tree]), spec.layout)  # type: ignore[arg-type]
    wr.catalog.remember_event(event_id, str(commit))
    wr.close()
    git(root, "gc", "-q")
    return {
        "nodes": len(nodes),
        "layout": spec.layout,
        "genesis": str(commit),
        "permanent": [(n["id"], n["layer"]) for n in nodes if n["lifecycle"] == "permanent"],
        "lifecycles": {lc: sum(1 for n in nodes if n["lifecycle"] == lc)
                       for lc in ("permanent", "scene", "event")},
        "layers": {layer: sum(1 for n in nodes if n["layer"] == layer) for layer, _ in LAYER_SHARE},
        "relations": sum(len(t) for n in nodes for t in n["relations"].values()),
    }
