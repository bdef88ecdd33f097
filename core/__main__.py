"""``python -m rfcircuits``: the command line."""

import sys

from rfcircuits.cli import main

sys.exit(main())
