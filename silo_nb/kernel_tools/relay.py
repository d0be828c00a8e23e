"""The "notebook" MCP server an agent starts (``python -m silo_nb.kernel_tools``): the official ``mcp`` SDK's
``MCPServer`` over stdio, each tool call relayed to the kernel over its Unix socket (``wire.py``).

- It holds no state and runs no tool: the kernel does (``socket_server.py``). Each call is one connection
  carrying the session's token, from ``$SILO_NB_KERNEL_TOOLS_TOKEN``; the socket is
  ``$SILO_NB_KERNEL_TOOLS_SOCKET``. Without them it says so on stderr, in one line, and exits 2.
- A kernel that is gone or refuses becomes a tool error the agent reads (``isError``), never a crash of
  the server: the agent's session goes on.
- The SDK (about 2 s to import) is loaded here only, in the agent's process, never in the kernel. (No
  ``from __future__ import annotations`` here: the SDK reads the tools' annotations, which name its types.)
"""

import asyncio
import itertools
import os
import sys
from typing import Any

from silo_nb.kernel_tools.limits import MAX_CELLS, MAX_CODE_CHARS, MAX_ROWS, MAX_VARIABLES, OUTPUT_CHARS
from silo_nb.kernel_tools.wire import MAX_ANSWER_BYTES, SERVER_NAME, SOCKET_ENV, TOKEN_ENV, decode, encode

__all__ = ["INSTRUCTIONS", "build_server", "main"]

INSTRUCTIONS = (
    "Tools on the user's live Jupyter kernel: see its variables and data, and run Python in it with the "
    f"user's permission. Every result is capped ({OUTPUT_CHARS:,} characters). The tools answer only while "
    "the user's turn runs."
)
_DESCRIPTIONS = {
    "list_variables": (
        f"The user's variables in the notebook (no modules, functions or _-names): name, type, shape or "
        f"length, approximate memory; the first {MAX_VARIABLES} by name, with the count."
    ),
    "inspect_variable": (
        "One variable in detail: a pandas or polars DataFrame/Series gives shape, dtypes, its first `rows` "
        f"rows (at most {MAX_ROWS}) as Markdown, describe() and null counts; a NumPy array its shape, dtype, "
        "min/max/mean; anything else its type and a capped repr. An unknown name lists close matches."
    ),
    "run_code": (
        "Run Python in the user's namespace, like a notebook cell (the last expression's value is shown). "
        "The user is asked first and may refuse: then nothing runs. Returns stdout, stderr, the value's "
        f"text, a traceback if it failed, and each matplotlib figure it made as a PNG image. At most "
        f"{MAX_CODE_CHARS:,} characters of code; it is stopped at the kernel's time limit or by the user."
    ),
    "read_cells": f"The kernel's last `last` cells (at most {MAX_CELLS}): inputs and their outputs' text.",
    "show_figure": "The current matplotlib figure as a PNG image, if there is one.",
    "read_notebook": (
        "The notebook the user has open: every cell's id, type, source, outputs as text and execution "
        "count, and which cell holds the running %%prompt. Use the ids with the cell tools."
    ),
    "insert_cell": (
        "Add a cell (cell_type code, markdown or raw) to the open notebook, after the cell `after` (an id), "
        "by default below the cells you added this turn, else below the prompt's cell. The user reviews "
        "it first (Apply / Skip). Never write .ipynb files: use these tools."
    ),
    "edit_cell": (
        "Replace the text `old` by `new` inside one cell (`old` must occur exactly once in it). The user "
        "reviews the change first."
    ),
    "replace_cell": "Replace a cell's whole source. The user reviews the change first.",
    "delete_cell": "Delete a cell. The user reviews it first.",
    "move_cell": "Move a cell after the cell `after` (an id; none: to the top). The user reviews it first.",
    "run_cell": (
        "Run a code cell of the open notebook in the user's kernel, as the user would; its outputs (text, "
        "traceback, figures) are written into that cell and returned. The user is asked first."
    ),
}


