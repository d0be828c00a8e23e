"""The demo agent, slow to start as a vendor agent is: ``slow_start.py SECONDS [demo flags]`` sleeps
SECONDS before it reads anything, then serves as ``python -m silo_nb_agents.demo [demo flags]``."""

from __future__ import annotations

import sys
import time

from silo_nb_agents.demo import main

if __name__ == "__main__":
    time.sleep(float(sys.argv[1]))  # a start-up (node, a bundle to unpack): the client's initialize waits
    sys.exit(main(sys.argv[2:]))
