"""``python -m silo_nb_agents.demo [flags]``: the demo agent on stdin/stdout."""

import sys

from silo_nb_agents.demo import main

sys.exit(main())
