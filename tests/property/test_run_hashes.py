"""The assembled per-run hashes equal the plain canonical-JSON hashes of the hash forms."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scriptorium.hashing import hash_json
from scriptorium.llm.model import LLMRequest, StructuredOutput, Target
from scriptorium.profile.model import ExecutionSettings
from scriptorium.prompt.model import Message, RenderedPrompt
from scriptorium.usecase import hashes
from scriptorium.usecase.hashes import prompt_and_request_hashes

_text = st.text(max_size=40)
_messages = st.lists(
    st.builds(Message, role=st.sampled_from(["user", "assistant"]), content=_text),
    min_size=1,
    max_size=3,
)
_schemas: st.SearchStrategy[dict[str, Any] | None] = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["type", "title", "const", "enum", "é"]),
        st.one_of(st.booleans(), st.integers(), _text, st.lists(st.integers(), max_size=2)),
        max_size=3,
    ),
)


@settings(max_examples=60, deadline=None)
@given(
    system=st.one_of(st.none(), _text),
    messages=_messages,
    schema=_schemas,
    schema_hash=st.one_of(st.none(), st.sampled_from(["sha256:a", "sha256:b"])),
    max_tokens=st.integers(min_value=1, max_value=4096),
    endpoint=st.one_of(st.none(), st.just("http://127.0.0.1:8080")),
)
def test_assembled_hashes_equal_the_plain_ones(
    system: str | None,
    messages: list[Message],
    schema: dict[str, Any] | None,
    schema_hash: str | None,
    max_tokens: int,
    endpoint: str | None,
) -> None:
    """Same bytes hashed, whatever the prompt, spec (even a reused schema hash) and settings."""
    rendered = RenderedPrompt(system=system, messages=tuple(messages))
    spec = None if schema is None else StructuredOutput(schema_=schema, name="out", strategy="tool")
    request = LLMRequest(
        target=Target(provider="anthropic", model="m", endpoint=endpoint),
        messages=rendered.messages,
        system=system,
        settings=ExecutionSettings(max_tokens=max_tokens),
        structured_output=spec,
    )
    plain = hash_json(rendered.hash_form()), hash_json(request.hash_form())
    for _ in range(2):  # the first call checks the assembly, later ones use it
        assert prompt_and_request_hashes(rendered, request, schema_hash, shown_system=system) == (
            plain
        )
    assert hashes._state["assemble"], "the assembly disagreed once and was switched off"
