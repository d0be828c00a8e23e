"""A throw-away JupyterLab server for the browser test: isolated dirs, a token, 127.0.0.1, a free port.

The server runs in its own process group and is always stopped (its kernels first, through the REST
API, then SIGTERM to the group, then SIGKILL). Nothing here reaches the network beyond 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
# Flags this closed network needs: without the background-networking ones chromium keeps dialling out.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# No news pop-up, no update check.
LAB_OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": False}
}
SETUP_HINT = "run `bash .ci/setup` (it installs the `browser` extra and Debian's chromium)"


def require_browser_stack() -> None:
    """Fail (never skip) with the fix when chromium, playwright or jupyterlab is missing."""
    missing = []
    if not os.access(CHROMIUM, os.X_OK):
        missing.append(f"{CHROMIUM} (Debian package chromium)")
    for module in ("playwright", "jupyterlab", "notebook"):
        try:
            __import__(module)
        except ImportError:
            missing.append(f"the Python package {module}")
    if missing:
        pytest.fail(f"the browser test needs {', '.join(missing)}: {SETUP_HINT}", pytrace=False)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LabServer:
    root: Path
    port: int
    token: str
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        separator = "&" if "?" in path else "?"
        return f"{self.base}/{path.lstrip('/')}{separator}token={self.token}"

    def api(self, method: str, path: str, timeout: float = 10, body: Any = None) -> Any:
        """The server's REST API (``body``: sent as JSON)."""
        request = urllib.request.Request(
            f"{self.base}/api/{path.lstrip('/')}",
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
            data=None if body is None else json.dumps(body).encode(),
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no server log)"

    def stop(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(Exception):
                for kernel in self.api("GET", "kernels", timeout=5):
                    self.api("DELETE", f"kernels/{kernel['id']}", timeout=10)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)


PORT_TRIES = 3


def _answers(server: LabServer, app: str, timeout: float, *, last: bool) -> bool:
    """Whether the server came up on its port (True), or the port was someone else's (False; on the
    ``last`` try, the test fails). A server that dies otherwise, or never answers, fails the test."""
    deadline = time.monotonic() + timeout
    while True:
        if server.process.poll() is not None:
            taken = "already in use" in server.log_tail()
            if taken and not last:
                return False
            pytest.fail(f"jupyter {app} exited with {server.process.returncode}:\n{server.log_tail()}")
        try:
            server.api("GET", "status", timeout=2)
            return True
        except http.client.HTTPException:  # not HTTP: another process has the port
            if last:
                pytest.fail(f"port {server.port} answers, but not as jupyter {app}:\n{server.log_tail()}")
            return False
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                tail = server.log_tail()
                pytest.fail(f"jupyter {app} did not answer /api/status in {timeout:.0f} s:\n{tail}")
            time.sleep(0.2)


@contextlib.contextmanager
def lab_server(
    root: Path,
    state: Path,
    env: dict[str, str],
    timeout: float = 60,
    kernel_python: Path | None = None,
    app: str = "lab",
    collaboration: bool = False,
) -> Iterator[LabServer]:
    """Start ``jupyter lab`` (or, with ``app="notebook"``, Notebook 7's ``jupyter notebook``) serving
    ``root`` (private config/data/runtime/settings dirs under ``state``); with ``kernel_python``, its
    "python3" kernels run that Python (another venv's ipykernel). Real-time collaboration (installed with
    the browser extra) is off in the page unless ``collaboration``: the tests written before it keep the
    page they were written for; silo_nb's notebook tools need it on."""
    dirs = {name: state / name for name in ("config", "data", "runtime", "ipython", "settings", "user", "ws")}
    for folder in dirs.values():
        folder.mkdir(parents=True, exist_ok=True)
    (dirs["settings"] / "overrides.json").write_text(json.dumps(LAB_OVERRIDES))
    server_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("SILO_NB_", "JUPYTER_"))},
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "IPYTHONDIR": str(dirs["ipython"]),
        **env,
    }
    if kernel_python is not None:
        # A "python3" kernelspec in the server's own data dir, found before this venv's own once the
        # venv's path is not preferred (jupyter_core puts it first by default).
        spec = dirs["data"] / "kernels" / "python3"
        spec.mkdir(parents=True, exist_ok=True)
        argv = [str(kernel_python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
        kernel = {"argv": argv, "display_name": "Python 3 (ipykernel)", "language": "python"}
        (spec / "kernel.json").write_text(json.dumps(kernel))
        server_env["JUPYTER_PREFER_ENV_PATH"] = "0"
    token = secrets.token_hex(16)
    log = state / f"jupyter-{app}.log"
    settings_app = "LabApp" if app == "lab" else "JupyterNotebookApp"

    def argv_for(port: int) -> list[str]:
        argv = [
            str(Path(sys.executable).parent / "jupyter"),
            app,
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--port-retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--ServerApp.allow_root=True",
            "--ServerApp.terminals_enabled=False",
            f"--{settings_app}.app_settings_dir={dirs['settings']}",
            f"--{settings_app}.user_settings_dir={dirs['user']}",
            f"--{settings_app}.workspaces_dir={dirs['ws']}",
        ]
        if not collaboration:
            argv.append("--YDocExtension.disable_rtc=True")
        if app == "lab":
            argv += [
                "--LabApp.news_url=None",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ]
        return argv

    if not Path(argv_for(0)[0]).is_file():
        pytest.fail(f"{argv_for(0)[0]} is missing: {SETUP_HINT}", pytrace=False)
    # The free port is free when asked, not when the server binds it: another test's process (a kernel's
    # ZMQ socket, once) may take it in between. Then the server exits, or something else answers: start it
    # again on another port, up to PORT_TRIES times.
    for attempt in range(1, PORT_TRIES + 1):
        port = free_port()
        with log.open("wb") as sink:
            process = subprocess.Popen(
                argv_for(port), cwd=root, env=server_env, stdout=sink, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        server = LabServer(root=root, port=port, token=token, process=process, log=log)
        try:
            if _answers(server, app, timeout, last=attempt == PORT_TRIES):
                break
        except BaseException:
            server.stop()
            raise
        server.stop()
    try:
        yield server
    finally:
        server.stop()
