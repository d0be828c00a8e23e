"""The demo agent uses the notebook's MCP server: asked to ``look into NAME``, it lists the kernel's
variables, inspects NAME and asks to run code on it (a groupby and a bar plot), as a data scientist's
agent would — no model, no keys. Asked to ``add a cell that plots NAME``, it reads the open notebook,
inserts that code as a new cell below the prompt (the user reviews it: Apply / Skip) and, once applied,
runs it there (asked again), so the plot shows under the new cell. Asked to ``run in the kernel:`` followed
by code (fenced or not), it asks to run exactly that code.

- The server is the stdio one named ``notebook`` among the session's ``mcpServers`` (what silo_nb offers a
  session connected from a kernel). The demo agent is its MCP client, written with the official ``mcp``
  SDK's ``Client``: it starts the server for the step and stops it after (a real agent keeps it for the
  session; starting it costs the SDK's import, about 2 s).
- The code it proposes comes from what ``inspect_variable`` said (the type line, the dtypes): a pandas
  or polars frame with a text and a number column gets a groupby and a plot; anything else a summary.
- Without the server, or without the SDK, it says so in one line and the turn goes on.
"""

from __future__ import annotations

import re
import sys
from typing import Any, Protocol

from silo_nb_agents.demo.rpc_endpoint import JsonObject
from silo_nb_agents.demo.session_store import Session

__all__ = ["add_cell", "cell_asked", "code_asked", "look_into", "looked_into", "proposed_code", "run_given"]

_LOOK_INTO = re.compile(r"\blook into\s+`?([A-Za-z_][A-Za-z0-9_]*)`?")
_ADD_CELL = re.compile(r"\badd a cell\b(?:.*?\bplots?\s+`?([A-Za-z_][A-Za-z0-9_]*)`?)?", re.IGNORECASE)
_RUN_GIVEN = re.compile(r"\brun in the kernel:\s*(.+)", re.IGNORECASE | re.DOTALL)
_FENCE = re.compile(r"^```[a-z]*\n(.*?)\n?```\s*$", re.DOTALL)
_DTYPE = re.compile(r"^- (.+): (\S+)$", re.MULTILINE)
_NUMBER = re.compile(r"^(u?int|float|Int|UInt|Float|Decimal)")
_GROUP = re.compile(r"^(object|str|string|category|bool|String|Categorical|Enum|Boolean|Utf8)")


class Script(Protocol):
    """What this step needs of a turn script (``scripted_turns.TurnScript``)."""

    session: Session

    async def say(self, text: str, parts: int = 1) -> None: ...

    async def pause(self, seconds: float) -> None: ...


def looked_into(text: str) -> str | None:
    """The variable a prompt asks to ``look into``, if it does."""
    match = _LOOK_INTO.search(text)
    return match.group(1) if match else None


def cell_asked(text: str) -> str | None:
    """For a prompt that asks to ``add a cell`` (that plots NAME): NAME, or ``""`` when it names none."""
    match = _ADD_CELL.search(text)
    return (match.group(1) or "") if match else None


def code_asked(text: str) -> str | None:
    """The code a prompt asks to ``run in the kernel:`` (its fences taken off), if it does."""
    match = _RUN_GIVEN.search(text)
    if match is None:
        return None
    code = match.group(1).strip()
    fenced = _FENCE.match(code)
    return fenced.group(1) if fenced else code


def notebook_server(servers: list[JsonObject]) -> JsonObject | None:
    """The stdio MCP server called ``notebook``, from ``session/new``'s ``mcpServers``."""
    for server in servers:
        if server.get("name") == "notebook" and isinstance(server.get("command"), str):
            return server
    return None


def proposed_code(name: str, inspected: str) -> str:
    """The code to ask to run on ``name``, from what ``inspect_variable`` said about it."""
    columns = _DTYPE.findall(inspected)
    group = next((c for c, t in columns if _GROUP.match(t)), None)
    value = next((c for c, t in columns if _NUMBER.match(t)), None)
    if "DataFrame (pandas)" in inspected and group and value:
        return (
            f"summary = {name}.groupby({group!r})[{value!r}].mean().sort_values()\n"
            f"ax = summary.plot.bar(title={f'mean {value} by {group}'!r}, rot=0)\n"
            "ax.figure.tight_layout()\n"
            "summary"
        )
    if "DataFrame (polars)" in inspected and group and value:
        return (
            "import matplotlib.pyplot as plt\n"
            "import polars as pl\n\n"
            f"summary = {name}.group_by({group!r}).agg(pl.col({value!r}).mean()).sort({value!r})\n"
            "fig, ax = plt.subplots()\n"
            f"ax.bar([str(g) for g in summary[{group!r}]], summary[{value!r}].to_list())\n"
            f"ax.set_title({f'mean {value} by {group}'!r})\n"
            "summary"
        )
    return f"print(type({name}).__name__)\n{name}"


def _text(result: Any) -> str:
    return "\n".join(str(getattr(block, "text", "")) for block in result.content if block.type == "text")


