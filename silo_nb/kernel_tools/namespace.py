"""The kernel a tool acts on: the user's namespace, and what the shell lends for running code like a cell.

The kernel tools never import IPython: the notebook layer (``%silo connect``) hands them the shell's
``user_ns``, the names IPython hides (``user_ns_hidden``: ``In``, ``Out``, ``exit``…), its
``transform_cell`` (magics and ``!`` lines become Python) and its display formatter; ``run_grid`` hands the
``__main__`` namespace of the process alone.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Container, Iterator
from dataclasses import dataclass, field
from typing import Any

from silo_nb.kernel_tools.static_view import class_names

__all__ = ["KernelNamespace", "is_user_variable"]

# What a formatter returns for a value: mime type -> data (text/plain's str; image/png's bytes or base64).
FormatValue = Callable[[Any], dict[str, Any]]

_NOT_VARIABLES = (
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    types.BuiltinMethodType,
    type,
)


def is_user_variable(name: str, value: Any, hidden: Container[str]) -> bool:
    """A variable the user made: not a ``_`` name, not hidden by IPython, not a module, a function or a
    class (or a ``typing`` construct). Runs none of the user's code (no ``isinstance``, which may call a
    ``__class__`` property; a name that is not a plain ``str`` is no variable)."""
    if type(name) is not str or name.startswith("_") or name in hidden:
        return False
    if issubclass(type(value), _NOT_VARIABLES):
        return False
    return class_names(type(value))[0] != "typing"


@dataclass
class KernelNamespace:
    """The namespace the tools read and run code in, and the shell's help (each optional)."""

    user_ns: dict[str, Any]
    hidden: Container[str] = field(default_factory=frozenset)
    transform: Callable[[str], str] | None = None
    format_value: FormatValue | None = None
    # The running cell's execution count (In [n]): what a cell the agent runs during it shows.
    execution_count: Callable[[], int | None] | None = None

    def variables(self) -> Iterator[tuple[str, Any]]:
        """The user's variables (:func:`is_user_variable`), in no particular order; the namespace is copied
        first, so code that changes it meanwhile cannot break the walk."""
        for name, value in list(self.user_ns.items()):
            if is_user_variable(name, value, self.hidden):
                yield name, value
