"""The Gemini provider's registry entry: everything scriptorium knows about it, declared from
this package. Loading it loads no SDK and no adapter code: the callables behind the adapter are
named with :func:`~scriptorium.llm.registry.lazy` and imported on first use."""

from __future__ import annotations

from scriptorium.llm.gemini.api import (
    BASE_URL_ENV,
    BATCH_LIMITS,
    IGNORED_SETTINGS,
    KEY_ENV,
    MEDIA_LIMITS,
    PRICES,
    PROVIDER,
    option_problems,
    route,
)
from scriptorium.llm.gemini.reasoning import reasoning_plan
from scriptorium.llm.registry import ProviderSpec, lazy

__all__ = ["SPEC"]

SPEC = ProviderSpec(
    name=PROVIDER,
    client=lazy("scriptorium.llm.gemini.client", "GeminiClient.from_config"),
    # Vertex AI's project and location are in the profile's options.
    per_profile=True,
    # The Gemini API needs a key (and so a named model); a Vertex AI profile's route says it
    # needs none (Google's default credentials, or the token its options name: ``route``).
    needs_key=True,
    key_env=KEY_ENV,
    base_url_env=BASE_URL_ENV,
    extra="gemini",
    sdk_module="google.genai",
    ignored_settings=IGNORED_SETTINGS,
    wire=lazy("scriptorium.llm.gemini.body", "wire_view"),
    media=MEDIA_LIMITS,
    batches=lazy("scriptorium.llm.gemini.batches", "batches_for"),
    batch_limits=BATCH_LIMITS,
    check_options=option_problems,
    prices=PRICES,
    classify=lazy("scriptorium.llm.gemini.sdk", "classify"),
    reasoning=reasoning_plan,
    route=route,
)
