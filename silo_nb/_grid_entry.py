"""``silo_nb.run_grid``: ``experiments.run_grid`` with the progress display chosen for where it runs.

Above the layers (like the package ``__init__``): a widget inside a Jupyter kernel, else text —
``silo_nb.experiments`` itself never imports IPython or ipywidgets. Imported on first use of
``silo_nb.run_grid``, so ``import silo_nb`` (which every demo agent does) stays light.
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from silo_nb.experiments import run_grid as _run_grid

__all__ = ["run_grid"]


@functools.wraps(_run_grid)
async def run_grid(*args: Any, **kwargs: Any) -> Any:
    if kwargs.get("progress", True) is True and "ipykernel" in sys.modules:
        from silo_nb.notebook import kernel_progress

        kwargs["progress"] = kernel_progress() or True
    return await _run_grid(*args, **kwargs)
