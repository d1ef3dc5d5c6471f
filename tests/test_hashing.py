"""Canonical JSON and sha256 digests: fixed vectors, so every machine agrees."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from scriptorium.hashing import canonical_json, hash_bytes, hash_json, hash_text

VECTORS = [
    ({}, b"{}", "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"),
    (
        {"b": 1, "a": [1.5, "é", {"z": None, "y": True}]},
        '{"a":[1.5,"é",{"y":true,"z":null}],"b":1}'.encode(),
        "sha256:200149a3e89653a1bb56ca8a5a7683b4aae6d75561a27d71bbaf6632f77247e6",
    ),
    (
        "naïve ☃",
        '"naïve ☃"'.encode(),
        "sha256:1a54a6d607929e9748881eed63823de392a1517761dfdfd3a2c64b2278a7b48b",
    ),
    (
        [0.1, 1e20, -0.0, 3.0],
        b"[0.1,1e+20,-0.0,3.0]",
        "sha256:8b40ec7775046264e016004c9b00bdf65a049583a04caff437ca5e12fab103b2",
    ),
]


@pytest.mark.parametrize(("value", "encoded", "digest"), VECTORS)
def test_fixed_vectors(value: object, encoded: bytes, digest: str) -> None:
    """Sorted keys, no spaces, UTF-8 kept, floats as Python writes them."""
    assert canonical_json(value) == encoded
    assert hash_json(value) == digest
    assert hash_bytes(encoded) == digest


def test_text_and_bytes_agree() -> None:
    """hash_text is the digest of the UTF-8 bytes."""
    assert hash_text("é") == hash_bytes("é".encode())


def test_non_finite_numbers_have_no_canonical_form() -> None:
    """NaN and infinities are refused rather than hashed as non-JSON."""
    for bad in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError, match="JSON"):
            canonical_json({"x": bad})


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


@given(st.dictionaries(st.text(), json_values, max_size=6))
def test_key_order_never_changes_the_hash(value: dict[str, object]) -> None:
    """Reversing insertion order keeps the digest."""
    reordered = dict(reversed(list(value.items())))
    assert hash_json(value) == hash_json(reordered)
