"""Webhook deliveries: the server signs each body with your webhook's secret."""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Optional, Union

#: The header carrying ``sha256=<hex HMAC-SHA256(secret, raw body)>``.
SIGNATURE_HEADER = "X-Longrun-Signature"
#: The header naming the delivery (the same on every retry of it): deduplicate on it.
DELIVERY_HEADER = "X-Longrun-Delivery"

_SIGNATURE = re.compile(r"^sha256=([0-9a-fA-F]{64})$")


def verify_webhook(
    secret: Union[str, bytes],
    body: Union[str, bytes],
    signature_header: Optional[str],
) -> bool:
    """Whether ``signature_header`` (the ``X-Longrun-Signature`` header) is the HMAC-SHA256 of
    the raw ``body`` with ``secret``. Compare before parsing the body; the comparison takes
    the same time whatever the first difference."""
    m = _SIGNATURE.match((signature_header or "").strip())
    if not m:
        return False
    key = secret.encode() if isinstance(secret, str) else secret
    raw = body.encode() if isinstance(body, str) else body
    mac = hmac.new(key, raw, hashlib.sha256).hexdigest()
    return hmac.compare_digest(mac, m.group(1).lower())
