"""Run an agent (and the terminals it asks for) inside an existing sandbox tool: bubblewrap, podman, docker.

- :class:`Sandbox` turns an argv into the sandboxed argv. What the process sees: its ``writable`` folders
  read-write (a session's working copy), its runtime read-only (the system's ``/usr``, ``/etc``…, the
  Python that runs silo_nb and its venv, the command itself, ``PYTHONPATH`` / ``NODE_PATH``, the
  ``read_only`` paths given), a private ``/tmp``, and an empty ``HOME`` (an empty tmpfs over the user's
  home and ``/root``): no other cell's folder, no home, nothing else of the machine. The network stays
  (agents call their model's API) unless ``network=False``.
- A runtime path that would uncover what the sandbox hides is left out: ``/``, an ancestor of the home,
  of the temp folder or of a writable folder (binding ``/tmp`` read-only would show every cell's copy).
- bubblewrap needs no daemon and, where user namespaces are allowed, no root: its root is an empty
  tmpfs, so only what is bound exists. ``--unshare-pid`` and ``--die-with-parent``: the agent's tree dies
  with bwrap, which the supervisor (``supervisor.py``) kills as it would the agent.
- podman and docker run the same binds in a container of ``image`` (``--rm -i``, the caller's uid); the
  environment goes by name (``-e NAME``: values are taken from the client's environment, never put in an
  argv another user can read in ``ps``).
- :func:`sandbox_problem` says, in one line naming what to install or start, why a kind cannot run here
  (a tool missing, user namespaces refused, an engine not answering); it is asked once per process.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import anyio

__all__ = ["SANDBOX_KINDS", "Sandbox", "SandboxUnavailable", "sandbox_problem"]

SANDBOX_KINDS = ("bwrap", "podman", "docker")
# What every runtime needs, bound read-only where it exists (on merged-/usr systems /bin and /lib are links).
SYSTEM_PATHS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
TMPFS_BYTES = 1 << 30
DEFAULT_IMAGE = "docker.io/library/debian:bookworm-slim"  # podman/docker: the base the runtime is bound into
PROBE_SECONDS = 20.0
_INSTALL = {
    "bwrap": "install bubblewrap (apt-get install bubblewrap)",
    "podman": "install podman (apt-get install podman)",
    "docker": "install Docker and start its engine",
}
_problems: dict[tuple[str, str | None], str | None] = {}  # (kind, the tool found) -> the probe's answer


class SandboxUnavailable(ValueError):
    """The sandbox asked for cannot run on this machine (the message says what to install or start)."""


@dataclass(frozen=True)
class Sandbox:
    """How to wrap an agent's argv (see the module docstring); ``kind`` is one of :data:`SANDBOX_KINDS`."""

    kind: str
    read_only: tuple[str, ...] = ()  # more runtime paths to show read-only (an agent's credentials file…)
    writable: tuple[str, ...] = ()  # the session's folders: set by the session (:meth:`bound`)
    network: bool = True
    image: str = DEFAULT_IMAGE  # podman/docker only
    # The size of each private tmpfs (/tmp, the home): they live in memory, so an agent filling one
    # would take the machine's; it gets "no space left" instead.
    tmpfs_bytes: int = TMPFS_BYTES
    # Show what the command needs (its prefix, a script among its args, PYTHONPATH / NODE_PATH): true for
    # the profile's agent; false for a terminal, whose command, args and env the agent chooses — binding
    # them would let it name another cell's file and have it shown.
    from_command: bool = True

    def __post_init__(self) -> None:
        if self.kind not in SANDBOX_KINDS:
            raise ValueError(
                f"sandbox={self.kind!r} is not one of {', '.join(SANDBOX_KINDS)} — pass one of them or None."
            )

    def bound(self, folders: Iterable[str | os.PathLike[str]]) -> Sandbox:
        """This sandbox with ``folders`` (a session's working copy) read-write."""
        return replace(self, writable=tuple(os.path.realpath(f) for f in folders))

    def showing(self, *paths: str | os.PathLike[str]) -> Sandbox:
        """This sandbox with ``paths`` read-only too (the kernel tools' socket folder, for their relay)."""
        return replace(self, read_only=(*self.read_only, *(os.fspath(p) for p in paths)))

    def for_terminals(self, agent_argv: Sequence[str] = (), env: Mapping[str, str] | None = None) -> Sandbox:
        """This sandbox for the commands the agent names (:attr:`from_command` off), showing what its own
        sandbox shows (``agent_argv`` and ``env``: the agent's), so a terminal sees no more than the agent."""
        env = dict(env if env is not None else os.environ)
        resolved = shutil.which(agent_argv[0], path=env.get("PATH")) if agent_argv else None
        agent = self.runtime_paths([resolved, *agent_argv[1:]], env) if resolved else []
        return replace(self, from_command=False, read_only=(*self.read_only, *agent))

    def search_path(self, env: Mapping[str, str]) -> str | None:
        """The ``PATH`` a command is looked up in: for a terminal, only its folders this sandbox shows (a
        ``python3`` found in a hidden ``~/.pyenv/shims`` could not start in it); else ``env``'s."""
        search = env.get("PATH")
        if self.from_command or search is None:
            return search
        shown = [*SYSTEM_PATHS, *self.runtime_paths([], env), *self.writable]
        folders = [f for f in search.split(os.pathsep) if any(_covers(s, os.path.realpath(f)) for s in shown)]
        return os.pathsep.join(folders)

    def wrap(self, argv: Sequence[str], *, env: Mapping[str, str], cwd: str | None) -> list[str]:
        """The argv that runs ``argv`` (its command resolved) in this sandbox, in ``cwd``."""
        if argv and os.sep in argv[0]:
            # ``/x/benchmarks/../.venv/bin/python``: inside, only the runtime is shown, so a folder the
            # path passes through (``benchmarks``) is not there to walk back from. (abspath, not realpath:
            # a venv's python must keep its own path to find its venv.)
            argv = [os.path.abspath(argv[0]), *argv[1:]]
        runtime = self.runtime_paths(argv, env)
        if self.kind == "bwrap":
            return self._bwrap(argv, runtime, env, cwd)
        return self._container(argv, runtime, env, cwd)

    def runtime_paths(self, argv: Sequence[str], env: Mapping[str, str]) -> list[str]:
        """The paths shown read-only besides the system's, each existing, none uncovering a hidden one."""
        found: list[str] = []
        prefixes = {sys.prefix, sys.base_prefix, sys.exec_prefix}
        candidates = [*sorted(prefixes), *(os.path.expanduser(p) for p in self.read_only)]
        if argv and self.from_command:
            candidates += _command_paths(argv[0])
            for arg in argv[1:]:  # a script (``node /x/node_modules/pkg/dist/index.js``: its install too)
                if os.path.isabs(arg) and os.path.isfile(arg):
                    candidates += _command_paths(arg)
            if "-m" in argv[1:-1]:  # ``python -m pkg``: the package, wherever it is installed (editable too)
                candidates += _module_paths(argv[argv.index("-m", 1) + 1])
            for name in ("PYTHONPATH", "NODE_PATH"):
                candidates += [p for p in env.get(name, "").split(os.pathsep) if os.path.isabs(p)]
        hidden = [os.path.realpath(h) for h in (*_homes(env), tempfile.gettempdir(), "/tmp", *self.writable)]
        for raw in candidates:
            for path in dict.fromkeys((os.path.abspath(raw), os.path.realpath(raw))):
                if not os.path.exists(path) or path in found:
                    continue
                if any(_covers(path, h) for h in hidden):
                    continue  # it would show what the sandbox hides (a home, every cell's folder)
                found.append(path)
        # A path inside another is shown by it (and binding it again would fail on a read-only mount).
        return [p for p in found if not any(q != p and _covers(q, p) for q in found)]

    def _bwrap(
        self, argv: Sequence[str], runtime: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> list[str]:
        out = [
            shutil.which("bwrap") or "bwrap",
            "--die-with-parent",
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
        ]
        # As root bwrap keeps every capability (mounts, ptrace…) inside: none is left to the agent.
        out += ["--unshare-cgroup-try", "--cap-drop", "ALL"]
        if not self.network:
            out.append("--unshare-net")
        for path in SYSTEM_PATHS:
            out += ["--ro-bind-try", path, path]
        out += ["--proc", "/proc", "--dev", "/dev"]
        homes = _homes(env)
        size = ["--size", str(self.tmpfs_bytes)]
        for private in ("/tmp", "/var/tmp", *homes):
            out += [*size, "--tmpfs", private]  # a home before the runtime: a ~/.pyenv is bound over it
        out += ["--setenv", "HOME", homes[0], "--setenv", "TMPDIR", "/tmp"]
        for path in runtime:
            out += ["--ro-bind", path, path]
        for path in self.writable:
            out += ["--bind", path, path]
        if cwd is not None:
            out += ["--chdir", cwd]
        return [*out, "--", *argv]

    def _container(
        self, argv: Sequence[str], runtime: Sequence[str], env: Mapping[str, str], cwd: str | None
    ) -> list[str]:
        out = [
            shutil.which(self.kind) or self.kind,
            "run",
            "--rm",
            "-i",
            "--init",
            f"--user={os.getuid()}:{os.getgid()}",
        ]
        out += ["--network=host" if self.network else "--network=none"]
        homes = _homes(env)
        out += [f"--tmpfs={private}:size={self.tmpfs_bytes}" for private in ("/tmp", *homes)]
        if self.kind == "podman":
            out.append("--userns=keep-id")
        for path in runtime:
            out.append(f"--volume={path}:{path}:ro")
        for path in self.writable:
            out.append(f"--volume={path}:{path}:rw")
        out += [f"--env={name}" for name in sorted(env) if name not in ("HOME", "TMPDIR")]
        out += [f"--env=HOME={homes[0]}", "--env=TMPDIR=/tmp"]
        if cwd is not None:
            out.append(f"--workdir={cwd}")
        return [*out, self.image, *argv]


def _homes(env: Mapping[str, str]) -> list[str]:
    """The homes hidden behind an empty tmpfs: the agent's ``HOME`` (first), this user's, ``/root``."""
    found = [env.get("HOME") or "", os.path.expanduser("~"), "/root"]
    return list(dict.fromkeys(os.path.abspath(h) for h in found if os.path.isabs(h) and h != "/"))


def _covers(path: str, hidden: str) -> bool:
    """Whether binding ``path`` would show ``hidden`` (it is ``hidden`` or one of its ancestors)."""
    return path == hidden or hidden.startswith(path.rstrip("/") + "/")


def _command_paths(command: str) -> list[str]:
    """The command; the prefix it lives in when it is ``<prefix>/bin/<name>`` (a venv, a Node); the folder
    holding its ``node_modules`` when it is an npm package's (``.bin/x`` → ``../pkg/dist/x.js``: the
    package needs its dependencies beside it)."""
    paths = [command]
    for path in dict.fromkeys((command, os.path.realpath(command))):
        parts = Path(path).parts
        if "node_modules" in parts[:-1]:
            paths.append(str(Path(*parts[: parts.index("node_modules")])))
        parent = Path(path).parent
        if parent.name == "bin" and str(parent.parent) not in ("/", "/usr", "/usr/local"):
            paths.append(str(parent.parent))
    return paths


def _module_paths(module: str) -> list[str]:
    """Where this process finds ``module``'s top-level package: an editable install puts its source folder
    on ``sys.path`` through a ``.pth`` file, a folder (the checkout) that is not shown whole — it may hold
    the run folders — so the package's own folder is shown instead. Found without importing it."""
    try:
        spec = importlib.util.find_spec(module.split(".", maxsplit=1)[0])
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    if spec.submodule_search_locations:
        return [str(p) for p in spec.submodule_search_locations]
    return [spec.origin] if spec.origin and os.path.isabs(spec.origin) else []


async def sandbox_problem(kind: str) -> str | None:
    """Why ``kind`` cannot run here, in one line naming what to do; None if it can (probed once)."""
    key = (kind, shutil.which(kind) if kind in SANDBOX_KINDS else None)
    if key not in _problems:
        _problems[key] = await _probe(kind)
    return _problems[key]


async def _probe(kind: str) -> str | None:
    if kind not in SANDBOX_KINDS:
        return f"sandbox={kind!r} is not one of {', '.join(SANDBOX_KINDS)} — pass one of them or None."
    tool = shutil.which(kind)
    if tool is None:
        return f"sandbox={kind!r}: {kind} is not on PATH — {_INSTALL[kind]}, or pass sandbox=None."
    argv = {  # a real start where it needs no image: an installed podman may still fail every run (cgroups)
        "bwrap": [tool, "--ro-bind", "/", "/", "--unshare-pid", "--", "true"],
        "podman": [tool, "run", "--rm", "--rootfs", "/", "--network=host", "true"],
        "docker": [tool, "info"],
    }[kind]
    done = None
    try:
        with anyio.move_on_after(PROBE_SECONDS):
            done = await anyio.run_process(argv, check=False, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return f"sandbox={kind!r}: {kind} could not be run ({exc}) — {_INSTALL[kind]}, or pass sandbox=None."
    if done is None:
        late = f"did not answer within {PROBE_SECONDS:g} s"
        return f"sandbox={kind!r}: {kind} {late} — check it, or pass sandbox=None."
    if done.returncode == 0:
        return None
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    said = " | ".join(line.strip() for line in lines if line.strip())[:300] or f"exit {done.returncode}"
    if kind == "bwrap":
        fix = "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run as root"
    elif kind == "podman":
        fix = "make `podman run --rm --rootfs / true` work here (its runtime, cgroups, limits)"
    else:
        fix = "start the docker engine"
    return f"sandbox={kind!r}: {kind} cannot run here ({said}) — {fix}, or pass sandbox=None."
