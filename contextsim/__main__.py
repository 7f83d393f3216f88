"""`python -m contextsim`: the command line (contextsim.cli)."""

import sys

from contextsim.cli import main

sys.exit(main())
