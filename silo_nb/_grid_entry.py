"""``silo_nb.run_grid`` and ``silo_nb.fork_grid``: the experiments' own, with the progress display chosen
for where they run.

Above the layers (like the package ``__init__``): a widget inside a Jupyter kernel, else text —
``silo_nb.experiments`` itself never imports IPython or ipywidgets. Imported on first use of
``silo_nb.run_grid``, so ``import silo_nb`` (which every demo agent does) stays light.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from silo_nb.experiments import fork_grid as _fork_grid
from silo_nb.experiments import run_grid as _run_grid

__all__ = ["fork_grid", "run_grid"]


def _progress(kwargs: dict[str, Any]) -> None:
    if kwargs.get("progress", True) is True and "ipykernel" in sys.modules:
        from silo_nb.notebook import kernel_progress

        kwargs["progress"] = kernel_progress() or True


@functools.wraps(_run_grid)
async def run_grid(*args: Any, **kwargs: Any) -> Any:
    _progress(kwargs)
    return await _run_grid(*args, **kwargs)


@functools.wraps(_fork_grid)
async def fork_grid(*args: Any, **kwargs: Any) -> Any:
    _progress(kwargs)
    return await _fork_grid(*args, **kwargs)
