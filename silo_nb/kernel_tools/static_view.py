"""What can be read of a value without running any of the user's code (issue 28): ``list_variables`` is
promised to run none, and the obvious reads all can.

- ``value.__class__`` and ``isinstance`` may call a ``__class__`` property: :func:`type` never does, and
  ``issubclass(type(value), <builtin class>)`` walks the real MRO only.
- ``cls.__module__`` and ``cls.__qualname__`` go through the metaclass (a property there is user code):
  :func:`class_names` reads them with ``type``'s own descriptors, and accepts only plain ``str``.
- ``len()`` calls a subclass's ``__len__``: :func:`builtin_length` calls the builtin's own (``list.__len__``),
  which counts what the container holds.
- ``sys.getsizeof`` calls ``__sizeof__``: :func:`shallow_size` looks it up in the classes' own dicts, and
  calls only a C method (the builtins', ``object``'s, a C library's); a ``__sizeof__`` written in Python is
  passed over for the nearest C one.
- :func:`library_family` recognises a pandas/polars frame or series and a NumPy array only when the class
  is the very one its module holds under that name: a class that merely calls itself ``DataFrame`` is not
  one, and its attributes are never read. The real ones' ``shape`` or ``nbytes`` run the library's code,
  not the user's (a third-party pandas extension array's ``nbytes`` is the one exception: library code,
  though not pandas').
"""

from __future__ import annotations

import collections
import sys
import types
from typing import Any

__all__ = ["builtin_length", "class_names", "library_family", "shallow_size"]

_TYPE_MODULE = type.__dict__["__module__"]
_TYPE_QUALNAME = type.__dict__["__qualname__"]
_TYPE_MRO = type.__dict__["__mro__"]
_TYPE_DICT = type.__dict__["__dict__"]
_MODULE_DICT = vars(types.ModuleType)["__dict__"]
_MISSING = object()

SIZED = (str, bytes, bytearray, list, tuple, dict, set, frozenset, collections.deque, range)

_LIBRARY_CLASSES = {
    ("pandas", "DataFrame"): "pandas-dataframe",
    ("pandas", "Series"): "pandas-series",
    ("polars", "DataFrame"): "polars-dataframe",
    ("polars", "Series"): "polars-series",
    ("polars", "LazyFrame"): "polars-lazyframe",
    ("numpy", "ndarray"): "numpy",
}


def class_names(cls: type) -> tuple[str, str]:
    """(``__module__``, ``__qualname__``) as the class itself holds them, without its metaclass's code;
    ``""`` for a module that is missing or not a ``str``."""
    try:
        module = _TYPE_MODULE.__get__(cls)
    except AttributeError:
        module = ""
    qualname = _TYPE_QUALNAME.__get__(cls)
    return (module if type(module) is str else ""), (qualname if type(qualname) is str else "?")


def builtin_length(value: Any) -> int | None:
    """The length of a builtin container (a subclass's too, as the builtin counts it), else None."""
    cls = type(value)
    for base in SIZED:
        if issubclass(cls, base):
            try:
                return int(base.__len__(value))
            except OverflowError:  # range(10**30)
                return None
    return None


def shallow_size(value: Any) -> int | None:
    """``sys.getsizeof(value)`` when that runs a C method only; else the nearest C ``__sizeof__``'s
    answer; None when there is none."""
    overridden = False
    for klass in _TYPE_MRO.__get__(type(value)):
        found = _TYPE_DICT.__get__(klass).get("__sizeof__", _MISSING)
        if found is _MISSING:
            continue
        if type(found) is types.MethodDescriptorType:
            return int(found(value)) if overridden else sys.getsizeof(value)
        overridden = True  # the user's own __sizeof__ (or anything else): never called
    return None


def library_family(value: Any) -> str:
    """``pandas-dataframe``, ``pandas-series``, ``polars-dataframe``, ``polars-series``,
    ``polars-lazyframe`` or ``numpy`` for exactly those classes (never a subclass, never an impostor);
    ``""`` for anything else. Nothing is imported: a library that is not loaded has no values here."""
    cls = type(value)
    module, qualname = class_names(cls)
    family = _LIBRARY_CLASSES.get((module.split(".")[0], qualname), "")
    if not family:
        return ""
    home = sys.modules.get(module)
    if home is None or not issubclass(type(home), types.ModuleType):
        return ""
    return family if _MODULE_DICT.__get__(home).get(qualname) is cls else ""
