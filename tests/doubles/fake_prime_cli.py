"""Test double of Prime Intellect's ``prime`` CLI: prints the arguments it got as JSON, exits 3 for ``env info missing/env``."""

from __future__ import annotations

import json
import sys

if __name__ == "__main__":
    args = sys.argv[1:]
    print(json.dumps({"prime": args}))
    sys.exit(3 if args[:3] == ["env", "info", "missing/env"] else 0)
