"""``python -m silo_nb install | demo | run``: see ``silo_nb/cli``."""

import sys

from silo_nb.cli import main

sys.exit(main())
