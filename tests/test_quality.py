"""The rules a notebook client must keep, one test per rule listing every file that breaks it (lint, format
and types are steps of `.ci/test`, before the suite)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import silo_nb

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)


FORBIDDEN = re.compile(
    r"\bnest_asyncio|asyncio\.run\(|run_until_complete|jupyter_ui_poll|time\.sleep\(|threading\.Thread"
)


# The one thread silo_nb starts itself, and why (marked ``# noqa: loop-blocking`` on its line): a user's
# ``__deepcopy__`` that never returns must be left behind at its bound without holding a pool's worker or
# the interpreter at exit (kernel_tools/checkpoint.py). A thread for I/O is still refused.
ALLOWED_THREADS = {"silo_nb/kernel_tools/checkpoint.py"}


def test_no_loop_blocking_or_nesting() -> None:
    """The kernel's loop is never blocked, nested or replaced; no threads for I/O."""
    hits = [
        f"{path.relative_to(ROOT)}: {line.strip()}"
        for package in ("silo_nb", "silo_nb_agents")
        for path in sorted((ROOT / package).rglob("*.py"))
        for line in path.read_text().splitlines()
        if FORBIDDEN.search(line)
        and not (str(path.relative_to(ROOT)) in ALLOWED_THREADS and line.endswith("# noqa: loop-blocking"))
    ]
    assert not hits, "\n".join(hits)


def test_no_root_logger() -> None:
    for path in [*(ROOT / "silo_nb").rglob("*.py"), *(ROOT / "silo_nb_agents").rglob("*.py")]:
        text = path.read_text()
        assert not re.search(r"\blogging\.(exception|error|warning|info|debug)\(", text), path


def test_import_creates_no_event_loop_and_reads_nothing() -> None:
    code = (
        "import asyncio, silo_nb, sys\n"
        "policy = asyncio.get_event_loop_policy()\n"
        "assert getattr(policy._local, '_loop', None) is None, 'an event loop was created at import'\n"
        "from silo_nb.sessions.default_service import has_default_agents\n"
        "assert not has_default_agents(), 'importing silo_nb made the default AgentsService'\n"
        "svc = silo_nb.AgentsService(workspace_dir='.', config_dirs=[])\n"
        "assert getattr(policy._local, '_loop', None) is None, 'AgentsService() created a loop'\n"
        "print('ok')\n"
    )
    result = _run(sys.executable, "-c", code)
    assert result.stdout.strip() == "ok", result.stderr


def test_public_names_complete_and_sorted() -> None:
    assert list(silo_nb.__all__) == sorted(silo_nb.__all__)
    for name in silo_nb.__all__:
        assert getattr(silo_nb, name) is not None
    required = {
        "AgentsService",
        "AgentSessionsService",
        "AgentSessionHandle",
        "AgentSessionError",
        "AgentPromptBlock",
        "AgentPromptResult",
        "AgentSessionUpdate",
        "AgentToolCall",
        "AgentToolCallContent",
        "AgentPlanEntry",
        "AgentSessionUsage",
        "AgentPermissionRequest",
        "AgentPermissionOption",
        "AgentSessionConfigOption",
        "AgentSessionConfigChoice",
        "AgentCommand",
        "AgentPromptCapabilities",
        "AgentSessionSummary",
        "AgentSessionRestore",
        "AgentInfo",
        "AgentProfileSummary",
        "Disposable",
        "agents",
    }
    assert required <= set(silo_nb.__all__)
    assert issubclass(silo_nb.AgentSessionError, RuntimeError)


def test_every_public_name_has_a_docstring() -> None:
    for name in silo_nb.__all__:
        value = getattr(silo_nb, name)
        if isinstance(value, type):
            assert value.__doc__ and value.__doc__.strip(), name


# -- architecture: acp → sessions → notebook, one way; no import cycles; small modules ------------------

