"""Files whose new text runs as code by itself: the next ordinary command runs it without anyone asking.

An agent that writes ``.git/config`` (``core.fsmonitor``) runs a command at the user's next ``git status``;
one that rewrites an executable hook runs at the next commit. A write to such a file needs the user's
permission (``session/client_files.py`` asks, kind ``edit``, saying why; ``experiments/policy.py`` lets
only a rule naming ``code`` allow it). The list, and why each is on it:

- **Version-control internals**: any path component ``.git`` (a folder, or a worktree's ``.git`` file that
  names the repository), ``.hg``, ``.svn``, ``.jj``, ``.bzr``, ``_darcs``, ``.pijul``, and fossil's
  ``.fslckout`` / ``_FOSSIL_``; also ``.gitconfig``. Their configuration names commands the tool runs on
  its own (``core.fsmonitor``, ``core.pager``, filters, Mercurial hooks) and their hooks run on commit.
- **Commit hooks kept in the project**: ``.pre-commit-config.yaml`` and the ``.husky`` folder: once
  installed, ``git commit`` runs what they name.
- **Executable files** (any execute bit already set): whatever runs them next (a hook, a ``bin/`` tool, a
  script a Makefile calls) runs the new text, and a write keeps the mode. A new file is never created
  executable, so only existing ones count.
- **Python start-up**: ``sitecustomize.py``, ``usercustomize.py`` and ``*.pth`` files (``site`` runs them at
  every interpreter start), ``pyvenv.cfg`` (it chooses the interpreter and standard library a venv
  starts), and a venv's ``bin/activate*`` / ``Scripts/activate*`` (sourced by the user's shell).
- **IPython and Jupyter configuration and start-up**: ``ipython_config.py``, ``ipython_kernel_config.py``
  and ``jupyter_*_config.py`` / ``.json`` (read from the folder Jupyter starts in), anything in a
  ``.ipython`` or ``.jupyter`` folder, an IPython ``profile_*/startup/`` file (run at every start), and a
  kernel spec's ``kernels/*/kernel.json`` (its ``argv`` is the command a new kernel runs).
- **Shell start-up**: ``.bashrc``, ``.profile``, ``.zshrc`` and their kin (a session folder may be ``~``).

Left off on purpose: ordinary source (``*.py``, ``conftest.py``, ``setup.py``, ``Makefile``,
``pyproject.toml``). The commands that load them (``pytest``, ``make``, ``pip install .``) run the project's
own code, which the agent edits in plain sight with a diff in the turn; asking for them would ask for
every edit. ``.envrc`` too: direnv refuses a changed ``.envrc`` until the user runs ``direnv allow``.
Notebooks (``.ipynb``) are refused separately (``fs_write_notebooks``).
"""

from __future__ import annotations

import re
import stat
from pathlib import PurePath

__all__ = ["runs_code"]

VCS = "version-control internals run commands (hooks, core.fsmonitor, filters) without asking"
_VCS_PARTS = frozenset({".git", ".hg", ".svn", ".jj", ".bzr", "_darcs", ".pijul", ".fslckout", "_fossil_"})
_HOOK_PARTS = frozenset({".husky"})
_HOOK_NAMES = frozenset({".pre-commit-config.yaml"})
_PYTHON_NAMES = frozenset({"sitecustomize.py", "usercustomize.py", "pyvenv.cfg"})
_JUPYTER_PARTS = frozenset({".ipython", ".jupyter"})
_JUPYTER_NAME = re.compile(r"(ipython|ipython_kernel|jupyter(_\w+)?)_config\.(py|json)")
_SHELL_NAMES = frozenset(
    {
        ".bashrc",
        ".bash_profile",
        ".bash_login",
        ".bash_logout",
        ".profile",
        ".zshrc",
        ".zshenv",
        ".zprofile",
        ".zlogin",
        ".zlogout",
    }
)


def runs_code(path: PurePath, mode: int | None = None) -> str | None:
    """Why writing ``path`` (absolute, resolved) runs code nobody asked to run; None for an ordinary file.
    ``mode``: the file's ``st_mode`` when it exists. Names are compared case-insensitively (``.GIT`` is
    ``.git`` on a case-insensitive disk)."""
    parts = [part.lower() for part in path.parts]
    name = parts[-1] if parts else ""
    parent = parts[-2] if len(parts) > 1 else ""
    if _VCS_PARTS.intersection(parts) or name == ".gitconfig":
        return VCS
    if _HOOK_PARTS.intersection(parts) or name in _HOOK_NAMES:
        return "git commit runs the hooks it names"
    if mode is not None and stat.S_IMODE(mode) & 0o111:
        return "the file is executable: whatever runs it next runs the new text"
    if name in _PYTHON_NAMES or name.endswith(".pth"):
        return "Python runs it (or reads where to start from it) at every start"
    if parent in ("bin", "scripts") and name.startswith("activate"):
        return "the shell runs it when the environment is activated"
    if (
        _JUPYTER_PARTS.intersection(parts)
        or _JUPYTER_NAME.fullmatch(name)
        or (parent == "startup" and len(parts) > 2 and parts[-3].startswith("profile_"))
        or (name == "kernel.json" and len(parts) > 2 and parts[-3] == "kernels")
    ):
        return "IPython and Jupyter run their configuration and start-up files when they start"
    if name in _SHELL_NAMES:
        return "the shell runs it when it starts"
    return None
