"""The provider registry: everything scriptorium knows about a provider, in one place per provider.

A :class:`ProviderSpec` says what a provider needs (a key, its variable), what it takes (which
settings it sends, its media rules), what ``prepare`` shows as sent (its wire view), how its
clients are built and, where it has one, its batch API. The use case, the router, media checks,
``check``, the kernel and provider batches ask a :class:`Registry` for the spec by the profile's
``provider`` name; no module outside a provider's own code compares that name to a string.

The built-in specs are named here by the module that holds them and imported on first use, so
importing this module loads no provider code (and no SDK). Third-party providers plug in through
the entry-point group ``scriptorium.providers`` (an object that is a ``ProviderSpec`` or a
zero-argument callable returning one) or ``Engine(providers=[...])``.

A spec names the code behind its callables with :func:`lazy` (``lazy("pkg.body", "wire_view")``):
the module is imported on the first call, so loading a spec loads no adapter code and no SDK.

A plugin is found by its entry point's *name*, which is the provider's name: listing the installed
plugins reads their metadata only, and a plugin's code is imported when a profile names its
provider (or ``check`` asks for every plugin's problems). Each import runs apart, in a thread of
its own, bounded by :data:`PLUGIN_IMPORT_TIMEOUT_S`: a plugin that raises anything at import
(``SystemExit`` from ``sys.exit``, ``KeyboardInterrupt``, any ``BaseException``) or never finishes
is recorded as a problem naming it, and breaks no project that does not name its provider. Two
entry points with the same name are a clash: neither is used, and the problem names both.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple

from scriptorium._suggest import did_you_mean
from scriptorium.errors import InvalidRequestError, LLMGenerateError

if TYPE_CHECKING:
    from scriptorium.llm.batches.port import BatchLimits, BatchProvider
    from scriptorium.llm.client import Client
    from scriptorium.llm.media.limits import MediaLimits
    from scriptorium.llm.model import Failure, LLMRequest, ModelPrice
    from scriptorium.llm.reasoning import ReasoningPlan
    from scriptorium.llm.retry.policy import RetryHooks
    from scriptorium.profile.model import ExecutionSettings

__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUP",
    "PLUGIN_IMPORT_TIMEOUT_S",
    "Lazy",
    "ProviderConfig",
    "ProviderSpec",
    "ReasoningRule",
    "Registry",
    "RequestProblem",
    "Route",
    "WireView",
    "default_registry",
    "lazy",
    "module_installed",
    "provider_needs_key",
]

log = logging.getLogger("scriptorium.llm")

#: The entry-point group third-party packages declare their providers in.
ENTRY_POINT_GROUP = "scriptorium.providers"
#: How long a provider plugin's import (and its spec factory) may take before it is given up on.
PLUGIN_IMPORT_TIMEOUT_S = 5.0


class Lazy:
    """A callable named by its module and attribute (a dotted path inside the module, such as
    ``"GeminiClient.from_config"``), imported on its first call and kept. What a spec declares
    its callables with, so that loading the spec loads none of the code behind them.

    Being a string, the reference is invisible to an import statement: the architecture test
    reads every ``lazy(...)`` call as an import of its module (for the cycle check) and proves
    each one names something importable and callable."""

    __slots__ = ("_target", "attribute", "module")

    def __init__(self, module: str, attribute: str) -> None:
        self.module = module
        self.attribute = attribute
        self._target: Callable[..., Any] | None = None

    def resolve(self) -> Callable[..., Any]:
        """The callable named (its module imported on the first call)."""
        target = self._target
        if target is None:
            value: Any = importlib.import_module(self.module)
            for part in self.attribute.split("."):
                value = getattr(value, part)
            if not callable(value):
                raise TypeError(f"{self!r} names a {type(value).__name__}, not a callable")
            target = self._target = value
        return target

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.resolve()(*args, **kwargs)

    def __repr__(self) -> str:
        return f"lazy({self.module!r}, {self.attribute!r})"


def lazy(module: str, attribute: str) -> Lazy:
    """The callable ``module.attribute``, imported on its first call (see :class:`Lazy`)."""
    return Lazy(module, attribute)


class RequestProblem(NamedTuple):
    """Why a request cannot be sent as it is (a credential its route refuses, an option it
    cannot use): ``prepare`` raises ``InvalidRequestError(message, field=field)`` before any
    call."""

    field: str
    message: str


class WireView:
    """What a request looks like on the wire, as far as ``prepare`` shows it: the system text
    sent, the structured-output strategy used (None when unknown or not structured), the
    settings left out, the schema keywords the provider's schema reduction drops (the full
    schema is still validated locally), and how the reasoning settings are sent (None: the
    provider maps none, or none was given)."""

    __slots__ = ("api", "dropped", "ignored_settings", "reasoning", "strategy", "system")

    def __init__(
        self,
        system: str | None,
        strategy: str | None,
        ignored: tuple[str, ...],
        dropped: tuple[str, ...] = (),
        reasoning: ReasoningPlan | None = None,
        api: str | None = None,
    ) -> None:
        self.system = system
        self.strategy = strategy
        self.ignored_settings = ignored
        self.dropped = dropped
        self.reasoning = reasoning
        #: Which of the provider's APIs the request travels on, where it has several (OpenAI's
        #: ``chat`` or ``responses``); None where there is one.
        self.api = api


@dataclass(frozen=True, kw_only=True)
class Route:
    """How a profile reaches its provider, as far as the rest of scriptorium must know: through
    the provider's own API (``platform`` None) or a cloud platform serving its models (Claude on
    Amazon Bedrock, OpenAI's models on Azure, ...), and what that means for credentials.

    ``needs_key``: a call cannot be made without a key (Bedrock takes the AWS credential chain,
    Vertex AI Google's default credentials: no key). ``token_env``: the variable the profile's
    ``options`` name for its credential (an access token), read like a key when the profile names
    no ``api_key_env``. ``base_url_env``: the SDK's base-URL variable honoured when the profile
    names no endpoint (each platform has its own, or none). ``no_key_env``: why a profile on this
    route may name no ``api_key_env`` (None: it may), said by ``check`` and refused at prepare.
    ``secret_env``: the variables holding credentials the route's SDK signs with (Bedrock's AWS
    secret key and session token), scrubbed from answers and errors like a key.
    ``key_envs``: the provider's conventional key variables, read in order (as its SDK would)
    when a profile names no ``api_key_env``. ``endpoint_names_key``: a profile's own endpoint is
    another server (an OpenAI-compatible one): the conventional variables are not read for it,
    the profile names its variable, or on a loopback or private address sends no key (local
    servers take none); a profile's endpoint given by the base-URL variable is not its own."""

    platform: str | None = None
    region: str | None = None
    needs_key: bool = False
    token_env: str | None = None
    base_url_env: str | None = None
    no_key_env: str | None = None
    secret_env: tuple[str, ...] = ()
    key_envs: tuple[str, ...] = ()
    endpoint_names_key: bool = False
    #: What this route needs installed beyond the provider's SDK: ``(import name, extra)``
    #: pairs (Bedrock's ``boto3``), for ``check``'s install hints.
    libraries: tuple[tuple[str, str], ...] = ()
    #: The provider whose key rule this route follows, asked in the same registry (a replay
    #: profile recording through ``openai`` needs the key ``openai`` needs): resolved by
    #: :meth:`Registry.route_for`, which sets ``needs_key`` from it. None: ``needs_key`` stands.
    key_rule_of: str | None = None


@dataclass(frozen=True)
class ProviderConfig:
    """What a spec's client factory gets to build the client of one provider."""

    provider: str
    #: The profile's ``options`` (empty for specs whose clients are shared by every profile).
    options: Mapping[str, Any] = field(default_factory=dict)
    #: The profile file, for paths in ``options`` relative to it.
    source: str | None = None
    hooks: RetryHooks | None = None
    #: The client of another provider with the same options (``replay`` records through it).
    resolve: Callable[[str], Client] | None = None


#: ``(endpoint, options, profile name) -> MediaLimits | None`` (None: any media, the client decides).
#: A spec whose rules are the same for every target gives its ``MediaLimits`` as they are.
MediaRules = Callable[[str | None, Mapping[str, Any], str | None], "MediaLimits | None"]
#: ``(request) -> WireView``: what the adapter sends that the request alone does not say.
WireRule = Callable[["LLMRequest"], WireView]
#: ``(model, settings) -> ReasoningPlan``: how the reasoning settings go to a model (raises
#: ``InvalidRequestError`` for settings that conflict, such as a budget not below max_tokens).
ReasoningRule = Callable[[str, "ExecutionSettings"], "ReasoningPlan"]
#: ``(request, limits, hooks) -> BatchProvider``: the provider's batch API for a run's request.
BatchFactory = Callable[["LLMRequest", "BatchLimits | None", "RetryHooks"], "BatchProvider"]


@dataclass(frozen=True, kw_only=True)
class ProviderSpec:
    """Everything scriptorium knows about one provider. Only ``name`` and ``client`` are needed;
    every other field has the meaning of "nothing special" when left out."""

    name: str
    #: Builds the provider's client (sync, and async where it has ``agenerate``).
    client: Callable[[ProviderConfig], Client]
    #: Whether ``client`` is built once per profile (its ``options`` and file) or once for all.
    per_profile: bool = True
    #: Whether a call to its own API cannot be made without a key (known by name, whatever client
    #: is injected); a profile's ``options`` may say otherwise (:meth:`ProviderSpec.route_for`).
    needs_key: bool = False
    #: The key variable a profile of this provider usually names.
    key_env: str | None = None
    #: The SDK's own base-URL variable, honoured when a profile names no endpoint.
    base_url_env: str | None = None
    #: The distribution extra that brings its SDK, for install hints.
    extra: str | None = None
    #: The SDK's import name (checked for presence without importing it).
    sdk_module: str | None = None
    #: Settings its API does not take: shown by ``prepare`` as ``ignored``, never sent.
    ignored_settings: tuple[str, ...] = ()
    #: What ``prepare`` shows as sent (None: the request as it is).
    wire: WireRule | None = None
    #: Its media rules, or the one ``MediaLimits`` of every target (None: any media; the client
    #: decides).
    media: MediaRules | MediaLimits | None = None
    #: Its batch API (None: it has none).
    batches: BatchFactory | None = None
    #: The most one batch of it may hold, when it has a batch API.
    batch_limits: BatchLimits | None = None
    #: Problems in a profile's ``options`` (and its file), as messages for ``check``.
    check_options: Callable[[Mapping[str, Any], str | None], Iterable[str]] | None = None
    #: Its price table (model name -> price): what its adapter prices with, and what
    #: ``scriptorium.llm.pricing.PRICE_TABLE`` merges for the built-in providers.
    prices: Mapping[str, ModelPrice] = field(default_factory=dict, hash=False)
    #: ``(model) -> tokens``: the shortest prompt prefix a model caches (None: nothing to warn
    #: about), for ``check``'s prompt-caching warnings.
    cache_minimum: Callable[[str], int | None] | None = None
    #: The one translation of its SDK's exceptions into retry failures (None: it has no SDK).
    classify: Callable[[BaseException], Failure] | None = None
    #: ``(options, profile name) -> Route``: how a profile with these options reaches the
    #: provider (a cloud platform, its region, its credentials); raises ``InvalidRequestError``
    #: for options it cannot use. None: always its own API, as ``needs_key`` and
    #: ``base_url_env`` say.
    route: Callable[[Mapping[str, Any], str | None], Route] | None = None
    #: ``(request) -> RequestProblem``: what ``request`` cannot be sent with (a credential its
    #: route refuses, an option it cannot use; None: nothing), asked before its wire view, so
    #: ``prepare`` refuses it before any call.
    request_problem: Callable[[LLMRequest], RequestProblem | None] | None = None
    #: ``(endpoint) -> message``: why a base URL cannot be this provider's (None: it can), such
    #: as an Anthropic endpoint ending in ``/v1`` (the SDK adds it). Checked wherever the
    #: endpoint came from: the profile, an override or the base-URL variable.
    endpoint_problem: Callable[[str], str | None] | None = None
    #: Its mapping of the reasoning settings per model, from its dated capability table (None:
    #: it maps none; the settings reach its client as they are).
    reasoning: ReasoningRule | None = None
    #: ``(endpoint, options) -> message``: why a ``json_schema`` output may come back
    #: unconstrained from a profile's server (None: nothing to warn about), for ``check``.
    structured_warning: Callable[[str | None, Mapping[str, Any]], str | None] | None = None
    #: ``(request) -> members``: the body members that ask for ``request``'s structured output,
    #: as they go out (for ``verify --structured``'s report; None: it does not say).
    structured_wire: Callable[[LLMRequest], dict[str, Any] | None] | None = None

    def route_for(self, options: Mapping[str, Any], profile: str | None = None) -> Route:
        """How a profile with ``options`` reaches this provider (see :class:`Route`);
        ``InvalidRequestError`` naming the option when the options cannot be used."""
        if self.route is not None:
            return self.route(options, profile)
        return Route(
            needs_key=self.needs_key,
            base_url_env=self.base_url_env,
            key_envs=(self.key_env,) if self.key_env else (),
        )

    def missing_libraries(self, route: Route | None = None) -> list[tuple[str, str]]:
        """``(import name, extra)`` of what a profile of this provider (on ``route``) needs and
        is not installed: its SDK, and the route's own libraries. Looked up, never imported."""
        needed = [] if self.sdk_module is None else [(self.sdk_module, self.extra or self.name)]
        needed += [] if route is None else list(route.libraries)
        return [(module, extra) for module, extra in needed if not module_installed(module)]

    def needs_key_for(self, options: Mapping[str, Any]) -> bool:
        """Whether a profile with ``options`` needs a key, whatever route the options choose, as
        far as this spec alone can say: a route deferring its key question to another provider
        (``Route.key_rule_of``) is answered by :meth:`Registry.route_for`, which prepare and
        ``verify`` ask."""
        return self.route_for(options).needs_key

    @property
    def needs_model(self) -> bool:
        """Whether a profile must name its model: a provider whose own API takes a key serves
        many models, and needs one named on every route (a cloud platform's too, where no key
        is read)."""
        return self.needs_key

    def ignored(self, settings: ExecutionSettings) -> tuple[str, ...]:
        """The settings that have a value but that this provider's adapter does not send."""
        return tuple(n for n in self.ignored_settings if getattr(settings, n) is not None)

    def reasoning_plan(self, request: LLMRequest) -> ReasoningPlan | None:
        """How ``request``'s reasoning settings go to its model; None when the request gives none
        or this provider maps none. Raises ``InvalidRequestError`` for conflicting settings."""
        settings = request.settings
        if self.reasoning is None or (
            settings.reasoning is None and settings.reasoning_budget_tokens is None
        ):
            return None
        return self.reasoning(request.target.model, settings)

    def wire_view(self, request: LLMRequest) -> WireView:
        """What ``request`` looks like on this provider's wire, its reasoning plan included (the
        reasoning settings it leaves out are among the ignored ones). ``InvalidRequestError``
        naming the field when the request cannot be sent (:attr:`request_problem`)."""
        problem = None if self.request_problem is None else self.request_problem(request)
        if problem is not None:
            raise InvalidRequestError(problem.message, field=problem.field)
        if self.wire is not None:
            view = self.wire(request)
        else:
            view = WireView(request.system, None, self.ignored(request.settings))
        plan = view.reasoning if view.reasoning is not None else self.reasoning_plan(request)
        if plan is None:
            return view
        ignored = tuple(dict.fromkeys((*view.ignored_settings, *plan.ignored_settings)))
        return WireView(view.system, view.strategy, ignored, view.dropped, plan, view.api)

    def option_problems(self, options: Mapping[str, Any], source: str | None) -> list[str]:
        """What is wrong with a profile's ``options`` for this provider (for ``check``)."""
        return [] if self.check_options is None else list(self.check_options(options, source))

    def schema_warning(self, endpoint: str | None, options: Mapping[str, Any]) -> str | None:
        """Why a profile's server may not enforce a ``json_schema`` output (None: no reason)."""
        return (
            None if self.structured_warning is None else self.structured_warning(endpoint, options)
        )

    def structured_members(self, request: LLMRequest) -> dict[str, Any] | None:
        """The body members asking for ``request``'s structured output, as sent (None: the
        provider does not say)."""
        return None if self.structured_wire is None else self.structured_wire(request)

    def media_limits(
        self, endpoint: str | None, options: Mapping[str, Any], profile: str | None = None
    ) -> MediaLimits | None:
        """This provider's media rules for a target (None: any media)."""
        media = self.media
        return media(endpoint, options, profile) if callable(media) else media

    def check_endpoint(self, endpoint: str) -> str | None:
        """What is wrong with ``endpoint`` as this provider's base URL (None: nothing)."""
        return None if self.endpoint_problem is None else self.endpoint_problem(endpoint)

    def minimum_cacheable_tokens(self, model: str) -> int | None:
        """The shortest prefix ``model`` caches, in tokens (None when the provider says none)."""
        return None if self.cache_minimum is None else self.cache_minimum(model)


