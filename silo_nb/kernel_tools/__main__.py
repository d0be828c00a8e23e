"""``python -m silo_nb.kernel_tools``: the "notebook" MCP server over stdio (``relay.py``).

The kernel offers it as ``python -I <this file>``: isolated (no ``PYTHON*`` variables, no user site), and
run by its path, so the relay imports the very ``silo_nb`` the kernel runs whatever the agent does to the
environment it starts servers with (gemini-cli drops ``PYTHONPATH``, for one). Run so, this file's own
folder is not on ``sys.path``; the folder holding the package is put first instead.
"""

import sys
from pathlib import Path

if not __package__:  # run by its path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from silo_nb.kernel_tools.relay import main

main()
