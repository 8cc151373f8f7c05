"""``python -m bridge``: the same command line as ``openwop-bridge``."""

import sys

from bridge.host.cli import main

sys.exit(main())
