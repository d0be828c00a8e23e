"""``python -m silo_nb.demo_agent [flags]``: the demo agent on stdin/stdout."""

import sys

from silo_nb.demo_agent import main

sys.exit(main())
