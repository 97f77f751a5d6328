"""``python -m benchflow.daemon``: the daemon process (``bench daemon start`` launches it)."""

import sys

from .server import main

sys.exit(main())
