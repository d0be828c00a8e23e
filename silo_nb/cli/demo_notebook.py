"""``python -m silo_nb run [NOTEBOOK] [--out DIR] [--lab] [--kernel NAME]``: run headless, twice.

What ``bash .ci/demo`` runs, and what ``tests/integration/test_notebooks.py`` builds on:

- The tracked notebook is only read. It is copied to ``DIR/<name>.ipynb`` (default ``build/demo``) and run
  there, so the checkout stays clean; kernels start in ``DIR``, where the demo agent writes ``notes.md``.
- Each invocation starts afresh in its own data dir and demo-agent state (``DIR/.silo``), so the first run
  really talks to the agent. Kernels get ``JPY_SESSION_NAME`` = the copy's absolute path, as Jupyter
  Server sets it, so two notebooks in one folder never share connection names.
- Run 1 executes the copy in a new kernel and saves it. Run 2 executes the saved copy in another new kernel,
  as "Restart Kernel and Run All" would: every ``%%prompt`` cell must come back from the journal. The proof
  is read from disk, not from the outputs: the prompts in silo_nb's journals and in the demo agent's own
  session files are the same before and after run 2.
- Prints a short summary of each run (cells, turns, a couple of lines of each). ``--lab`` then starts
  JupyterLab on the copy with the same environment (so Restart + Run All there resumes the same sessions);
  when JupyterLab is missing it says how to install it.
- nbclient (the ``demo`` extra) is imported only here; without it, one line says what to install.
- A notebook that talks to real agents names them in ``metadata.silo_nb.needs`` (``demo_needs``): when a
  profile or a key is missing it says what, in one line, runs nothing and exits 0 (a missing agent program
  exits 1). A cell that fails is one line naming the cell (number and first line) and the error.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from silo_nb.cli.demo_needs import failed_cell_line, missing_needs, needs_line, notebook_extras

__all__ = [
    "NotebookFailed",
    "RunReport",
    "agent_prompts",
    "demo_env",
    "journal_prompts",
    "main",
    "prepare",
    "run_twice",
    "summary_lines",
]

DEFAULT_NOTEBOOK = Path("notebooks/01-quickstart.ipynb")
DEFAULT_OUT = Path("build/demo")
STATE = ".silo"  # under the output folder: silo_nb's data dir and the demo agent's sessions
SUMMARY_LINES = 2
SUMMARY_WIDTH = 100


@dataclass
class RunReport:
    """One headless run: the saved notebook and what the agent had been sent once it ended."""

    notebook: Any  # nbformat.NotebookNode (nbformat is an optional dependency)
    seconds: float
    journal_prompts: list[str]
    agent_prompts: list[str]


def demo_env(out_dir: Path, notebook: Path) -> dict[str, str]:
    """The environment of the kernels (and of ``--lab``): the output folder's own data dir and demo state."""
    state = out_dir.resolve() / STATE
    return {
        **os.environ,
        "SILO_NB_DATA_DIR": str(state / "data"),
        "SILO_NB_DEMO_STATE_DIR": str(state / "demo-agent"),
        "SILO_NB_REPLAY_STATE_DIR": str(state / "replay-agent"),
        "JPY_SESSION_NAME": str(notebook.resolve()),
        "PYDEVD_DISABLE_FILE_VALIDATION": "1",  # the debugger's warning on stderr says nothing to a user
    }


