"""``python -m silo_nb install``: see ``install.py``."""

import sys

from silo_nb.install import main

sys.exit(main())