#: The built-in providers, by the ``module:attribute`` holding each spec (imported on first use).
#: The one list of built-in provider names; each package holds everything else about its provider.
BUILTIN: Mapping[str, str] = {
    "anthropic": "scriptorium.llm.anthropic.spec:SPEC",
    "openai": "scriptorium.llm.openai.spec:SPEC",
    "gemini": "scriptorium.llm.gemini.spec:SPEC",
    "bedrock": "scriptorium.llm.bedrock.spec:SPEC",
    "fake": "scriptorium.llm.fake:SPEC",
    "replay": "scriptorium.llm.replay:SPEC",
}


def _load(reference: str) -> Any:
    module, _, attribute = reference.partition(":")
    return getattr(importlib.import_module(module), attribute)


def _as_spec(value: Any, origin: str) -> ProviderSpec:
    if not isinstance(value, ProviderSpec) and callable(value):
        value = value()
    if not isinstance(value, ProviderSpec):
        raise TypeError(f"{origin} is {type(value).__name__}, not a ProviderSpec")
    return value


class Registry:
    """The providers a project can use: the built-in ones, ``specs`` given in code, and those
    third-party packages declare as entry points (when ``entry_points`` is true), each found by
    its entry point's name and imported only when that name is asked for (see the module).

    A spec whose name clashes with a built-in is refused with ``LLMGenerateError(reason="config")``.
    An entry point that fails to load (or clashes with another) is recorded in :attr:`problems`
    (``check`` reports them) and never breaks a project that does not name it.
    """

    def __init__(
        self,
        specs: Iterable[ProviderSpec] = (),
        *,
        entry_points: bool = True,
        plugin_timeout_s: float = PLUGIN_IMPORT_TIMEOUT_S,
    ) -> None:
        self._given: dict[str, ProviderSpec] = {}
        for spec in specs:
            if not isinstance(spec, ProviderSpec):
                raise LLMGenerateError(
                    f"providers must be ProviderSpec objects, not {type(spec).__name__}",
                    reason="config",
                )
            self._refuse_clash(spec.name, "Engine(providers=...)")
            self._given[spec.name] = spec
        self._builtin: dict[str, ProviderSpec] = {}
        self._entry_points = entry_points
        self._timeout_s = plugin_timeout_s
        # Entry points by name, read from metadata (no plugin imported); None until first asked.
        self._points: dict[str, Any] | None = None
        self._plugins: dict[str, ProviderSpec] = {}
        # Why a plugin name cannot be used (it failed to load, or clashes), by name.
        self._broken: dict[str, str] = {}
        self._problems: list[str] = []
        self._lock = threading.Lock()
        self._plugin_lock = threading.Lock()  # apart: a slow plugin never holds up built-ins

    @staticmethod
    def _refuse_clash(name: str, origin: str) -> None:
        if name in BUILTIN:
            raise LLMGenerateError(
                f"{origin}: a provider named {name!r} is built in and cannot be replaced",
                reason="config",
                provider=name,
            )

    def find(self, name: str) -> ProviderSpec | None:
        """The spec of ``name``, or None when no provider has that name (or its plugin does not
        load: :attr:`problems` says why)."""
        spec = self._builtin.get(name) or self._given.get(name)
        if spec is not None:
            return spec
        reference = BUILTIN.get(name)
        if reference is not None:
            with self._lock:
                spec = self._builtin.get(name)
                if spec is None:
                    spec = self._builtin[name] = _as_spec(_load(reference), reference)
            return spec
        return self._plugin(name)

    def route_for(
        self, spec: ProviderSpec, options: Mapping[str, Any], profile: str | None = None
    ) -> Route:
        """How a profile of ``spec``'s provider with ``options`` reaches it (see :class:`Route`),
        with the key question of a route that defers it (``key_rule_of``) answered by that
        provider's spec in this registry, on the same options; a provider it does not know, or
        the route's own, needs no key. The one place a profile's key question is answered
        (prepare, ``verify``, ``check``)."""
        route = spec.route_for(options, profile)
        other_name = route.key_rule_of
        if other_name is None:
            return route
        other = None if other_name == spec.name else self.find(other_name)
        needs_key = other is not None and other.route_for(options, profile).needs_key
        return replace(route, needs_key=needs_key, key_rule_of=None)

    def get(self, name: str) -> ProviderSpec:
        """The spec of ``name``; ``LLMGenerateError(reason="config")`` naming the known providers
        (and the closest one) when there is none."""
        spec = self.find(name)
        if spec is None:
            raise LLMGenerateError(
                self.unknown_message(name), reason="config", provider=name[:64] or None
            )
        return spec

    def unknown_message(self, name: str) -> str:
        """What to tell someone who named a provider that does not exist (or whose plugin does
        not load). Imports no plugin."""
        broken = self._broken.get(name)
        if broken is not None:
            return f"provider {name[:64]!r} cannot be used: {broken}"
        known = self.names()
        hint = did_you_mean(name, known)
        return f"unknown provider {name[:64]!r} (known: {', '.join(known)}){hint}"

    def names(self) -> tuple[str, ...]:
        """Every provider name this registry can serve, sorted: plugins by their entry points'
        names, none imported (those known not to load are left out)."""
        plugins = (n for n in self._entry_point_names() if n not in self._broken)
        return tuple(sorted({*BUILTIN, *self._given, *plugins}))

    @property
    def problems(self) -> tuple[str, ...]:
        """Entry points that could not be loaded (or clash), each as a one-line message naming
        it. Loads every plugin not loaded yet, all at once, each import bounded."""
        pending = [n for n in self._entry_point_names() if n not in self._plugins]
        self._load_plugins(pending)
        return tuple(self._problems)

    # --- plugins ---------------------------------------------------------------------------------

    def _entry_point_names(self) -> tuple[str, ...]:
        return tuple(self._discovered())

    def _discovered(self) -> dict[str, Any]:
        points = self._points
        if points is not None:
            return points
        with self._lock:
            if self._points is None:
                self._points = self._discover() if self._entry_points else {}
            return self._points

    def _discover(self) -> dict[str, Any]:
        """The group's entry points by name, from installed metadata only. A name declared by
        two different entry points is a clash: recorded, and neither is used."""
        from importlib.metadata import entry_points

        try:
            points = list(entry_points(group=ENTRY_POINT_GROUP))
        except Exception as err:  # a broken installation's metadata: no plugins, said once
            self._problems.append(f"entry points of {ENTRY_POINT_GROUP!r}: {type(err).__name__}")
            return {}
        by_name: dict[str, list[Any]] = {}
        for point in points:
            same = by_name.setdefault(point.name, [])
            if all(point.value != other.value for other in same):
                same.append(point)  # the same object found twice on the path is one
        found: dict[str, Any] = {}
        for name, declared in by_name.items():
            if len(declared) > 1:
                where = ", ".join(f"{p.value} ({_distribution(p)})" for p in declared)
                message = (
                    f"entry point {name!r} is declared {len(declared)} times ({where}): "
                    "neither is used; uninstall all but one"
                )
                self._broken[name] = message
                self._problems.append(message)
                continue
            found[name] = declared[0]
        return found

    def _plugin(self, name: str) -> ProviderSpec | None:
        spec = self._plugins.get(name)
        if spec is not None or name in self._broken:
            return spec
        if name not in self._discovered():
            return None
        self._load_plugins([name])
        return self._plugins.get(name)

    def _load_plugins(self, names: list[str]) -> None:
        """Import the plugins ``names`` (each in its own thread, all within one timeout) and
        record each spec or problem."""
        with self._plugin_lock:
            todo = [n for n in names if n not in self._plugins and n not in self._broken]
            points = self._points or {}
            loads = [_PluginLoad(points[n]) for n in todo if n in points]
            deadline = time.monotonic() + self._timeout_s
            for load in loads:
                load.wait(max(0.0, deadline - time.monotonic()))
            for load in loads:
                self._record(load)

    def _record(self, load: _PluginLoad) -> None:
        point = load.point
        origin = f"entry point {point.name!r} ({point.value})"
        spec: ProviderSpec | None = None
        try:
            if load.running:
                raise TimeoutError(
                    f"its import did not finish within {self._timeout_s:g} s (given up on)"
                )
            if load.error is not None:
                raise load.error
            spec = load.spec
            assert spec is not None
            if spec.name in BUILTIN or spec.name in self._given:
                raise ValueError(f"its provider name {spec.name!r} is already taken")
            if spec.name != point.name:
                raise ValueError(
                    f"its provider is named {spec.name!r}, not {point.name!r} as the entry point"
                )
        except BaseException as err:  # whatever the plugin raised: its problem, not ours
            log.debug("provider %s failed to load", origin, exc_info=True)
            message = f"{origin} does not load: {type(err).__name__}: {err}"[:300]
            self._broken[point.name] = message
            self._problems.append(message)
            return
        self._plugins[point.name] = spec


