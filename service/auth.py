"""Bearer tokens, checked one way for the API keys (ApiGate, ABSA_API_KEY) and the admin
token (the admin routes, ABSA_ADMIN_TOKEN)."""

from __future__ import annotations

import hmac
from collections.abc import Iterable


def bearer_token(authorization: bytes) -> bytes:
    """The TOKEN of an Authorization header's value "Bearer TOKEN" (the scheme in any case),
    or b"" for a bare token, another scheme or none given."""
    scheme, _, given = authorization.strip().partition(b" ")
    return given.strip() if scheme.lower() == b"bearer" else b""


def bearer_accepted(authorization: bytes, accepted: Iterable[bytes]) -> bool:
    """``authorization`` (an Authorization header's value) is "Bearer TOKEN" with a TOKEN of
    ``accepted``, compared in constant time with every one of them. The bare token, or any
    other scheme, is refused; so is everything where none is accepted."""
    given = bearer_token(authorization)
    ok = False
    for want in accepted:
        ok |= bool(want) and hmac.compare_digest(given, want)
    return ok
