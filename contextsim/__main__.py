import sys

from contextsim.cli import main

sys.exit(main())
