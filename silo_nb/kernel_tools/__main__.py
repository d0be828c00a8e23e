"""``python -m silo_nb.kernel_tools``: the "notebook" MCP server over stdio (``relay.py``)."""

from silo_nb.kernel_tools.relay import main

main()
