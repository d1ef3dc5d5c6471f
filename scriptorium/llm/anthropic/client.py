"""The Anthropic adapter: the official ``anthropic`` SDK behind scriptorium's retry loop.

The SDK is imported on first use (:mod:`.sdk`), built with its own retries off and the key and
base URL passed explicitly, and kept: one SDK client per endpoint and key (hashed, never held as a
plain dict key), and for async one per event loop too, because an async client's connection pool
belongs to the loop it was created on.

Each request becomes a :class:`~.call.Call`: the body built by :func:`.body.build_body` and posted
with the SDK's lower-level ``post`` (auth, base URL, headers, timeouts and error types stay the
SDK's; its typed parameter and ``Message`` layer is skipped). Responses are read from the JSON
ourselves: a non-JSON or wrong-shaped 200 then becomes ``reason="invalid_response"`` instead of a
half-built SDK object, and the request id comes straight from the headers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from scriptorium.errors import LLMGenerateError
from scriptorium.llm.adapter import SDKAdapter, SDKFactory
from scriptorium.llm.anthropic.api import COUNT_TOKENS_PATH, PROVIDER
from scriptorium.llm.anthropic.body import count_tokens_body
from scriptorium.llm.anthropic.call import Call
from scriptorium.llm.anthropic.platforms import (
    Platform,
    counts_tokens,
    platform_client,
    post,
    sending,
)
from scriptorium.llm.anthropic.sdk import classify, default_factory, http_response_class
from scriptorium.llm.anthropic.stream import Source
from scriptorium.llm.model import Failure, LLMRequest, Uncounted
from scriptorium.llm.retry.loop import call_with_retry
from scriptorium.llm.retry.policy import RetryHooks
from scriptorium.llm.sdk_http import encode_body
from scriptorium.llm.tokens import counting_failure, uncounted

__all__ = ["AnthropicClient", "PlatformFactory", "SDKFactory"]

#: ``platform_factory(is_async, access_token, platform)`` -> the SDK client of a cloud route
#: (default: ``AnthropicBedrock`` / ``AnthropicVertex``, retries off).
PlatformFactory = Callable[[bool, str, Platform], Any]


def _counting(err: BaseException) -> Failure:
    """The classifier, except that a counting request is not asked again (see
    :func:`scriptorium.llm.tokens.counting_failure`)."""
    return counting_failure(classify(err))


class AnthropicClient(SDKAdapter[Call]):
    """``Client``, ``AsyncClient``, streaming, token counting and ``verify`` for the Anthropic
    Messages API.

    ``hooks`` inject clock, sleep, jitter and supervision into the retry loop; ``sdk_factory``
    builds SDK clients (default: the real SDK with ``max_retries=0``).
    """

    provider = PROVIDER
    call_type = Call
    classify = staticmethod(classify)
    default_factory = staticmethod(default_factory)
    stream_source = Source

    def __init__(
        self,
        *,
        hooks: RetryHooks | None = None,
        sdk_factory: SDKFactory | None = None,
        platform_factory: PlatformFactory | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        direct = sdk_factory or self.default_factory
        through = platform_factory or platform_client

        def make(is_async: bool, key: str, where: Any) -> Any:
            # The cache tells clients apart by base URL, or by a cloud platform's route.
            if isinstance(where, Platform):
                return through(is_async, key, where)
            return direct(is_async, key, where)

        super().__init__(hooks=hooks, sdk_factory=make, options=options)

    def count_tokens(self, request: LLMRequest) -> int | Uncounted:
        """The input tokens of what :meth:`generate` would send for ``request``, from the API's
        token-counting endpoint (free, but rate limited); retried like a generation.

        Any failure of the route (a gateway without it answers 404, 405, 500 or 501; a rate
        limit; a 200 that is no count) is :class:`Uncounted` with the reason, at once and
        without retries: the caller estimates instead. A refused key raises as for a generation
        (:func:`scriptorium.llm.tokens.uncounted`)."""
        call = Call(request)
        platform = call.platform
        if platform is not None and not counts_tokens(platform):
            return Uncounted(
                f"anthropic on {platform.name} has no token-counting endpoint "
                "(the SDK's AnthropicBedrock class has none)"
            )
        client = self.clients.sync(call.slot, call.key)
        body = count_tokens_body(call.sent.body)

        def attempt(timeout_s: float) -> int:
            if platform is not None:
                with sending(platform, call.wire, client, body) as sent:
                    counted = post(client, COUNT_TOKENS_PATH, sent, timeout_s)
                return call.read_count(counted.content)
            response = client.post(
                COUNT_TOKENS_PATH,
                content=encode_body(body),
                cast_to=http_response_class(),
                options={"timeout": timeout_s},
            )
            return call.read_count(response.content)

        try:
            count, _, _ = call_with_retry(attempt, _counting, **call.retry_args(self.hooks))
        except LLMGenerateError as err:
            return uncounted(err, f"{call.base_url} ({COUNT_TOKENS_PATH})")
        return count
