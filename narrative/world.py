"""Former home of :class:`narrative.store.view.WorldView`, kept so that old imports work for one
more release."""

from narrative.store.view import WorldView

__all__ = ["WorldView"]
