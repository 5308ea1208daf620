"""The dashboard's shareable state: a scenario in a URL (``?s=``: the YAML compressed with zlib,
then base64url without padding) and the key that names a scenario's widgets by its content.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import zlib

from costsim.scenario import Problem, ScenarioError

LINK = "shared link"  # what a scenario read from the URL is called in messages


def content_key(data: bytes) -> str:
    """A short name for a scenario's exact content (its file's or upload's bytes, or its YAML):
    widgets keyed by it show that scenario's values, whatever the scenario's name."""
    return hashlib.sha256(data).hexdigest()[:12]


def encode_scenario(yaml_text: str) -> str:
    """The YAML as a URL-safe string (zlib, base64url, no ``=`` padding); the baseline is ~1.5 kB."""
    return base64.urlsafe_b64encode(zlib.compress(yaml_text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def decode_scenario(text: str, max_bytes: int) -> str:
    """The YAML ``encode_scenario`` made; a ScenarioError naming the link when it is damaged or
    would inflate beyond ``max_bytes`` (a zip bomb in a URL must not exhaust the server)."""
    def bad(why: str) -> ScenarioError:
        return ScenarioError(LINK, [Problem(("s",), f"the scenario in the link {why}; open the dashboard without "
                                                    "`?s=` or ask for a new link")])
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, max_bytes + 1)
    except (binascii.Error, ValueError, zlib.error):
        raise bad("is damaged (not zlib + base64url)") from None
    if len(raw) > max_bytes or inflater.unconsumed_tail:
        raise bad(f"is larger than the {max_bytes:,} bytes the dashboard accepts")
    if not inflater.eof:
        raise bad("is cut short")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise bad("is not UTF-8 text") from None
