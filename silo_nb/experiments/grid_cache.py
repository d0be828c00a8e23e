"""``run_grid(cache=True)``: a cell that some run already finished with the same inputs is reused, not run.

- The key (:func:`cell_key`) is a sha256 of the cell's inputs, as named parts (:func:`key_parts`; a new
  input is one more line there): the prompts, the repeat (repeats are samples: run B's repeat 2 reuses
  run A's repeat 2, never its repeat 0), the agent (the pinned ``agent_spec`` when the cell names one,
  e.g. ``npm:pkg@1.2.3``, else the profile's resolved command, args and env — so a changed install or
  flag is a miss), the config, the template folder's content hash, the scorers (each name with a hash
  of its identity: a function's module, name and source; a command scorer's argv, timeout and env),
  the permission and question policies, the kernel tools, the cell's own limits (a budget changes what
  a cell does) and the key's own version. The ``agent_name``/``agent_version`` the agent reports in
  ``initialize`` are known only once it runs, so they are not in the key (a pinned spec already says
  which version); a reused row carries the ones its source recorded.
- Only a ``finished`` cell is cached. The index is one small file per key under the data dir
  (``<data dir>/grid-cache/<ab>/<key>.json``: the source run's folder and cell): a look-up is one file
  read whatever the number of runs, where scanning every run folder would read every record of every
  run for each cell. An entry is trusted only if the source's record is still there, finished and
  written under the same key (a deleted or re-run source is a miss, and the stale entry is dropped).
- A hit copies the source's journal, diff, changed files, scores and record into this run (``cached_from``
  says ``<run>/<cell>``); no agent is started. A cached cell adds nothing to the grid's budget.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import json
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from silo_nb.experiments.grid_cell import CellSpec
from silo_nb.experiments.run_folder import RunFolder, atomic_write
from silo_nb.sessions import check_folder, data_dir, read_lines, read_small_file

__all__ = ["CellCache", "cell_key", "key_parts", "scorer_identity", "template_hash"]

_KEY_VERSION = 1
_LIMIT = 256 << 20


def template_hash(template: str | None) -> str | None:
    """sha256 over the template folder's files: each relative path, whether executable, its bytes (a
    link: its target). Computed once per run."""
    if template is None:
        return None
    digest = hashlib.sha256()
    root = Path(template)
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = Path(folder, name)
            relative = path.relative_to(root).as_posix()
            info = path.lstat()
            digest.update(relative.encode("utf-8", "surrogateescape") + b"\0")
            if stat.S_ISLNK(info.st_mode):
                digest.update(b"L" + os.readlink(path).encode("utf-8", "surrogateescape"))
            else:
                digest.update(b"X" if info.st_mode & 0o111 else b"F")
                with path.open("rb") as handle:
                    for block in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(block)
            digest.update(b"\0")
    return digest.hexdigest()


def scorer_identity(scorer: Any, depth: int = 0) -> str:
    """A hash of what a scorer is: a changed function body or command is another scorer."""
    argv = getattr(scorer, "argv", None)
    if argv is not None and hasattr(scorer, "timeout"):  # a command scorer
        shown = scorer_identity(argv, depth + 1) if callable(argv) else list(argv)
        text = json.dumps([shown, scorer.timeout, sorted(getattr(scorer, "env", {}).items())])
    else:
        function = getattr(scorer, "__func__", scorer)
        try:
            body = inspect.getsource(function)
        except (OSError, TypeError):  # made at runtime (a lambda in exec): its bytecode and constants
            code = getattr(function, "__code__", None)
            body = repr((code.co_code, code.co_consts)) if code is not None else repr(function)
        name = f"{getattr(function, '__module__', '')}.{getattr(function, '__qualname__', type(function))}"
        # What the body reads from outside it: a threshold in a closure or a default is part of the scorer.
        cells = [
            _shown(c.cell_contents, depth) for c in getattr(function, "__closure__", None) or () if _filled(c)
        ]
        text = "\n".join([name, body, repr(cells), _shown(getattr(function, "__defaults__", None), depth)])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def _shown(value: Any, depth: int) -> str:
    """A closure's value as text: plain data by value, anything else by its type (an object's default
    repr holds its address, which would make every run a miss)."""
    if value is None or isinstance(value, bool | int | float | str | bytes):
        return repr(value)
    if depth > 8:  # a list that holds itself
        return type(value).__qualname__
    if isinstance(value, list | tuple):
        return "[" + ",".join(_shown(v, depth + 1) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{" + ",".join(f"{_shown(k, depth + 1)}:{_shown(v, depth + 1)}" for k, v in value.items()) + "}"
        )
    if callable(value) and depth < 4:  # a helper the scorer calls (bounded: a function may close over itself)
        return scorer_identity(value, depth + 1)
    return type(value).__qualname__


def key_parts(spec: CellSpec, agent: Mapping[str, Any], template: str | None) -> dict[str, Any]:
    """The inputs a cached cell must share (see the module docstring); one line per input."""
    budget = spec.budget
    return {
        "version": _KEY_VERSION,
        "prompts": list(spec.prompts),
        "repeat": spec.repeat,
        "agent": dict(agent),
        "config": spec.config,
        "template": template,
        "scorers": {name: scorer_identity(s) for name, s in sorted((spec.scorers or {}).items())},
        "policy": repr(spec.policy),
        "answers": repr(spec.answers),
        "kernel_tools": spec.kernel_tools,
        "system_prompt": spec.system_prompt,
        "sandbox": repr(spec.sandbox),  # a sandboxed agent may answer otherwise (it sees less)
        "limits": [budget.max_tokens, budget.max_cost, budget.max_seconds] if budget is not None else None,
    }


def cell_key(spec: CellSpec, agent: Mapping[str, Any], template: str | None) -> str:
    text = json.dumps(key_parts(spec, agent, template), sort_keys=True, default=repr)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def agent_identity(
    profile: str, cell: Mapping[str, Any], config_dirs: tuple[str, ...] | None
) -> dict[str, Any]:
    """The agent part of the key: the cell's pinned ``agent_spec`` if it names one, else the profile's
    resolved command (env values hashed: they may be secrets, and the key is written to disk)."""
    if isinstance(spec := cell.get("agent_spec"), str) and spec:
        return {"spec": spec}
    from silo_nb.sessions import AgentProfilesService

    found = AgentProfilesService(config_dirs).get(profile)
    if found is None:
        return {"profile": profile}
    env = json.dumps(sorted(found.env.items())).encode()
    return {
        "profile": profile,
        "command": found.command,
        "args": list(found.args),
        "env": hashlib.sha256(env).hexdigest()[:16],
    }


class CellCache:
    """The index of finished cells by key (see the module docstring)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root if root is not None else data_dir() / "grid-cache"

    def _entry(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def remember(self, key: str, run: RunFolder, cell: str) -> None:
        """Index a finished cell of ``run`` under ``key``."""
        entry = self._entry(key)
        check_folder(entry.parent, self.root)
        text = json.dumps({"key": key, "run_folder": str(run.path), "run": run.name, "cell": cell})
        atomic_write(entry, text + "\n", root=self.root)

    def find(self, key: str) -> tuple[RunFolder, str] | None:
        """The run folder and cell finished under ``key``, or None (a stale entry is removed)."""
        entry = self._entry(key)
        try:
            data = json.loads(read_small_file(entry, root=self.root, limit=1 << 16))
            source = RunFolder(Path(data["run_folder"]), str(data["run"]), ())
            cell = str(data["cell"])
            if not source.path.is_dir():
                raise FileNotFoundError(source.path)
            check_folder(source.path, source.path)  # refused if another user's, or others may write it
        except (OSError, ValueError, KeyError, TypeError):
            with contextlib.suppress(OSError):
                entry.unlink()
            return None
        record = source.record(cell)
        if record is None or record.get("status") != "finished" or record.get("cache_key") != key:
            with contextlib.suppress(OSError):
                entry.unlink()
            return None
        return source, cell

    def copy_into(
        self, run: RunFolder, cell: str, source: RunFolder, source_cell: str, **fields: Any
    ) -> dict[str, Any]:
        """Write the source cell's files as ``cell`` of ``run``; its record (with ``fields`` and
        ``cached_from``) is returned as written."""
        record = dict(source.record(source_cell) or {})
        record.update(fields, cell=cell, cached_from=f"{source.name}/{source_cell}")
        record.pop("workdir", None)  # the source's kept copy is not this cell's
        try:
            contents: bytes | None = read_small_file(
                source.changes_path(source_cell), root=source.path, limit=_LIMIT
            )
        except OSError:
            contents = None
        lines = read_lines(source.journal_path(source_cell), root=source.path)
        scores = source.scores(source_cell) or None
        run.save(cell, lines, record, diff=source.diff(source_cell), contents=contents, scores=scores)
        return record
