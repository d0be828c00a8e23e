"""Checkpoints of kernel variables (issue 32, step 1): what an agent's code may change, saved before it runs,
so that an undo can put it back.

- :func:`names_changed_by` reads the code's syntax (never runs it): the names it may rebind or mutate —
  assignment and ``for``/``with``/``import``/``def``/``class`` targets, ``del``, augmented assignments,
  attribute and item stores (``df.loc[0, "a"] = 99`` → ``df``), the walrus, and a method call on a name
  (``rows.append(1)`` → ``rows``: it may mutate). Names bound only inside a function, a class body or a
  comprehension are that scope's, not the namespace's. Code that does not parse changes nothing.
- :func:`take_checkpoint` saves each of those names as it is now: a name that does not exist yet is noted
  (the undo deletes it); DataFrames, Series and arrays by their own ``copy()``; values that cannot change in
  place (numbers, strings, tuples of them, modules, functions, classes) by reference; anything else by
  ``copy.deepcopy`` in a daemon thread (never on the kernel's loop). Each copy is bounded — by the
  checkpoint's memory budget (``max_bytes``: a value whose estimated size would pass it is not copied at
  all) and by ``seconds`` for a ``__deepcopy__`` that hangs (the copy is abandoned in its thread) — and a
  name that could not be saved is listed with why (:class:`NotRestorable`), never skipped silently.
- :meth:`Checkpoint.restore` puts the saved names back (a saved copy is copied again, so the checkpoint
  survives an undo of the undo) and deletes the names that did not exist; it reports what it restored,
  what it removed and what it could not.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import copy
import sys
import threading
import types
from collections.abc import Iterable, Iterator, MutableMapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "DEFAULT_MAX_BYTES",
    "Checkpoint",
    "NotRestorable",
    "RestoreReport",
    "names_changed_by",
    "take_checkpoint",
]

DEFAULT_MAX_BYTES = 512 * 1024 * 1024  # the profile's checkpoint_max_bytes default (the 512 MB)
DEFAULT_COPY_SECONDS = 2.0  # one value's deepcopy
_SIZE_OBJECTS = 10_000  # objects an estimate walks; past them the estimate says "at least"
_SAMPLE_ROWS = 1_000  # rows of a large DataFrame whose Python objects are measured (then scaled)
_IMMUTABLE = (
    type(None), bool, int, float, complex, str, bytes, range, types.ModuleType, type, types.FunctionType,
    types.BuiltinFunctionType,
)  # fmt: skip
_ABSENT = object()


@dataclass(frozen=True)
class NotRestorable:
    """A name a checkpoint could not save, and why (one line)."""

    name: str
    reason: str


@dataclass(frozen=True)
class RestoreReport:
    """What :meth:`Checkpoint.restore` did."""

    restored: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()  # names the code made, deleted again
    not_restorable: tuple[NotRestorable, ...] = ()


@dataclass
class Checkpoint:
    """The saved names of one checkpoint (see the module docstring)."""

    saved: dict[str, Any] = field(default_factory=dict)  # name -> its copy (or the value, if immutable)
    absent: list[str] = field(default_factory=list)  # names that did not exist
    not_restorable: list[NotRestorable] = field(default_factory=list)
    bytes: int = 0  # the estimated size of the copies

    def restore(self, namespace: MutableMapping[str, Any]) -> RestoreReport:
        restored, removed = [], []
        failed = list(self.not_restorable)
        for name, value in self.saved.items():
            try:
                namespace[name] = _fresh(value)
            except Exception as exc:  # a copy of the copy that fails: the saved one goes back itself
                namespace[name] = value
                failed.append(NotRestorable(name, f"restored once only ({_one_line(exc)})"))
            restored.append(name)
        for name in self.absent:
            if namespace.pop(name, _ABSENT) is not _ABSENT:
                removed.append(name)
        return RestoreReport(tuple(restored), tuple(removed), tuple(failed))


def names_changed_by(code: str) -> tuple[str, ...]:
    """The namespace names ``code`` may rebind or mutate, in the order they appear (see the module
    docstring); ``()`` for code that does not parse."""
    try:
        tree = ast.parse(code)
    except (SyntaxError, ValueError):
        return ()
    found: dict[str, None] = {}
    for node in _top_level(tree):
        for name in _changed(node):
            found.setdefault(name, None)
    return tuple(found)


async def take_checkpoint(
    namespace: MutableMapping[str, Any],
    names: Iterable[str],
    *,
    max_bytes: int = DEFAULT_MAX_BYTES,
    seconds: float = DEFAULT_COPY_SECONDS,
) -> Checkpoint:
    """Save ``names`` of ``namespace`` as they are now (see the module docstring)."""
    checkpoint = Checkpoint()
    for name in dict.fromkeys(names):
        value = namespace.get(name, _ABSENT)
        if value is _ABSENT:
            checkpoint.absent.append(name)
            continue
        if _immutable(value):
            checkpoint.saved[name] = value
            continue
        size, exact = estimate_bytes(value)
        if checkpoint.bytes + size > max_bytes:
            over = "at least " if not exact else ""
            checkpoint.not_restorable.append(
                NotRestorable(
                    name,
                    f"{over}{_mb(size)} would pass the checkpoint budget of {_mb(max_bytes)} "
                    "(checkpoint_max_bytes): not copied",
                )
            )
            continue
        copied, problem = await _copy_within(value, seconds)
        if problem is not None:
            checkpoint.not_restorable.append(NotRestorable(name, problem))
            continue
        checkpoint.saved[name] = copied
        checkpoint.bytes += size
    return checkpoint


def estimate_bytes(value: Any) -> tuple[int, bool]:
    """``(bytes, exact)``: a DataFrame's or Series' memory use (its objects' part sampled), an array's
    ``nbytes``, else the sizes
    of the objects reachable through containers, up to :data:`_SIZE_OBJECTS` of them (``exact`` False past
    that: the figure is a lower bound)."""
    if _is_pandas(value) and callable(getattr(value, "memory_usage", None)):
        try:
            return _pandas_bytes(value), True
        except Exception:
            pass
    nbytes = getattr(value, "nbytes", None)
    if isinstance(nbytes, int) and type(value).__module__.startswith("numpy"):
        return nbytes, True
    total, seen, stack = 0, set[int](), [value]
    while stack:
        if len(seen) >= _SIZE_OBJECTS:
            return total, False
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        try:
            total += sys.getsizeof(item)
        except Exception:
            continue
        stack.extend(_children(item))
    return total, True


def _pandas_bytes(value: Any) -> int:
    """A DataFrame's or Series' size: its buffers, plus its Python objects (strings…) as measured on
    :data:`_SAMPLE_ROWS` rows and scaled (pandas' ``deep=True`` walks every object: 100 ms for a million
    strings, ten times the copy it is to decide on)."""

    def total(frame: Any, deep: bool) -> int:
        used = frame.memory_usage(deep=deep)
        return int(used.sum() if hasattr(used, "sum") else used)

    shallow = total(value, False)
    rows = len(value)
    if rows <= _SAMPLE_ROWS:
        return total(value, True)
    sample = value.iloc[:: max(1, rows // _SAMPLE_ROWS)]
    objects = total(sample, True) - total(sample, False)
    return shallow + objects * rows // max(1, len(sample))


def _children(item: Any) -> Iterator[Any]:
    if isinstance(item, dict):
        yield from item.keys()
        yield from item.values()
    elif isinstance(item, list | tuple | set | frozenset):
        yield from item
    elif hasattr(item, "__dict__") and not isinstance(item, type | types.ModuleType | types.FunctionType):
        attributes = vars(item)
        if isinstance(attributes, dict):
            yield from attributes.values()


async def _copy_within(value: Any, seconds: float) -> tuple[Any, str | None]:
    """``(copy, None)``, or ``(None, why)`` when copying raised or took longer than ``seconds``. A
    ``deepcopy`` runs in a daemon thread of its own, never on the loop: one that hangs in a ``__deepcopy__``
    is left there and its name listed — a daemon, so it holds neither a pool's worker nor the kernel at its
    exit (anyio's worker threads are joined at exit: a 2-minute ``__deepcopy__`` held a process 2 minutes).
    pandas' and numpy's own copies run here (C code, never user code that hangs)."""
    if _is_pandas(value) or type(value).__module__.startswith("numpy"):
        try:
            return _fresh(value), None
        except Exception as exc:
            return None, f"could not be copied ({_one_line(exc)})"
    loop = asyncio.get_running_loop()
    done: asyncio.Future[tuple[Any, BaseException | None]] = loop.create_future()

    def answer(outcome: tuple[Any, BaseException | None]) -> None:
        if not done.done():
            done.set_result(outcome)

    def work() -> None:
        try:
            outcome: tuple[Any, BaseException | None] = (_fresh(value), None)
        except BaseException as exc:  # the reason, reported; nothing escapes the thread
            outcome = (None, exc)
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody waits any more
            loop.call_soon_threadsafe(answer, outcome)

    threading.Thread(target=work, name="silo-checkpoint-copy", daemon=True).start()  # noqa: loop-blocking
    try:
        copied, error = await asyncio.wait_for(asyncio.shield(done), seconds)
    except TimeoutError:
        return None, f"copying took longer than {seconds:g} s: not copied"
    if error is not None:
        return None, f"could not be copied ({_one_line(error)})"
    return copied, None


def _fresh(value: Any) -> Any:
    if _immutable(value):
        return value
    if _is_pandas(value) or type(value).__module__.startswith("numpy"):
        return value.copy(deep=True) if _is_pandas(value) else value.copy()
    return copy.deepcopy(value)


def _is_pandas(value: Any) -> bool:
    return type(value).__module__.startswith("pandas") and hasattr(value, "copy")


def _immutable(value: Any) -> bool:
    if isinstance(value, _IMMUTABLE):
        return True
    if isinstance(value, tuple | frozenset):
        return all(_immutable(item) for item in value)
    return False


def _top_level(tree: ast.Module) -> Iterator[ast.AST]:
    """Every node of the module's own scope: not inside a function, lambda, class body or comprehension
    (their names are theirs), though a function's or class's own name is the module's."""
    stack: list[ast.AST] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.ListComp | ast.SetComp | ast.DictComp | ast.GeneratorExp):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _changed(node: ast.AST) -> Iterator[str]:
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from _stored(target)
    elif isinstance(node, ast.AugAssign | ast.AnnAssign | ast.NamedExpr):
        yield from _stored(node.target)
    elif isinstance(node, ast.Delete):
        for target in node.targets:
            yield from _stored(target)
    elif isinstance(node, ast.For | ast.AsyncFor):
        yield from _stored(node.target)
    elif isinstance(node, ast.withitem) and node.optional_vars is not None:
        yield from _stored(node.optional_vars)
    elif isinstance(node, ast.Import | ast.ImportFrom):
        for alias in node.names:
            if alias.name != "*":
                yield (alias.asname or alias.name).split(".")[0]
    elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        yield node.name
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        base = _base_name(node.func.value)
        if base is not None:
            yield base  # a method call on a name may change it in place (rows.append, df.drop(inplace=True))


def _stored(target: ast.AST) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Tuple | ast.List):
        for item in target.elts:
            yield from _stored(item)
    elif isinstance(target, ast.Starred):
        yield from _stored(target.value)
    elif isinstance(target, ast.Attribute | ast.Subscript):
        base = _base_name(target)
        if base is not None:
            yield base


def _base_name(node: ast.AST) -> str | None:
    """``df`` for ``df``, ``df.loc[0]``, ``df.a.b``, ``rows[0]``; None for a call's result and the like."""
    while isinstance(node, ast.Attribute | ast.Subscript):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _mb(size: int) -> str:
    return f"{size / 1024 / 1024:,.1f} MB" if size >= 1024 * 1024 else f"{size:,} B"


def _one_line(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}"[:300] if text else type(exc).__name__
