"""YAML front matter with a budget: aliases may not expand a small note into a huge value.

PyYAML's safe loader builds only plain values, but an anchor and its aliases are one object
referred to many times: nine aliases of nine aliases of ... (the "billion laughs") are a few
hundred bytes of text and, once anything walks them (turning them into JSON, say), hundreds of
millions of values. So the document is composed first (a graph of nodes, aliases shared), its
size as it would be expanded is counted over that graph (each shared node counted once per use,
with a memo, so the count itself is linear in the text), and only a document within
``MAX_VALUES`` is built. An alias that contains itself is refused too.

libyaml's parser is used when PyYAML has it (ten times the pure-Python one on a vault of
thousands of notes); it also refuses nesting beyond 1,000 levels by itself.
"""

from __future__ import annotations

from typing import Any, Final

from narrative.errors import InvalidInputError
from narrative.lore.limits import check_value

MAX_VALUES: Final = 10_000  # values (keys, items, scalars) of one note's front matter, expanded
MAX_FRONT_MATTER: Final = 256 * 1024  # characters


def load_front_matter(label: str, text: str) -> Any:
    """The YAML ``text`` of ``label``'s front matter as plain values, within the budget."""
    import yaml

    if len(text) > MAX_FRONT_MATTER:
        raise InvalidInputError(f"{label}: the front matter is {len(text):,} characters, more "
                                f"than the {MAX_FRONT_MATTER:,} narr reads")
    loader_class = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    loader = loader_class(text)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            # an alias is written with "*": without one, nothing expands (the common case, and
            # counting costs as much as composing)
            size = expanded_size(node, MAX_VALUES) if "*" in text else 0
            if size is None:
                raise InvalidInputError(f"{label}: the front matter has a YAML alias that contains itself")
            if size > MAX_VALUES:
                raise InvalidInputError(
                    f"{label}: the front matter's YAML aliases expand to more than {MAX_VALUES:,} "
                    "values", hint="a note's properties need no anchors (&name) or aliases (*name)")
            value = loader.construct_document(node)
        except yaml.YAMLError as exc:
            raise InvalidInputError(f"{label}: the front matter is not YAML ({_one_line(exc)})") from None
        except RecursionError:
            raise InvalidInputError(f"{label}: the front matter is nested too deep") from None
        except ValueError as exc:  # an integer of thousands of digits
            raise InvalidInputError(f"{label}: the front matter holds a value narr cannot read "
                                    f"({str(exc).split(':')[0]})") from None
    finally:
        loader.dispose()
    check_value(f"{label} (front matter)", value)
    return value


def _one_line(exc: Exception) -> str:
    return " ".join(str(exc).split())


def expanded_size(root: Any, budget: int) -> int | None:
    """How many values the YAML node graph under ``root`` stands for once its aliases are
    expanded (stopping early past ``budget``); None when an alias contains itself."""
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    # an explicit stack (node, children done): nesting may be 1,000 deep
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            total = 1
            for child in _children(node, yaml):
                total += sizes[id(child)]
                if total > budget:
                    break
            sizes[key] = min(total, budget + 1)
            if sizes[key] > budget:
                return sizes[key]
            continue
        if key in sizes:
            continue
        if key in on_path:
            return None
        on_path.add(key)
        stack.append((node, True))
        for child in _children(node, yaml):
            if id(child) in on_path:
                return None
            if id(child) not in sizes:
                stack.append((child, False))
    return sizes[id(root)]


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []
