"""``python -m gramalign``: the same as the ``gramalign`` command."""

import sys

from .integrations.cli import main

sys.exit(main())