def _figures(result: Any) -> int:
    return sum(1 for block in result.content if block.type == "image")


def _summary(name: str, inspected: str) -> str:
    kind = re.search(r"^\*\*\w+\*\*: (.+)$", inspected, re.MULTILINE)
    shape = re.search(r"^shape: (.+)$", inspected, re.MULTILINE)
    nulls = re.search(r"^null counts: (.+)$", inspected, re.MULTILINE)
    described = f"`{name}` is a {kind.group(1) if kind else 'value'}" + (
        f" ({shape.group(1)})" if shape else ""
    )
    missing = [part for part in (nulls.group(1).split(", ") if nulls else ()) if not part.endswith(": 0")]
    return described + (f"; what stands out: missing values ({', '.join(missing)})" if missing else "")


async def _say_how_it_ran(self: Script, ran: Any, what: str, done: str, figures_where: str) -> None:
    await self.pause(0)
    if ran.is_error:
        await self.say(f"{what} did not run: {_text(ran).splitlines()[-1]}")
        return
    figures = _figures(ran)
    plot = f" and {figures} figure{'s' if figures != 1 else ''} {figures_where}" if figures else ""
    await self.say(f"{done}{plot}.")


def _client(server: JsonObject) -> Any:
    """The official SDK's client of the ``notebook`` server (its stderr to this process's own)."""
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {str(v.get("name")): str(v.get("value")) for v in server.get("env") or () if isinstance(v, dict)}
    params = StdioServerParameters(
        command=str(server["command"]), args=[str(a) for a in server.get("args") or ()], env=env
    )
    return Client(stdio_client(params, errlog=sys.__stderr__ or sys.stderr))


async def _server_or_say(self: Script, servers: list[JsonObject], wanted: str) -> JsonObject | None:
    server = notebook_server(servers)
    if server is None:
        await self.say(f"I would {wanted}, but this client gave me no notebook tools to do it with.")
        return None
    try:
        import mcp.client  # noqa: F401  (the SDK, or one line)
    except ImportError:
        await self.say(f"I would {wanted}, but the `mcp` package is not installed where I run.")
        return None
    return server


async def look_into(self: Script, name: str, servers: list[JsonObject]) -> None:
    """The step (see the module docstring)."""
    server = await _server_or_say(self, servers, f"look into `{name}`")
    if server is None:
        return
    await self.say(f"Let me look into `{name}` in your kernel: the variables there first, then `{name}`.")
    async with _client(server) as client:
        await client.call_tool("list_variables", {})
        await self.pause(0)
        inspected = await client.call_tool("inspect_variable", {"name": name, "rows": 5})
        if inspected.is_error:
            await self.say(f"I could not inspect `{name}`: {_text(inspected)}")
            return
        about = _text(inspected)
        await self.say(
            f"{_summary(name, about)}. I would like to run this in your kernel; it asks you first."
        )
        ran = await client.call_tool("run_code", {"code": proposed_code(name, about)})
    await _say_how_it_ran(self, ran, "The code", "It ran: the result is in the card above", "came back")


async def run_given(self: Script, code: str, servers: list[JsonObject]) -> None:
    """Ask to run exactly ``code`` in the kernel."""
    server = await _server_or_say(self, servers, "run code in your kernel")
    if server is None:
        return
    await self.say("I'll run that in your kernel; it asks you first.")
    async with _client(server) as client:
        ran = await client.call_tool("run_code", {"code": code})
    await _say_how_it_ran(self, ran, "The code", "It ran: the result is in the card above", "came back")


async def add_cell(self: Script, name: str, servers: list[JsonObject]) -> None:
    """Add a cell that plots ``name`` (or a first look at the kernel, with no name) below the prompt, then
    run it there (see the module docstring)."""
    server = await _server_or_say(self, servers, "add a cell to your notebook")
    if server is None:
        return
    async with _client(server) as client:
        notebook = await client.call_tool("read_notebook", {})
        if notebook.is_error:
            await self.say(f"I cannot edit this notebook: {_text(notebook)}")
            return
        cells = _text(notebook).splitlines()[0]
        if name:
            inspected = await client.call_tool("inspect_variable", {"name": name, "rows": 5})
            source = proposed_code(name, _text(inspected)) if not inspected.is_error else f"{name}"
        else:
            source = "%whos"
        await self.say(f"Your notebook has {cells.split(': ', 1)[-1]} I'll add a cell below your prompt.")
        added = await client.call_tool("insert_cell", {"source": source})
        cell_id = (added.structured_content or {}).get("cell_id")
        if added.is_error or not cell_id:
            await self.say(f"The cell was not added: {_text(added)}")
            return
        await self.say(f"Added cell `{cell_id}`. Now I'll run it there, so you see what it does.")
        ran = await client.call_tool("run_cell", {"cell_id": cell_id})
    done = f"It ran in cell `{cell_id}`: its output is in the notebook"
    await _say_how_it_ran(self, ran, "The cell", done, "under it")