PACKAGE = ROOT / "silo_nb"
# What each layer may import from silo_nb (besides itself and silo_nb.util). The demo agent shares nothing.
ALLOWED = {
    "acp": set(),
    # The vocabulary (models, kinds, errors, journal lines): no I/O, nothing above it.
    "model": set(),
    # Reading the update stream (parse, the facts fold, the transcript reducer, the turn splitter): no I/O.
    "updates": {"acp", "model"},
    "sessions": {"acp", "model", "updates"},
    # The Jupyter server extension and the kernel's channel to it: nothing of the layers above.
    "server": set(),
    # The kernel tools act on a namespace they are lent: they never import IPython (nor the notebook).
    "kernel_tools": {"acp", "model", "updates", "sessions", "server"},
    "experiments": {"acp", "model", "updates", "sessions", "server", "kernel_tools"},
    "notebook": {"acp", "model", "updates", "sessions", "server", "experiments", "kernel_tools"},
    # The programs (install, the terminal demo, the notebook runner): above every layer, below none.
    "cli": {"acp", "model", "updates", "sessions", "server", "kernel_tools", "experiments", "notebook"},
    "replay_agent": {"acp", "model", "updates", "sessions"},
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _ours(module: str) -> bool:
    """``silo_nb`` or a module of it (``silo_nb_agents`` is another package)."""
    return module == "silo_nb" or module.startswith("silo_nb.")


def _silo_imports(path: Path) -> set[str]:
    """Every ``silo_nb...`` module a file imports, at any depth (TYPE_CHECKING and local imports too)."""
    found: set[str] = set()
    package = _module_name(path) if path.name == "__init__.py" else _module_name(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if _ours(alias.name)}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            if _ours(base):
                found.add(base)
                found |= {f"{base}.{alias.name}" for alias in node.names}
    return found


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        graph[name] = {m for m in _silo_imports(path) if m in modules and m != name}
    return graph


# Modules at the package root that every layer may use (shared pieces, not a layer and not the package).
SHARED_ROOT_MODULES = {
    "silo_nb.util",
    "silo_nb.task_set",
    "silo_nb.memo",
    "silo_nb.tuning",
    "silo_nb_agents.user_dirs",
    "silo_nb.version",
    "silo_nb.private_sockets",
}


def test_the_agents_import_nothing_of_silo_nb() -> None:
    """``silo_nb_agents`` are programs of their own: a spawn loads only their modules, and what they say
    on the wire cannot lean on the client's code."""
    bad = [
        f"{path.relative_to(ROOT)} imports {target}"
        for path in sorted((ROOT / "silo_nb_agents").rglob("*.py"))
        for target in _silo_imports(path)
    ]
    assert list((ROOT / "silo_nb_agents").rglob("*.py")), "no agents package"
    # ... and silo_nb uses of them only the per-user folders both sides must agree on.
    bad += [
        f"{path.relative_to(ROOT)}:{node.lineno} imports {node.module}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("silo_nb_agents")
        and node.module != "silo_nb_agents.user_dirs"
    ]
    assert not bad, "\n".join(bad)


def test_no_layer_imports_the_package_root() -> None:
    """``import silo_nb`` (or a root module that is not a shared piece) from inside a layer climbs above
    it: the root re-exports the layers, so the layer would depend on all of them."""
    bad = []
    for path in (path for layer in sorted(ALLOWED) for path in sorted((PACKAGE / layer).rglob("*.py"))):
        for target in _silo_imports(path):
            parts = target.split(".")
            root_level = len(parts) == 1 or (len(parts) == 2 and parts[1] not in ALLOWED)
            if root_level and target not in SHARED_ROOT_MODULES:
                bad.append(f"{path.relative_to(ROOT)} imports {target}")
    assert not bad, "\n".join(bad)


def test_layers_import_one_way() -> None:
    """acp knows nothing of sessions, sessions nothing of notebook (nor IPython/ipywidgets)."""
    bad = []
    in_layers = [(name, path) for name in sorted(ALLOWED) for path in sorted((PACKAGE / name).rglob("*.py"))]
    for layer, path in in_layers:
        text = path.read_text()
        for target in _silo_imports(path):
            parts = target.split(".")
            other = parts[1] if len(parts) > 1 else ""
            if other in ALLOWED and other != layer and other not in ALLOWED[layer]:
                bad.append(f"{path.relative_to(ROOT)} imports {target}")
        if layer != "notebook" and re.search(r"^\s*(from|import) (IPython|ipywidgets)", text, re.MULTILINE):
            bad.append(f"{path.relative_to(ROOT)} imports IPython/ipywidgets")
    assert not bad, "\n".join(bad)


def test_layers_are_reached_through_their_faces() -> None:
    """Outside a layer, only its face (``silo_nb.model``, not ``silo_nb.model.models``): what a layer
    offers is its ``__init__``'s re-exports, so a module inside it can move without breaking the others."""
    bad = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        own = parts[0] if len(parts) > 1 else None
        for node in ast.walk(ast.parse(path.read_text())):
            targets = (
                [node.module or ""]
                if isinstance(node, ast.ImportFrom) and not node.level
                else [alias.name for alias in node.names]
                if isinstance(node, ast.Import)
                else []
            )
            for target in targets:
                layer_parts = target.split(".")
                deep = len(layer_parts) > 2 and layer_parts[0] == "silo_nb" and layer_parts[1] in ALLOWED
                if deep and layer_parts[1] != own:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    assert not bad, "\n".join(bad)


def test_no_import_cycles() -> None:
    """No module reaches itself through imports, counting TYPE_CHECKING and function-level imports
    (package ``__init__`` re-exports are the only edges left out: importing a submodule runs them)."""
    graph = _graph()
    inits = {name for name in graph if (PACKAGE / Path(*name.split(".")[1:]) / "__init__.py").exists()}
    edges = {name: targets - inits for name, targets in graph.items() if name not in inits}
    cycles: list[list[str]] = []

    def visit(node: str, trail: list[str]) -> None:
        for target in sorted(edges.get(node, ())):
            if target in trail:
                cycles.append([*trail[trail.index(target) :], target])
            elif len(trail) < 30:
                visit(target, [*trail, target])

    for start in sorted(edges):
        visit(start, [start])
    assert not cycles, cycles[:5]


# -- modules ask each other through public names ------------------------------------------------------

# Private names of other libraries silo_nb relies on, each with why there is no public way.
FOREIGN_PRIVATE_ALLOWED = {
    ("acp/_give_way.py", "_ready"): "asyncio has no public way to ask whether callbacks are queued",
    ("notebook/magics/comm_pump.py", "_parent_ident"): (
        "ipykernel 6 has get_parent() for the running cell's header but no getter for its routing ident, "
        "which set_parent() needs back after a comm message is dispatched inside the cell"
    ),
}


def _private_pokes(path: Path, root: Path = PACKAGE) -> list[str]:
    """``obj._name`` reads and writes (and ``from m import _name``) of a private name this module does not
    define itself: its own ``self``/``cls`` attributes, functions, classes and attributes it assigns
    count as defined; dunders and IPython's ``_repr_*_`` display protocol are public names."""
    tree = ast.parse(path.read_text())
    own: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            own.add(node.name)
        elif isinstance(node, ast.Attribute) and (
            isinstance(node.ctx, ast.Store)
            or (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            own.add(node.attr)
        elif isinstance(node, ast.Name):
            own.add(node.id)
    pokes: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = node.attr
            if not name.startswith("_") or name.endswith("_") or name in own:
                continue
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            pokes.append(f"{path.relative_to(root)}:{node.lineno}: .{name}")
        elif isinstance(node, ast.ImportFrom):
            pokes += [
                f"{path.relative_to(root)}:{node.lineno}: import {alias.name}"
                for alias in node.names
                if alias.name.startswith("_") and not alias.name.startswith("__")
            ]
    return pokes


def test_no_module_reaches_into_another_module_s_private_names() -> None:
    pokes = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for poke in _private_pokes(path):
            where, name = poke.split(": ", 1)
            if (where.rsplit(":", 1)[0], name.lstrip(".")) not in FOREIGN_PRIVATE_ALLOWED:
                pokes.append(poke)
    assert not pokes, pokes


def test_the_private_name_counter_sees_a_poke(tmp_path: Path) -> None:
    """The check above can fail: a module that reads another object's private attribute is caught."""
    probe = tmp_path / "probe.py"
    probe.write_text(
        "from m import _helper\n"
        "def f(handle):\n    return handle._writer\n"
        "class A:\n    def g(self):\n        return self._mine, _helper\n"
    )
    assert sorted(_private_pokes(probe, tmp_path)) == ["probe.py:1: import _helper", "probe.py:3: ._writer"]


def test_module_names_are_unique_across_the_package() -> None:
    """A name means one thing: no two modules share a basename (leading underscores ignored), so a
    traceback, a grep or a docstring's ``module.py`` points at one file."""
    seen: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name in ("__init__.py", "__main__.py"):
            continue
        seen.setdefault(path.name.lstrip("_"), []).append(str(path.relative_to(PACKAGE)))
    assert {name: paths for name, paths in seen.items() if len(paths) > 1} == {}


def test_installed_packages_are_never_tracked() -> None:
    """``tests/node/node_modules`` (npm's) is installed by ``.ci/setup``; tracked — even as a symlink into a
    checkout — a merge replaces the installed agents with it (git treats ignored files as expendable)."""
    tracked = _run("git", "-C", str(ROOT), "ls-files", "tests/node/node_modules", ".venv")
    assert tracked.returncode == 0 and tracked.stdout == "", tracked.stdout


def test_the_version_is_pyprojects() -> None:
    import tomllib

    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert silo_nb.__version__ == wanted, "silo_nb/version.py and pyproject.toml's version differ"
