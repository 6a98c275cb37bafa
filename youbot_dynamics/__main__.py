"""``python -m youbot_dynamics``: the command-line tool (see :mod:`youbot_dynamics.cli`)."""
import sys

from .cli import main

sys.exit(main())
