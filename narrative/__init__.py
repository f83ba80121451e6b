"""narr: a git-backed, versioned narrative engine.

The world graph is a directory of JSON node files; every story event is a git
commit that records its field-level changes. This package is the library; the
``narr`` command is a thin layer over it (:mod:`narrative.cli`).

Importing the package is cheap on purpose: git, pydantic and networkx are
loaded by the modules that need them, so ``narr --version`` starts fast.
"""

__version__ = "0.1.0"

__all__ = ["__version__"]
