"""The provider router: one ``Client`` that sends each request to the adapter its profile names.

``request.target.provider`` picks a factory; the factory builds the adapter from a
:class:`ProviderConfig` (the profile's ``options`` and source file, the retry hooks). Built clients
are cached, so SDK clients and the fake provider's turn counter live as long as the router:

- provider adapters whose spec says they ignore ``options`` (``per_profile=False``: ``anthropic``,
  ``openai``) are built once per router;
- per-profile adapters (``fake``, ``replay``, and custom ones by default) once per
  ``(provider, options, profile source)``.

Adapter modules are imported only when their provider is first used, so importing the router
never imports a provider SDK.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, cast

from scriptorium.errors import LLMGenerateError, translate
from scriptorium.hashing import hash_bytes
from scriptorium.llm.client import Client, TokenCounter, Verifier, agenerate_with, supports
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Uncounted
from scriptorium.llm.registry import ProviderConfig, Registry, default_registry
from scriptorium.llm.streaming import StreamItem, astream_of, stream_of

if TYPE_CHECKING:
    from pydantic import SecretStr

    from scriptorium.llm.retry.policy import RetryHooks

__all__ = ["ProviderConfig", "ProviderFactory", "Router"]  # ProviderConfig: see llm.registry


ProviderFactory = Callable[[ProviderConfig], Client]


class Router:
    """A :class:`Client` and :class:`AsyncClient` dispatching on ``request.target.provider``.

    Clients are built by the specs of ``registry`` (default: the built-in providers and installed
    entry points). ``factories`` adds to (or replaces) them; factories given here are built per
    profile, like :meth:`register`'s default. An unknown provider fails with
    ``LLMGenerateError(reason="config")``.
    """

    def __init__(
        self,
        *,
        factories: Mapping[str, ProviderFactory] | None = None,
        hooks: RetryHooks | None = None,
        registry: Registry | None = None,
    ) -> None:
        self._hooks = hooks
        self.registry = registry or default_registry()
        self._factories: dict[str, tuple[ProviderFactory, bool]] = {}
        for name, factory in (factories or {}).items():
            self._factories[name] = (factory, True)
        self._clients: dict[tuple[str, str, str | None], Client] = {}
        self._lock = threading.RLock()

    def register(self, name: str, factory: ProviderFactory, *, per_profile: bool = True) -> None:
        """Route provider ``name`` to clients built by ``factory``.

        With ``per_profile`` the factory sees each profile's ``options`` and source and is called
        once per distinct pair; without, it is called once and its client serves every profile.
        Registering again replaces the factory and forgets clients already built for ``name``.
        """
        with self._lock:
            self._factories[name] = (factory, per_profile)
            for key in [k for k in self._clients if k[0] == name]:
                del self._clients[key]

    @property
    def providers(self) -> tuple[str, ...]:
        """The provider names this router can serve."""
        with self._lock:
            return tuple(sorted({*self._factories, *self.registry.names()}))

    def _factory(self, provider: str) -> tuple[ProviderFactory, bool]:
        entry = self._factories.get(provider)
        if entry is not None:
            return entry
        spec = self.registry.find(provider)
        if spec is None:
            raise LLMGenerateError(
                self.registry.unknown_message(provider), reason="config", provider=provider
            )
        return spec.client, spec.per_profile

    def client_for(
        self, provider: str, options: Mapping[str, Any] | None = None, source: str | None = None
    ) -> Client:
        """The (cached) client serving ``provider`` for a profile with ``options`` and ``source``."""
        # Hot path (every request): a provider built once per router needs no options hash and,
        # once built, no lock (dict reads are atomic).
        shared = self._clients.get((provider, "", None))
        if shared is not None:
            return shared
        with self._lock:
            factory, per_profile = self._factory(provider)
            options = dict(options or {}) if per_profile else {}
            source = source if per_profile else None
            key = (provider, _options_key(options) if per_profile else "", source)
            client = self._clients.get(key)
            if client is None:
                config = ProviderConfig(
                    provider=provider,
                    options=options,
                    source=source,
                    hooks=self._hooks,
                    resolve=lambda other: self.client_for(other, options, source),
                )
                with translate(
                    LLMGenerateError,
                    f"building the {provider} client",
                    reason="config",
                    provider=provider,
                ):
                    client = factory(config)
                self._clients[key] = client
            return client

    def _route(self, request: LLMRequest) -> Client:
        return self.client_for(request.target.provider, request.options, request.profile_source)

    def generate(self, request: LLMRequest) -> LLMResponse:
        """The response of the adapter ``request.target.provider`` names."""
        return self._route(request).generate(request)

    async def agenerate(self, request: LLMRequest) -> LLMResponse:
        """The async twin of :meth:`generate`; a sync-only adapter runs in a worker thread."""
        return await agenerate_with(self._route(request), request)

    def stream(self, request: LLMRequest) -> Iterator[StreamItem]:
        """The stream of the adapter ``request.target.provider`` names (one chunk when the adapter
        cannot stream)."""
        return stream_of(self._route(request), request)

    def astream(self, request: LLMRequest) -> AsyncIterator[StreamItem]:
        """The async twin of :meth:`stream`."""
        return astream_of(self._route(request), request)

    def count_tokens(self, request: LLMRequest) -> int | Uncounted | None:
        """The provider's own count of ``request``'s input tokens, None when its adapter has
        no counting endpoint, or :class:`Uncounted` when the endpoint could not count."""
        client = self._route(request)
        if not supports(client, TokenCounter):
            return None
        result = cast("TokenCounter", client).count_tokens(request)
        return result if isinstance(result, int | Uncounted) else None

    def verify(
        self,
        target: Target,
        api_key: SecretStr | str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        source: str | None = None,
    ) -> LLMResponse:
        """A minimal real request through the adapter of ``target.provider`` (key, endpoint, model).

        Adapters without a ``verify`` of their own (``fake``, ``replay``, most custom ones) are
        proven by building them: the configuration is what can be wrong there.
        """
        from scriptorium.llm.adapter import SDKAdapter

        client = self.client_for(target.provider, options, source)
        if isinstance(client, SDKAdapter):  # the profile's options choose its route (a platform)
            return client.verify(target, api_key, options=options)
        if supports(client, Verifier):
            result = cast("Verifier", client).verify(target, api_key)
            if isinstance(result, LLMResponse):
                return result
        return LLMResponse(model=target.model, attempts=0, metadata={"verified": "configuration"})


def _options_key(options: Mapping[str, Any]) -> str:
    # Options come from YAML, so they may hold values JSON cannot (dates); str() keeps them stable.
    return hash_bytes(json.dumps(options, sort_keys=True, default=str).encode("utf-8"))