def prepare(source: Path, out_dir: Path) -> Path:
    """Copy ``source`` into ``out_dir`` (with a ``data/`` folder next to it, if any) and start afresh.

    Only what this script made is removed (the copy, ``notes.md``, ``.silo``), never the rest of
    ``out_dir``, so pointing ``--out`` at a folder of your own loses nothing else.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / source.name
    if target.resolve() == source.resolve():
        raise ValueError(f"--out {out_dir} is the notebook's own folder; pick another one (e.g. build/demo)")
    shutil.rmtree(out_dir / STATE, ignore_errors=True)
    (out_dir / "notes.md").unlink(missing_ok=True)
    shutil.copyfile(source, target)
    data = source.parent / "data"
    if data.is_dir():
        shutil.copytree(data, out_dir / "data", dirs_exist_ok=True)
    return target


def _user_texts(lines: list[Any], kind_key: str, kind: str) -> list[str]:
    texts: list[str] = []
    for update in lines:
        if isinstance(update, dict) and update.get(kind_key) == kind:
            content = update.get("content")
            texts.append(str(content.get("text", "")) if isinstance(content, dict) else "")
    return texts


def journal_prompts(data_dir: Path) -> list[str]:
    """Every user prompt in silo_nb's journals under ``data_dir``, in file then line order; a fork's journal
    starts with its parent's lines copied verbatim (the same timestamps): a line seen before is not counted
    again, a prompt sent is one line."""
    texts: list[str] = []
    seen: set[str] = set()
    for path in sorted(data_dir.rglob("chat-sessions/*.jsonl")):
        fresh = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        fresh = [line for line in fresh if line not in seen]
        seen.update(fresh)
        texts += _user_texts([json.loads(line) for line in fresh], "kind", "user_message_chunk")
    return texts


def agent_prompts(state_dir: Path) -> list[str]:
    """Every prompt the demo agent itself recorded in its session files (its own state, not ours; those a
    rewind dropped from its conversation included), then
    those the replay agent kept beside it (``replay-agent``: its sessions' progress)."""
    texts: list[str] = []
    for path in sorted(state_dir.glob("*.json")):
        stored = json.loads(path.read_text(encoding="utf-8"))
        history = stored.get("history", [])[stored.get("forkedAt", 0) :]  # a fork's copy of its parent's
        # Prompts an undo rewound out of its conversation were received all the same.
        texts += _user_texts(history + stored.get("rewound", []), "sessionUpdate", "user_message_chunk")
    for path in sorted(state_dir.with_name("replay-agent").glob("*.json")):
        texts += [str(p) for p in json.loads(path.read_text(encoding="utf-8")).get("prompts", [])]
    return texts


def execute(
    path: Path, env: Mapping[str, str], timeout: float = 300, kernel_name: str = "python3"
) -> RunReport:
    """Run the notebook at ``path`` top to bottom in a new kernel of the kernelspec ``kernel_name`` (cwd:
    its folder) and save it in place."""
    import nbformat as untyped_nbformat
    from nbclient import NotebookClient

    nbformat: Any = untyped_nbformat  # its read/write are not annotated

    from nbclient.exceptions import CellExecutionError

    started = time.monotonic()
    nb = nbformat.read(path, as_version=4)
    # The kernel's own log (e.g. its warning about TCP without encryption) says nothing to a demo user.
    client = NotebookClient(
        nb, timeout=timeout, kernel_name=kernel_name, extra_arguments=["--IPKernelApp.log_level=ERROR"]
    )
    running = _send_cell_ids(client)
    try:
        client.execute(cwd=str(path.parent), env=dict(env))
    except CellExecutionError as exc:
        nbformat.write(nb, path)  # as far as it got: the copy shows the failed cell's output
        index = running["index"]
        cell = nb.cells[index] if index is not None else {"source": ""}
        line = failed_cell_line(None if index is None else index + 1, cell["source"], exc.ename, exc.evalue)
        extras = notebook_extras(nb.metadata)
        if exc.ename == "ModuleNotFoundError" and extras:
            line += f" (bash .ci/demo {path.name} installs what it needs: the {', '.join(extras)} extra)"
        raise NotebookFailed(line) from None
    nbformat.write(nb, path)
    state = Path(env["SILO_NB_DATA_DIR"]).parent
    return RunReport(
        nbformat.read(path, as_version=4),
        time.monotonic() - started,
        journal_prompts(Path(env["SILO_NB_DATA_DIR"])),
        agent_prompts(state / "demo-agent"),
    )


class NotebookFailed(Exception):
    """A cell raised: the message is one line naming the cell (``demo_needs.failed_cell_line``)."""


def _send_cell_ids(client: Any) -> dict[str, Any]:
    """Send each cell's id as ``metadata.cellId`` with its execute request, as JupyterLab does.

    nbclient 0.11 sends none, so silo_nb would key the turns by a hash of source and position; with the
    ids, a notebook run here and then opened in JupyterLab finds its turns again by cell after a restart.
    Only the kernel client's ``execute`` is replaced (same message, plus the metadata), through the hooks
    nbclient offers: ``on_notebook_start`` (the client exists) and ``on_cell_execute`` (which cell runs).
    Returns the running cell's id and index, which a failure names.
    """
    running: dict[str, Any] = {"cell_id": None, "index": None}

    def on_cell_execute(cell: Any, cell_index: int | None = None, **_: Any) -> None:
        running["cell_id"] = cell.get("id")
        running["index"] = cell_index

    def on_notebook_start(**_: Any) -> None:
        kc = client.kc

        def execute(
            code: str,
            *,
            silent: bool = False,
            store_history: bool = True,
            user_expressions: dict[str, Any] | None = None,
            allow_stdin: bool | None = None,
            stop_on_error: bool = True,
        ) -> str:
            content = {
                "code": code,
                "silent": silent,
                "store_history": store_history,
                "user_expressions": user_expressions or {},
                "allow_stdin": kc.allow_stdin if allow_stdin is None else allow_stdin,
                "stop_on_error": stop_on_error,
            }
            message = kc.session.msg("execute_request", content)
            if running["cell_id"]:
                message["metadata"]["cellId"] = running["cell_id"]
            kc.shell_channel.send(message)
            return str(message["header"]["msg_id"])

        kc.execute = execute

    client.on_cell_execute = on_cell_execute
    client.on_notebook_start = on_notebook_start
    return running


def run_twice(
    source: Path, out_dir: Path, timeout: float = 300, kernel_name: str = "python3"
) -> tuple[Path, RunReport, RunReport]:
    """Copy ``source`` to ``out_dir``, run it, then run the saved copy again in a fresh kernel (both of
    the kernelspec ``kernel_name``)."""
    target = prepare(source, out_dir)
    env = demo_env(out_dir, target)
    first = execute(target, env, timeout, kernel_name)
    second = execute(target, env, timeout, kernel_name)
    return target, first, second


def _output_lines(output: Mapping[str, Any]) -> list[str]:
    if output.get("output_type") == "stream":
        text = str(output.get("text", ""))
    elif output.get("output_type") == "error":
        text = f"{output.get('ename')}: {output.get('evalue')}"
    else:
        text = str(output.get("data", {}).get("text/plain", ""))
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _clip(line: str) -> str:
    return line if len(line) <= SUMMARY_WIDTH else line[: SUMMARY_WIDTH - 1] + "…"


def summary_lines(nb: Any) -> list[str]:
    """Each code cell's first line, then the first lines of what it showed."""
    lines: list[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        first = cell.source.strip().splitlines()[0] if cell.source.strip() else "(empty)"
        lines.append(_clip(f"In [{cell.execution_count}]: {first}"))
        shown = [line for output in cell.outputs for line in _output_lines(output)]
        lines += ["    " + _clip(line) for line in shown[:SUMMARY_LINES]]
        if len(shown) > SUMMARY_LINES:
            more = len(shown) - SUMMARY_LINES
            lines.append(f"    … {more} more line{'s' if more > 1 else ''}")
    return lines


def turn_outputs(nb: Any) -> list[dict[str, Any]]:
    """The saved transcripts (one per ``%%prompt`` turn): outputs whose ``metadata.silo`` names a cell."""
    return [
        output
        for cell in nb.cells
        if cell.cell_type == "code"
        for output in cell.outputs
        if isinstance(output.get("metadata", {}).get("silo"), dict)
        and "cell_id" in output["metadata"]["silo"]
    ]


def _describe(label: str, target: Path, report: RunReport, out: Any) -> None:
    cells = [c for c in report.notebook.cells if c.cell_type == "code"]
    turns = turn_outputs(report.notebook)
    restored = sum(1 for t in turns if t["metadata"]["silo"].get("restored"))
    print(f"\n== {label} ==", file=out)
    print(
        f"{target}: {len(cells)} code cells, {len(turns)} turns ({restored} restored from the journal), "
        f"{report.seconds:.1f} s",
        file=out,
    )
    for line in summary_lines(report.notebook):
        print("  " + line, file=out)


def lab_command(notebook: Path) -> str:
    """The command that runs ``notebook`` again and opens its copy in JupyterLab (named unless it is the
    default one, so the hint after another notebook's run opens that notebook, not the quickstart)."""
    if notebook == DEFAULT_NOTEBOOK:
        return "bash .ci/demo --lab"
    return f"bash .ci/demo {shlex.quote(str(notebook))} --lab"


def _open_lab(target: Path, env: Mapping[str, str], out: Any, notebook: Path = DEFAULT_NOTEBOOK) -> int:
    lab = Path(sys.executable).with_name("jupyter-lab")
    if not lab.exists():
        found = shutil.which("jupyter-lab")
        lab = Path(found) if found else lab
    if not lab.exists():
        print(
            f"\nJupyterLab is not installed. Install it with `{sys.executable} -m pip install jupyterlab`, "
            f"then run `{lab_command(notebook)}` again.",
            file=out,
        )
        return 1
    print(f"\nStarting JupyterLab on {target} (Ctrl-C stops it)…", file=out, flush=True)
    try:
        return subprocess.call([str(lab), str(target)], env=dict(env))
    except KeyboardInterrupt:
        return 0


def main(argv: list[str] | None = None, out: Any = None) -> int:
    out = out or sys.stdout
    parser = argparse.ArgumentParser(prog="python -m silo_nb run", description=__doc__.splitlines()[0])
    parser.add_argument("notebook", nargs="?", type=Path, default=DEFAULT_NOTEBOOK)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where the run copy goes (build/demo)")
    parser.add_argument("--lab", action="store_true", help="then open the copy in JupyterLab")
    parser.add_argument("--once", action="store_true", help="run once only (no restart and restore check)")
    parser.add_argument("--kernel", default="python3", help="the kernelspec to run it in (e.g. silo-python)")
    args = parser.parse_args(argv)
    try:
        import nbclient  # noqa: F401
    except ImportError:
        print(f"error: nbclient is missing; run `{sys.executable} -m pip install 'silo-nb[demo]'`", file=out)
        return 2
    if not args.notebook.is_file():
        print(f"error: {args.notebook} is not a notebook file; give the path of an .ipynb", file=out)
        return 2
    metadata = json.loads(args.notebook.read_text(encoding="utf-8")).get("metadata", {})
    missing = missing_needs(metadata)
    if missing:
        line = needs_line(str(args.notebook), missing)
        print(line, file=out)
        return 0 if not line.startswith("error:") else 1
    try:
        target = prepare(args.notebook, args.out)
        env = demo_env(args.out, target)
        first = execute(target, env, kernel_name=args.kernel)
        _describe("run 1: a new kernel, talking to the demo agent", target, first, out)
        if args.once:
            print(f"\nSaved: {target} (the tracked {args.notebook} is untouched).", file=out)
            return _open_lab(target, env, out, args.notebook) if args.lab else 0
        second = execute(target, env, kernel_name=args.kernel)
        _describe('run 2: a new kernel, as after "Restart Kernel and Run All"', target, second, out)
    except NotebookFailed as exc:
        print(str(exc), file=out)
        return 1
    except ValueError as exc:
        print(f"error: {str(exc).strip().splitlines()[-1]}", file=out)
        return 1
    resent = len(second.agent_prompts) - len(first.agent_prompts)
    if second.journal_prompts != first.journal_prompts or resent:
        print(f"error: run 2 sent the agent {resent} prompt(s) again; restore did not work", file=out)
        return 1
    print(
        f"\nRun 2 sent the agent nothing: {len(first.agent_prompts)} prompts in the agents' own "
        f"sessions and {len(first.journal_prompts)} in silo_nb's journal, before and after.",
        file=out,
    )
    print(f"Saved: {target} (the tracked {args.notebook} is untouched).", file=out)
    if args.lab:
        return _open_lab(target, env, out, args.notebook)
    print(f"Open it in JupyterLab: {lab_command(args.notebook)}", file=out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
