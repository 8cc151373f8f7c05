"""Identity providers: the identity file and bearer tokens (JWTs) verified against an issuer's keys.

``--identity-config FILE`` names the providers (:mod:`openwop_bridge.identity.config`); a token
they sign is verified by :class:`~openwop_bridge.identity.verifier.TokenVerifier` and becomes a
:class:`~openwop_bridge.core.auth.Principal`, as an API key does (OpenWOP v2 identity, the
``oidc`` and ``oauth2`` lanes).
"""