class _PluginLoad:
    """One plugin's import and spec, run in a daemon thread of its own: whatever it raises
    (``SystemExit``, ``KeyboardInterrupt`` included) is kept as :attr:`error`, and a plugin that
    never returns leaves the thread running (:attr:`running`) without holding anyone up."""

    def __init__(self, point: Any) -> None:
        self.point = point
        self.spec: ProviderSpec | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, name=f"scriptorium-plugin-{point.name}"[:60], daemon=True
        )
        self._thread.start()

    def _run(self) -> None:
        try:
            self.spec = _as_spec(self.point.load(), f"entry point {self.point.name!r}")
        except BaseException as err:
            self.error = err

    def wait(self, seconds: float) -> None:
        self._thread.join(seconds)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


def _distribution(point: Any) -> str:
    dist = getattr(point, "dist", None)
    name = getattr(dist, "name", None) if dist is not None else None
    return str(name) if name else "unknown distribution"


_default: Registry | None = None
_default_lock = threading.Lock()


def module_installed(module: str) -> bool:
    """Whether ``module`` can be imported, found without importing it."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent missing, a blocked or half-imported module
        return False


def default_registry() -> Registry:
    """The registry of the built-in providers and installed entry points (one per process)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Registry()
    return _default


def provider_needs_key(provider: str, options: Mapping[str, Any] | None = None) -> bool:
    """Whether ``provider`` needs an API key for a profile with ``options``, as its spec in the
    default registry says (``anthropic`` and ``openai`` do on their own APIs; an unknown provider
    does not)."""
    registry = default_registry()
    spec = registry.find(provider)
    return spec is not None and registry.route_for(spec, options or {}).needs_key
