"""The cell tools from the agent's side, through a REAL Jupyter server with collaboration: ``insert_cell``
round trips beside ``run_code``'s.

A JupyterLab server (jupyter-collaboration, silo_nb's extension) starts a kernel for a notebook; the kernel
loads silo_nb and connects the demo agent, whose turn is then held open (``%%prompt --bg`` asking to edit:
it waits for a permission nobody gives), so the tools answer. A listener in the kernel applies every cell
change and runs every ``run_code`` at once (the user's click, without the user). This process plays the
agent: the official ``mcp`` SDK's client starts the relay the kernel offered and calls the tools: stdio →
relay → the kernel's Unix socket → the permission desk and the journal → the server's Unix socket → the
shared notebook (one transaction) → back. The answer comes after the server made the change, so its round
trip bounds the time from the agent's call to the change in the shared document (what every open tab
shows). ``run_code("1+1")`` takes the same road but for the server.

Run: ``python benchmarks/cell_tools.py [--calls 100] [--label after]``; rewrites the section "cell tools
(<label>)" of RESULTS.md (``--label -``: print only).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _results import write_section

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import nbformat  # noqa: E402
from kernel_latency import p95  # noqa: E402
from mcp.client import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from tests.support.lab import lab_server  # noqa: E402
from tests.support.server_kernel import kernel_for, run  # noqa: E402

NOTEBOOK = "bench.ipynb"
LISTENER = """
import json
from silo_nb.notebook.magics import session_of

def _answer(request):
    call = request.tool_call
    raw = (call.raw_input if call is not None else None) or {}
    if isinstance(raw, dict) and raw.get("notebookCell"):
        request.respond("apply")
    elif call is not None and call.kind == "code":
        request.respond("run")

_keep = demo.on_permission(_answer)
_tools = session_of(get_ipython()).connections["demo"].kernel_tools.server_config
print(json.dumps({"command": _tools.command, "args": list(_tools.args), "env": _tools.env}))
"""


async def calls(config: dict[str, object], n: int) -> tuple[list[float], list[float]]:
    params = StdioServerParameters(
        command=str(config["command"]),
        args=[str(a) for a in config["args"]],
        env=dict(config["env"]),  # type: ignore[call-overload]
    )
    inserts, runs = [], []
    async with Client(stdio_client(params)) as client:
        for i in range(n):
            started = time.perf_counter()
            result = await client.call_tool("insert_cell", {"source": f"x = {i}"})
            inserts.append(time.perf_counter() - started)
            if result.is_error:
                raise SystemExit(f"insert_cell failed: {result.content}")
            started = time.perf_counter()
            result = await client.call_tool("run_code", {"code": "1+1"})
            runs.append(time.perf_counter() - started)
            if result.is_error:
                raise SystemExit(f"run_code failed: {result.content}")
    return inserts, runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100)
    parser.add_argument("--label", default="after")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root, state = Path(tmp) / "root", Path(tmp) / "state"
        root.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.cells = [nbformat.v4.new_code_cell("%%prompt --bg demo\nedit notes.md")]
        nbformat.write(nb, root / NOTEBOOK)
        env = {"SILO_NB_DATA_DIR": str(Path(tmp) / "data"), "SILO_NB_DEMO_DELAY": "0"}
        with lab_server(root, state, env, collaboration=True) as server:
            client = kernel_for(server, state, NOTEBOOK)
            try:
                run(client, "%load_ext silo_nb")
                run(client, "%silo connect demo")
                config = json.loads(run(client, LISTENER))
                run(client, "%%prompt --bg demo\nedit notes.md")  # held open: its edit waits for nobody
                time.sleep(1.0)
                inserts, runs = asyncio.run(calls(config, args.calls))
            finally:
                client.stop_channels()
            shared, deadline = 0, time.monotonic() + 20  # the server saves a second or so after a change
            while shared < args.calls + 1 and time.monotonic() < deadline:
                time.sleep(0.2)
                try:
                    shared = len(nbformat.read(root / NOTEBOOK, as_version=4).cells)
                except ValueError:  # a save in progress
                    continue
    lines = [
        f"{args.label}: {args.calls} calls each from the agent's MCP client, a real JupyterLab server with "
        "collaboration (each change applied by a listener in the kernel)",
        f"insert_cell (agent's call → change in the shared notebook → answer): p50 "
        f"{statistics.median(inserts) * 1000:.1f} ms, p95 {p95(inserts) * 1000:.1f} ms",
        f"run_code('1+1') (the same road but the server): p50 {statistics.median(runs) * 1000:.1f} ms, "
        f"p95 {p95(runs) * 1000:.1f} ms",
        f"ratio of p95s (insert_cell / run_code): {p95(inserts) / p95(runs):.2f}; "
        f"cells in the file the server saved: {shared}",
    ]
    print("\n".join(lines))
    if args.label != "-":
        write_section(f"cell tools ({args.label})", lines)


if __name__ == "__main__":
    main()
