"""A stream's text handed out piece by piece carries no secret, however the pieces are cut: the
joined pieces never hold one, they say what scrubbing the whole text says, and text holding no
part of a secret passes unchanged and undelayed."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from scriptorium.llm.secrets import REDACTED, StreamScrub, scrub_text, secret_values

# A two-letter alphabet makes secrets overlap each other and the text around them often.
_SECRET = st.text(alphabet="ab", min_size=8, max_size=12)


def _handed(pieces: list[str], secrets: tuple[str, ...]) -> tuple[list[str], str]:
    scrub = StreamScrub(secrets)
    out = [scrub.piece(piece) for piece in pieces]
    return out, scrub.end()


@st.composite
def _stream(draw: st.DrawFn, secrets: int) -> tuple[tuple[str, ...], list[str]]:
    keys = tuple(draw(st.lists(_SECRET, min_size=1, max_size=secrets, unique=True)))
    parts = draw(st.lists(st.one_of(st.text(alphabet="abc", max_size=6), st.sampled_from(keys))))
    text = "".join(parts)
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=8)))
    bounds = [0, *cuts, len(text)]
    return keys, [text[a:b] for a, b in itertools.pairwise(bounds)]


@given(_stream(secrets=3))
def test_no_secret_stands_in_the_joined_pieces(case: tuple[tuple[str, ...], list[str]]) -> None:
    secrets, pieces = case
    out, tail = _handed(pieces, secrets)
    joined = "".join(out) + tail
    for secret in secret_values(secrets):
        # A replacement never forms a secret with its neighbours here: "[redacted]" holds no
        # "a" or "b" run of eight.
        assert secret not in joined


@given(_stream(secrets=1))
def test_one_secret_is_scrubbed_as_in_the_whole_text(
    case: tuple[tuple[str, ...], list[str]],
) -> None:
    secrets, pieces = case
    out, tail = _handed(pieces, secrets)
    assert "".join(out) + tail == scrub_text("".join(pieces), secret_values(secrets))


@given(st.lists(st.text(alphabet="xyz ", max_size=10)))
def test_text_without_a_part_of_any_secret_passes_as_it_came(pieces: list[str]) -> None:
    out, tail = _handed(pieces, ("sk-live-0123456789",))
    assert out == pieces
    assert tail == ""


def test_a_secret_cut_across_pieces_is_held_then_replaced_whole() -> None:
    key = "sk-live-0123456789"
    out, tail = _handed(["token: sk-li", "ve-0123", "456789 ok"], (key,))
    assert out == ["token: ", "", f"{REDACTED} ok"]
    assert tail == ""


def test_without_secrets_every_piece_passes_at_once() -> None:
    assert _handed(["a", "b"], ()) == (["a", "b"], "")
    assert _handed(["sk-"], ("short",)) == (["sk-"], "")  # a placeholder is no secret
