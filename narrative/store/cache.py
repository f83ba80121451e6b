"""Former name of :mod:`narrative.store.catalog`, kept so that old imports work for one more release."""

from narrative.ids import normalize_name
from narrative.store.catalog import Catalog

WorldIndex = Catalog

__all__ = ["Catalog", "WorldIndex", "normalize_name"]
