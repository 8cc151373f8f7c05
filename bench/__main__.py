"""``python -m openwop_bridge.bench``: the same as ``openwop-bridge bench``."""

from __future__ import annotations

from openwop_bridge.bench.harness import main

raise SystemExit(main())
