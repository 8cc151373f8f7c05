"""``python -m openwop_bridge``: the same command line as ``openwop-bridge``."""

import sys

from openwop_bridge.host.cli import main

sys.exit(main())
