"""The five tools, as one call each that never raises: what the agent gets back, and what the transcript
keeps (``ToolOutcome``).

- ``list_variables``, ``inspect_variable``, ``read_cells`` and ``show_figure`` only read, each bounded by
  :data:`~.limits.TOOL_SECONDS` (a ``__repr__`` that sleeps, or that catches the stop and goes on:
  ``guard.py``); ``run_code`` (``code_runner.py``) is bounded by the profile's ``run_code_timeout``. The
  permission ``run_code`` needs is asked before, by the caller (``socket_server.py``): nothing here decides
  whether code may run.
- A bad argument is ``failed`` with one line saying what to pass; anything a tool raises is ``failed``
  with the exception's type and message: the kernel carries on.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from silo_nb.kernel_tools.cells import current_figure, read_cells
from silo_nb.kernel_tools.code_runner import run_code
from silo_nb.kernel_tools.guard import ToolTimeout, bounded_call
from silo_nb.kernel_tools.limits import OUTPUT_CHARS, TOOL_SECONDS
from silo_nb.kernel_tools.namespace import KernelNamespace
from silo_nb.kernel_tools.report_text import cut
from silo_nb.kernel_tools.variables import ToolInputError, inspect_variable, list_variables

__all__ = ["KernelTools", "ToolOutcome"]


@dataclass
class ToolOutcome:
    """A tool's result: its status, the agent's text and PNGs, the transcript's smaller PNGs (base64)."""

    status: str
    text: str
    images: list[bytes] = field(default_factory=list)
    previews: list[str] = field(default_factory=list)

    @property
    def is_error(self) -> bool:
        return self.status != "completed"

    def content(self) -> list[dict[str, Any]]:
        """MCP content blocks: the text, then the images."""
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text}]
        for png in self.images:
            blocks.append({"type": "image", "mimeType": "image/png", "data": base64.b64encode(png).decode()})
        return blocks


def _arguments(arguments: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(arguments, dict):
        raise ToolInputError("The arguments must be an object.")
    unknown = sorted(set(arguments) - set(allowed))
    if unknown:
        takes = ", ".join(allowed) or "no arguments"
        raise ToolInputError(f"Unknown argument {unknown[0]!r}: this tool takes {takes}.")
    return arguments


class KernelTools:
    """The tools on one namespace (see the module docstring)."""

    def __init__(
        self, namespace: KernelNamespace, *, run_code_timeout: float, tool_seconds: float = TOOL_SECONDS
    ) -> None:
        self.namespace = namespace
        self.run_code_timeout = run_code_timeout
        self.tool_seconds = tool_seconds

    def read(self, tool: str, arguments: Any) -> ToolOutcome:
        """One of the reading tools; ``failed`` with one line for an unknown tool or a bad argument."""
        try:
            return bounded_call(self.tool_seconds, lambda: self._read(tool, arguments))
        except ToolInputError as exc:
            return ToolOutcome("failed", str(exc))
        except ToolTimeout:
            return ToolOutcome(
                "timed_out",
                f"{tool} stopped after {self.tool_seconds:g} s (a repr or a size took too long).",
            )
        except Exception as exc:
            return ToolOutcome("failed", f"{tool} failed: {type(exc).__name__}: {cut(str(exc), 500)}")

    def _read(self, tool: str, arguments: Any) -> ToolOutcome:
        ns = self.namespace
        if tool == "list_variables":
            _arguments(arguments, ())
            return ToolOutcome("completed", list_variables(ns))
        if tool == "inspect_variable":
            args = _arguments(arguments, ("name", "rows"))
            return ToolOutcome("completed", inspect_variable(ns, args.get("name"), args.get("rows", 10)))
        if tool == "read_cells":
            args = _arguments(arguments, ("last",))
            return ToolOutcome("completed", read_cells(ns, args.get("last", 5)))
        if tool == "show_figure":
            _arguments(arguments, ())
            line, rendered = current_figure()
            if rendered is None:
                return ToolOutcome("completed", line)
            return ToolOutcome("completed", line, [rendered.png], [rendered.preview])
        raise ToolInputError(f"Unknown tool {tool!r}.")

    def run(self, arguments: Any) -> ToolOutcome:
        """``run_code`` (once the user allowed it)."""
        try:
            args = _arguments(arguments, ("code",))
            result = run_code(self.namespace, args.get("code"), timeout=self.run_code_timeout)
        except ToolInputError as exc:
            return ToolOutcome("failed", str(exc))
        except Exception as exc:  # a bug here must not take the kernel with it
            return ToolOutcome("failed", f"run_code failed: {type(exc).__name__}: {cut(str(exc), 500)}")
        return ToolOutcome(result.status, cut(result.text(), OUTPUT_CHARS), result.images, result.previews)
