"""Former name of :mod:`narrative.engine.failed`, kept so that old imports work for one more release."""

from narrative.delta.request import EventRequest
from narrative.engine.failed import (
    FailedEvent,
    discard,
    forget_same,
    listing,
    load_all,
    pick,
    save,
    summary,
    update,
)

__all__ = ["EventRequest", "FailedEvent", "discard", "forget_same", "listing", "load_all", "pick",
           "save", "summary", "update"]
