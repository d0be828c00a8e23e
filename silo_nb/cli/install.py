"""``python -m silo_nb install``: make an installed silo_nb usable from another Jupyter.

- Registers the "Python 3 (silo)" kernelspec (a kernel that loads the extension at start) for *this*
  Python (``sys.executable``), so a JupyterLab installed elsewhere runs kernels where silo_nb is:
  ``--user`` (the default: the user's Jupyter data folder), ``--sys-prefix`` (this environment) or
  ``--prefix DIR``. Installing again replaces it. The wheel ships none of its own, so this is the only
  one; the command says which ``silo-python`` Jupyter (from this environment) will use, and how to remove
  another one that comes first on Jupyter's path (an older install's, say).
- Writes a starter ``profiles.toml`` into the user's Jupyter config folder (``<config>/silo/``) from
  the shipped example profiles, every entry commented out, unless one is there already (never
  overwritten) or ``--no-profiles``.
- Says what it wrote, one line each; nothing else is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

__all__ = ["KERNEL_NAME", "example_profiles", "install", "kernelspec_in_use", "main"]

KERNEL_NAME = "silo-python"
_STARTER_HEADER = (
    "# Agent profiles for silo_nb: uncomment one, or add your own\n"
    "# (every profile key: docs/profiles-and-agents.md in silo_nb's repository),\n"
    "# then `%silo doctor ID` checks it. The built-in `demo` profile needs nothing here.\n\n"
)


def example_profiles() -> str | None:
    """The shipped example profiles: from the wheel's data (``<prefix>/share/silo_nb``) or a checkout."""
    candidates = [
        Path(sys.prefix) / "share" / "silo_nb" / "profiles.example.toml",
        Path(__file__).resolve().parents[1] / "jupyter-config" / "silo" / "profiles.example.toml",
    ]
    for path in candidates:
        if path.is_file():
            return path.read_text(encoding="utf-8")
    return None


def _kernelspec(user: bool, prefix: str | None) -> str:
    from jupyter_client.kernelspec import KernelSpecManager

    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}", "--ext=silo_nb"],
        "display_name": "Python 3 (silo)",
        "language": "python",
        "metadata": {"debugger": True},
    }
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "kernel.json").write_text(json.dumps(spec, indent=1), encoding="utf-8")
        return str(KernelSpecManager().install_kernel_spec(folder, KERNEL_NAME, user=user, prefix=prefix))


def _starter_profiles() -> tuple[Path, bool]:
    from jupyter_core.paths import jupyter_config_dir

    target = Path(jupyter_config_dir()) / "silo" / "profiles.toml"
    if target.exists() or (target.parent / "profiles.json").exists():
        return target, False
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = _STARTER_HEADER + (example_profiles() or "")
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return target, True


def kernelspec_in_use() -> str | None:
    """The folder of the ``silo-python`` kernelspec Jupyter finds first from this environment, if any."""
    from jupyter_client.kernelspec import KernelSpecManager

    return KernelSpecManager().find_kernel_specs().get(KERNEL_NAME)


def _shadow_line(written: str) -> str | None:
    """One line when Jupyter would start another ``silo-python`` than the one just written."""
    used = kernelspec_in_use()
    if used is None or Path(used).resolve() == Path(written).resolve():
        return None
    return (
        f"kernelspec: Jupyter reads {used} first, not the one just written; remove it with "
        f"`jupyter kernelspec remove -y {KERNEL_NAME}` and run this again (or install where it is: "
        "--sys-prefix / --prefix DIR)"
    )


def install(*, user: bool = True, prefix: str | None = None, profiles: bool = True) -> list[str]:
    """Register the kernelspec (and write the starter profiles); one line per thing done."""
    written = _kernelspec(user, prefix)
    lines = [f'kernelspec "Python 3 (silo)" for {sys.executable}: {written}']
    shadow = _shadow_line(written)
    lines.append(shadow or f"kernelspec: Jupyter will use {written}")
    if profiles:
        path, wrote = _starter_profiles()
        lines.append(f"profiles: wrote {path}" if wrote else f"profiles: kept {path} (already there)")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m silo_nb install", description="Register the silo kernel and write starter profiles."
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--user", action="store_true", help="the user's Jupyter data folder (default)")
    where.add_argument("--sys-prefix", action="store_true", help="this Python environment")
    where.add_argument("--prefix", metavar="DIR", help="another prefix")
    parser.add_argument("--no-profiles", action="store_true", help="do not write a starter profiles file")
    args = parser.parse_args(argv)
    prefix = sys.prefix if args.sys_prefix else args.prefix
    for line in install(user=prefix is None, prefix=prefix, profiles=not args.no_profiles):
        print(line)
    return 0
