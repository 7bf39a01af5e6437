"""Names that changed, kept working for one release with a ``DeprecationWarning``.

``renamed`` makes a module's ``__getattr__`` for its old attribute names; ``moved`` makes
an old module name stand for its new module.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any

REMOVAL = "the old name goes in the next release"


def renamed(module: str, names: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that serves each old name in ``names`` (old -> new) with a
    warning naming the new one.

    Args:
        module: The module's ``__name__``.
        names: Its old attribute names and their new names.

    Returns:
        The function to assign to the module's ``__getattr__``.
    """

    def __getattr__(name: str) -> Any:
        if name not in names:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new = names[name]
        warnings.warn(f"{module}.{name} is now {new}; {REMOVAL}", DeprecationWarning, stacklevel=2)
        return getattr(sys.modules[module], new)

    return __getattr__


def moved(old: str, new: ModuleType) -> None:
    """Make the module named ``old`` (being imported) stand for ``new``, with a warning."""
    warnings.warn(f"{old} is now {new.__name__}; {REMOVAL}", DeprecationWarning, stacklevel=3)
    sys.modules[old] = new