class KernelLink:
    """Relays one tool call at a time per connection to the kernel's socket."""

    def __init__(self, socket_path: str, token: str) -> None:
        self.socket_path = socket_path
        self.token = token
        self._ids = itertools.count(1)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The kernel's answer (``wire.py``), or an error answer saying why there is none."""
        request_id = next(self._ids)
        try:
            reader, writer = await asyncio.open_unix_connection(self.socket_path, limit=MAX_ANSWER_BYTES)
        except OSError as exc:
            return _error(
                f"The notebook's kernel is not reachable ({exc.strerror or exc}): the session may be over."
            )
        try:
            writer.write(
                encode({"token": self.token, "id": request_id, "tool": tool, "arguments": arguments})
            )
            await writer.drain()
            answer = decode(await reader.readline())
        except (OSError, ValueError, asyncio.LimitOverrunError) as exc:
            return _error(f"The notebook's kernel did not answer ({type(exc).__name__}).")
        finally:
            writer.close()
        if answer is None:
            return _error("The notebook's kernel closed the connection without an answer.")
        if "refused" in answer:
            return _error(f"The notebook's kernel refused the call: {answer['refused']}.")
        return answer


def _error(text: str) -> dict[str, Any]:
    return {"isError": True, "content": [{"type": "text", "text": text}]}


def build_server(link: KernelLink) -> Any:
    """The SDK's ``MCPServer`` with the five tools, relayed through ``link``."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import CallToolResult, ImageContent, TextContent, ToolAnnotations

    def result(answer: dict[str, Any]) -> CallToolResult:
        blocks: list[TextContent | ImageContent] = []
        for block in answer.get("content") or ():
            if isinstance(block, dict) and block.get("type") == "image":
                blocks.append(ImageContent(type="image", data=str(block["data"]), mime_type="image/png"))
            elif isinstance(block, dict):
                blocks.append(TextContent(type="text", text=str(block.get("text", ""))))
        structured = answer.get("structuredContent")
        return CallToolResult(
            content=list(blocks),
            is_error=bool(answer.get("isError")),
            structured_content=structured if isinstance(structured, dict) else None,
        )

    async def list_variables() -> CallToolResult:
        return result(await link.call("list_variables", {}))

    async def inspect_variable(name: str, rows: int = 10) -> CallToolResult:
        return result(await link.call("inspect_variable", {"name": name, "rows": rows}))

    async def run_code(code: str) -> CallToolResult:
        return result(await link.call("run_code", {"code": code}))

    async def read_cells(last: int = 5) -> CallToolResult:
        return result(await link.call("read_cells", {"last": last}))

    async def show_figure() -> CallToolResult:
        return result(await link.call("show_figure", {}))

    async def read_notebook() -> CallToolResult:
        return result(await link.call("read_notebook", {}))

    async def insert_cell(source: str, cell_type: str = "code", after: str | None = None) -> CallToolResult:
        return result(
            await link.call("insert_cell", {"source": source, "cell_type": cell_type, "after": after})
        )

    async def edit_cell(cell_id: str, old: str, new: str) -> CallToolResult:
        return result(await link.call("edit_cell", {"cell_id": cell_id, "old": old, "new": new}))

    async def replace_cell(cell_id: str, source: str) -> CallToolResult:
        return result(await link.call("replace_cell", {"cell_id": cell_id, "source": source}))

    async def delete_cell(cell_id: str) -> CallToolResult:
        return result(await link.call("delete_cell", {"cell_id": cell_id}))

    async def move_cell(cell_id: str, after: str | None = None) -> CallToolResult:
        return result(await link.call("move_cell", {"cell_id": cell_id, "after": after}))

    async def run_cell(cell_id: str) -> CallToolResult:
        return result(await link.call("run_cell", {"cell_id": cell_id}))

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING")
    reading = ToolAnnotations(read_only_hint=True, open_world_hint=False)
    writing = ToolAnnotations(destructive_hint=True, open_world_hint=False)
    tools = (list_variables, inspect_variable, run_code, read_cells, show_figure, read_notebook)
    for tool in (*tools, insert_cell, edit_cell, replace_cell, delete_cell, move_cell, run_cell):
        annotations = reading if tool in (*tools[:2], *tools[3:]) else writing
        server.add_tool(tool, description=_DESCRIPTIONS[tool.__name__], annotations=annotations)
    return server


def main() -> None:
    socket_path, token = os.environ.get(SOCKET_ENV), os.environ.get(TOKEN_ENV)
    if not socket_path or not token:
        print(
            f"silo_nb.kernel_tools: {SOCKET_ENV} and {TOKEN_ENV} are not set — this server is started by "
            "silo_nb for a session connected from a kernel, not by hand.",
            file=sys.stderr,
        )
        raise SystemExit(2)
    import anyio

    server = build_server(KernelLink(socket_path, token))
    anyio.run(server.run_stdio_async)
