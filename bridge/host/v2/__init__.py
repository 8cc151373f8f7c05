"""OpenWOP v2 at root paths beside ``/v1``: one engine, one store, one set of runs.

A thin host layer: path ids (:mod:`.ids`), signed-link grammar (:mod:`.tokens`),
error codes (:mod:`.errors`), document spelling (:mod:`.documents`), version
negotiation (:mod:`.negotiation`) and the routes (:mod:`.routes`).
"""

from openwop_bridge.host.v2.negotiation import VersionNegotiation
from openwop_bridge.host.v2.routes import routes

__all__ = ["VersionNegotiation", "routes"]
