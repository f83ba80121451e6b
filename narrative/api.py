"""The supported surface of narr for programs and agents.

Everything a ``narr`` command does is one call here, on a world opened once::

    import narrative as narr

    with narr.open_world("my-world") as world:
        narr.event(world, "Lin Yuan walks to the ferry",
                   narr.SetOp(target="lin-yuan", field="/state/location", value="ferry"))
        narr.get_value(world, "lin-yuan", "state.location")            # "ferry"
        narr.reset(world, "HEAD~1")

Names here keep working from one release to the next (a test holds them);
modules under ``narrative.engine``, ``narrative.store`` and ``narrative.delta``
may move. Errors are the typed ones of :mod:`narrative.errors`, each with
``message``, ``details``, ``hint`` and the exit code the CLI gives it. The
library never prints and never exits.
"""

from __future__ import annotations

from narrative import _FACE
from narrative.lazy import attach

__getattr__, __dir__, __all__ = attach("narrative", _FACE, here=__name__)

TYPE_CHECKING = False
if TYPE_CHECKING:  # the package's names, as the package's own block gives them to type checkers
    from narrative import *  # noqa: F403
del TYPE_CHECKING
