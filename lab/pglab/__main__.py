"""Allow ``python -m pglab``."""

import sys

from pglab.cli import main

sys.exit(main())
