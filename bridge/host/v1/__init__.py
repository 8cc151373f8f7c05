"""OpenWOP v1 under ``/v1``: its operations (:mod:`.api`) and its OpenAPI document (:mod:`.openapi`).

Built on the shared HTTP layer (:mod:`openwop_bridge.host.http`); the app serves it beside v2.
"""
