"""``python -m silo_nb.replay_agent JOURNAL [--speed S]``: a journal played back as an ACP agent on stdio."""

import sys

from silo_nb.replay_agent import main

sys.exit(main())
