"""`python -m contextsim`: the command line (contextsim.cli.main)."""

import sys

from contextsim.cli.main import main

sys.exit(main())
