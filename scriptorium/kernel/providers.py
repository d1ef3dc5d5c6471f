"""Choosing the client from ``CC_LLM_PROVIDER``, and metering what it is asked and answers.

Every check that can fail without spending anything happens here, before the iteration starts:
an unset or unknown provider, a bad mock response, a missing SDK, a missing key, a bad base URL.
The ``anthropic`` SDK is imported only when that provider is chosen.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic import SecretStr

from scriptorium.errors import APIKeyEnvMissingError, LLMGenerateError, translate
from scriptorium.llm.client import Client
from scriptorium.llm.model import LLMRequest, LLMResponse, Usage
from scriptorium.llm.retry import RetryHooks
from scriptorium.profile.model import validate_endpoint

__all__ = [
    "BASE_URL_ENV",
    "KEY_ENV",
    "PROVIDERS",
    "PROVIDER_ENV",
    "MeteredClient",
    "Provider",
    "choose_provider",
]

PROVIDER_ENV = "CC_LLM_PROVIDER"
KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
PROVIDERS = ("mock", "anthropic", "profile")


@dataclass(frozen=True)
class Provider:
    """The chosen provider: its client, and for ``anthropic`` the key and endpoint to send."""

    name: str
    client: Client
    api_key: SecretStr | None = field(default=None)
    endpoint: str | None = None


def choose_provider(
    env: Mapping[str, str], *, prompt_run: bool, hooks: RetryHooks | None = None
) -> Provider:
    """The provider ``CC_LLM_PROVIDER`` names, checked and ready to call.

    Raises ``LLMGenerateError`` (``reason="config"``: unset/unknown provider, bad mock response,
    ``profile`` for a raw payload, bad base URL; ``"provider_unavailable"``: SDK missing) or
    ``APIKeyEnvMissingError`` (``ANTHROPIC_API_KEY`` unset or empty).
    """
    name = (env.get(PROVIDER_ENV) or "").strip().lower()
    if name == "mock":
        from scriptorium.kernel.mock import MOCK_ENV, MockClient

        return Provider("mock", MockClient.from_json(env.get(MOCK_ENV)))
    if name == "anthropic":
        return _anthropic(env, hooks)
    if name == "profile":
        if not prompt_run:
            raise LLMGenerateError(
                f"{PROVIDER_ENV}=profile serves prompt runs only: a raw payload has no profile",
                reason="config",
            )
        from scriptorium.llm.router import Router

        return Provider("profile", Router(hooks=hooks))
    stated = "unset" if not name else f"{name[:40]!r}, which is unknown"
    raise LLMGenerateError(
        f"{PROVIDER_ENV} is {stated}: set it to one of {', '.join(PROVIDERS)}", reason="config"
    )


def _anthropic(env: Mapping[str, str], hooks: RetryHooks | None) -> Provider:
    # Cheap check first (no import), so a missing SDK is reported even without a key.
    if not _sdk_present():
        raise _sdk_missing()
    key = env.get(KEY_ENV) or ""
    if not key.strip():
        raise APIKeyEnvMissingError(
            f"{KEY_ENV} is unset or empty ({PROVIDER_ENV}=anthropic reads its key from it)",
            env_var=KEY_ENV,
        )
    endpoint = env.get(BASE_URL_ENV) or None
    if endpoint is not None:
        with translate(
            LLMGenerateError, f"invalid {BASE_URL_ENV}", reason="config", provider="anthropic"
        ):
            endpoint = validate_endpoint(endpoint.strip())
    # The real import now (seconds, not milliseconds): a broken install fails here, as
    # configuration, rather than in the middle of the iteration.
    try:
        importlib.import_module("anthropic")
    except Exception as err:
        raise _sdk_missing() from err
    from scriptorium.llm.anthropic import AnthropicClient

    return Provider("anthropic", AnthropicClient(hooks=hooks), SecretStr(key), endpoint)


def _sdk_present() -> bool:
    try:
        return importlib.util.find_spec("anthropic") is not None
    except (ImportError, ValueError):  # a blocked or half-imported module
        return False


def _sdk_missing() -> LLMGenerateError:
    return LLMGenerateError(
        "the anthropic provider needs the 'anthropic' package: "
        "pip install 'scriptorium[anthropic]'",
        reason="provider_unavailable",
        provider="anthropic",
    )


class MeteredClient:
    """A ``Client`` around another that announces each call and sums the usage of each response.

    The sum is what the kernel charges, also when the run fails after a response came back (a
    validator failure, say): tokens spent are charged whether or not the run completes. With
    ``free_replays``, a response served from a replay cassette (``metadata["replayed"]``) counts
    as received but adds nothing: nobody paid for those tokens now.
    """

    def __init__(
        self,
        inner: Client,
        on_call: Callable[[LLMRequest], None],
        *,
        free_replays: bool = True,
    ) -> None:
        self._inner = inner
        self._on_call = on_call
        self._free_replays = free_replays
        #: Calls started, and responses received.
        self.calls = 0
        self.responses = 0
        self.usage = Usage()

    def generate(self, request: LLMRequest) -> LLMResponse:
        """Announce the call, delegate, and count what came back."""
        self.calls += 1
        self._on_call(request)
        response = self._inner.generate(request)
        if isinstance(response, LLMResponse):
            self.responses += 1
            if not (self._free_replays and response.metadata.get("replayed") is True):
                self.usage = self.usage + response.usage
        return response
