"""The story's conventions as ops, so a program does not keep them by hand.

Who holds an item is kept twice, as the holder's ``holds`` relation and as the item's
``state.holder`` (the generic rules change both); where someone is, as their
``state.location``; what someone knows, as a ``knows`` relation to the secret. Each helper
returns the ops that keep one convention whole, to pass to :func:`narrative.event`::

    narr.event(world, "Lin Yuan hands Su Qing the ring", *narr.ops.give("black-ring", "lin-yuan", "su-qing"))
"""

from __future__ import annotations

from typing import Any

from narrative.model import Op, RelateOp, SetOp, UnrelateOp, UnsetOp


def give(item: str, from_: str | None, to: str) -> list[Op]:
    """``item`` passes from ``from_`` to ``to``.

    ``from_`` None only when nobody holds the item now: these helpers read no world, so a
    holder left unnamed keeps holding it too (``narr.get_value(world, item, "state.holder")``
    says who holds it)."""
    ops: list[Op] = []
    if from_ is not None:
        ops.append(UnrelateOp(source=from_, type="holds", target=item))
    ops += [RelateOp(source=to, type="holds", target=item),
            SetOp(target=item, field="/state/holder", value=to)]
    return ops


def drop(item: str, holder: str, place: str) -> list[Op]:
    """``holder`` leaves ``item`` at ``place``."""
    return [UnrelateOp(source=holder, type="holds", target=item),
            UnsetOp(target=item, field="/state/holder"),
            SetOp(target=item, field="/state/location", value=place)]


def move(who: str, place: str) -> list[Op]:
    """``who`` goes to ``place`` (a node id)."""
    return [SetOp(target=who, field="/state/location", value=place)]


def learn(who: str, secret: str, **attrs: Any) -> list[Op]:
    """``who`` comes to know ``secret`` (``attrs`` on the relation: ``since``, ``source``...)."""
    return [RelateOp(source=who, type="knows", target=secret, attrs=attrs)]


def set_field(target: str, field: str, value: Any) -> list[Op]:
    """Any field, spelt ``state.mood`` or ``/state/mood``."""
    return [SetOp(target=target, field=field, value=value)]
