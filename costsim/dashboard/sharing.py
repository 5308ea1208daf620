"""The dashboard's shareable state: a scenario in a URL (``?s=``: the YAML compressed with zlib,
then base64url without padding) and the key that names a scenario's widgets by its content.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import zlib

from costsim.scenario import Problem, ScenarioError

LINK = "shared link"  # what a scenario read from the URL is called in messages
_BASE64URL = re.compile(r"[A-Za-z0-9_-]+={0,2}")  # what encode_scenario writes (padding tolerated)


def content_key(data: bytes) -> str:
    """A short name for a scenario's exact content (its file's or upload's bytes, or its YAML):
    widgets keyed by it show that scenario's values, whatever the scenario's name."""
    return hashlib.sha256(data).hexdigest()[:12]


def encode_scenario(yaml_text: str) -> str:
    """The YAML as a URL-safe string (zlib, base64url, no ``=`` padding); the baseline is ~1.5 kB."""
    return base64.urlsafe_b64encode(zlib.compress(yaml_text.encode("utf-8"), 9)).decode("ascii").rstrip("=")


def decode_scenario(text: str, max_bytes: int) -> str:
    """The YAML ``encode_scenario`` made; a ScenarioError naming the link when it is not one of
    ours (characters base64url never has, not a zlib stream, not UTF-8 text), is one cut short
    (a zlib stream that inflates to part of a text but has no end), or would inflate beyond
    ``max_bytes`` (a zip bomb in a URL must not exhaust the server)."""
    def foreign(why: str) -> ScenarioError:
        return ScenarioError(LINK, [Problem(("s",), f"this is not a costsim scenario link ({why}): open the dashboard "
                                                    "without `?s=`, or copy the whole link again from where it was "
                                                    "shared")])
    if not _BASE64URL.fullmatch(text):
        raise foreign("its `s=` value holds characters a costsim link never has")
    try:
        packed = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
        inflater = zlib.decompressobj()
        raw = inflater.decompress(packed, max_bytes + 1)
    except (binascii.Error, ValueError, zlib.error):
        raise foreign("its `s=` value is not a compressed scenario") from None
    if len(raw) > max_bytes or inflater.unconsumed_tail:
        raise ScenarioError(LINK, [Problem(("s",), f"the scenario in the link is larger than the {max_bytes:,} bytes "
                                                   "the dashboard accepts; open it with `costsim run` instead")])
    if not inflater.eof:
        if not raw:
            raise foreign("its `s=` value is not a compressed scenario")
        raise ScenarioError(LINK, [Problem(("s",), "the link is cut short: it holds the start of a scenario but not "
                                                   "its end; copy the whole link again, or open the dashboard "
                                                   "without `?s=`")])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise foreign("its scenario is not UTF-8 text") from None
