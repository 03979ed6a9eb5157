"""``python -m benchmarks.quality``: see ``benchmarks.quality``."""

import sys

from benchmarks.quality import main

sys.exit(main())
