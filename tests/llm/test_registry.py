"""The provider registry: the built-in specs, specs given in code, third-party providers installed
as packages with an entry point (``scriptorium.providers``), name clashes refused, and a broken
entry point kept out of the way of projects that do not use it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import scriptorium
from scriptorium import Engine
from scriptorium.errors import InvalidRequestError, LLMGenerateError
from scriptorium.llm.client import Client
from scriptorium.llm.media.limits import MediaLimits
from scriptorium.llm.model import LLMRequest, LLMResponse, Target, Usage
from scriptorium.llm.registry import (
    BUILTIN,
    ENTRY_POINT_GROUP,
    ProviderConfig,
    ProviderSpec,
    Registry,
    RequestProblem,
    Route,
    WireView,
    lazy,
)
from scriptorium.llm.router import Router
from scriptorium.prompt.model import Message, content_text

REPO = Path(scriptorium.__file__).resolve().parent.parent

# A provider package as a third party would publish it: its own module, and the entry point
# its installed metadata declares. Nothing in scriptorium names it.
TOY_PACKAGE = """
from scriptorium.llm.model import LLMResponse, Usage
from scriptorium.llm.registry import ProviderSpec
from scriptorium.prompt.model import content_text


class ToyClient:
    def __init__(self, greeting):
        self.greeting = greeting

    def generate(self, request):
        said = content_text(request.messages[-1].content) if request.messages else ""
        return LLMResponse(
            text=f"{self.greeting} ({request.target.model}) heard: {said}",
            model=request.target.model,
            usage=Usage(input_tokens=3, output_tokens=4, llm_calls=1),
        )


def spec():
    return ProviderSpec(
        name="toy", client=lambda config: ToyClient(config.options.get("greeting", "hello"))
    )
"""


def install(site: Path, name: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
    """A distribution ``name`` in ``site`` as an installer leaves it: its modules and a
    ``.dist-info`` with ``METADATA`` and ``entry_points.txt``."""
    for module, source in modules.items():
        package = site / module
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = site / f"{name}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8"
    )
    points = "".join(f"{key} = {value}\n" for key, value in entry_points.items())
    (info / "entry_points.txt").write_text(f"[{ENTRY_POINT_GROUP}]\n{points}", encoding="utf-8")


def project(root: Path, provider: str, options: str = "{}") -> Path:
    (root / "prompts").mkdir(parents=True)
    (root / "profiles").mkdir()
    (root / "prompts" / "hello.prompt.md").write_text(
        "---\nprofile: main\n---\nSay hello to {{ name }}.\n", encoding="utf-8"
    )
    (root / "profiles" / "main.yaml").write_text(
        f"provider: {provider}\nmodel: toy-1\noptions: {options}\n", encoding="utf-8"
    )
    return root


def cli(root: Path, site: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["PYTHONPATH"] = os.pathsep.join([str(site), str(REPO)])
    return subprocess.run(
        [sys.executable, "-m", "scriptorium", *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_a_provider_installed_as_a_package_runs_from_the_cli(tmp_path: Path) -> None:
    """A separate package declaring a ``scriptorium.providers`` entry point is used by a profile
    naming it, with no change to scriptorium."""
    site = tmp_path / "site"
    install(site, "toy_provider", {"toy": "toy_provider:spec"}, {"toy_provider": TOY_PACKAGE})
    root = project(tmp_path / "project", "toy", "{greeting: Hi}")
    done = cli(root, site, "run", "hello", "-i", "name=Ada", "--json")
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["output"]["text"] == "Hi (toy-1) heard: Say hello to Ada."
    assert result["usage"]["output_tokens"] == 4


class EchoClient:
    def generate(self, request: LLMRequest) -> LLMResponse:
        said = content_text(request.messages[-1].content)
        return LLMResponse(text=f"echo: {said}", model=request.target.model)


def echo_spec(name: str = "echo") -> ProviderSpec:
    return ProviderSpec(name=name, client=lambda config: EchoClient())


def test_engine_providers_registers_specs_in_code(tmp_path: Path) -> None:
    """``Engine(providers=[spec])``: a profile names the spec's provider and the run uses it."""
    engine = Engine(project(tmp_path, "echo"), providers=[echo_spec()])
    assert "echo" in engine.providers.names()
    result = engine.run("hello", inputs={"name": "Ada"})
    assert result.output.text == "echo: Say hello to Ada."


@pytest.mark.parametrize("name", sorted(BUILTIN))
def test_a_spec_named_like_a_built_in_is_refused(tmp_path: Path, name: str) -> None:
    """A spec may not replace a built-in provider: ``LLMGenerateError(reason="config")``."""
    with pytest.raises(LLMGenerateError) as caught:
        Registry([echo_spec(name)])
    assert caught.value.reason == "config"
    with pytest.raises(LLMGenerateError) as caught:
        Engine(tmp_path, providers=[echo_spec(name)])
    assert caught.value.reason == "config"


def test_an_entry_point_returning_a_spec_is_found_and_one_that_fails_is_a_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Entry points are read when a name is not otherwise known: a good one serves its provider;
    a broken one (an import error, an object that is no spec, a name already taken) is listed in
    ``problems`` and breaks nothing else."""
    site = tmp_path / "site"
    install(
        site,
        "mixed_providers",
        {
            "toy": "toy_provider:spec",
            "broken": "broken_provider:SPEC",
            "notaspec": "clash_provider:VALUE",
            "clash": "clash_provider:SPEC",
        },
        {
            "toy_provider": TOY_PACKAGE,
            "broken_provider": "raise RuntimeError('this provider cannot load')\n",
            "clash_provider": (
                "from scriptorium.llm.registry import ProviderSpec\n"
                "SPEC = ProviderSpec(name='fake', client=lambda config: None)\n"
                "VALUE = 42\n"
            ),
        },
    )
    monkeypatch.syspath_prepend(str(site))
    registry = Registry()
    assert registry.get("fake").name == "fake"  # built-ins never wait on entry points
    toy = registry.get("toy")
    client = toy.client(ProviderConfig(provider="toy", options={"greeting": "Yo"}))
    request = LLMRequest(
        target=Target(provider="toy", model="m"), messages=(Message(role="user", content="x"),)
    )
    assert client.generate(request).text == "Yo (m) heard: x"
    problems = registry.problems
    assert len(problems) == 3
    assert any("'broken'" in p and "RuntimeError" in p for p in problems)
    assert any("'notaspec'" in p and "is int, not a ProviderSpec" in p for p in problems)
    assert any("'clash'" in p and "already taken" in p for p in problems)
    assert "broken" not in registry.names()
    with pytest.raises(LLMGenerateError) as caught:
        registry.get("broken")
    assert caught.value.reason == "config"


def test_a_broken_entry_point_does_not_break_a_project_that_does_not_use_it(
    tmp_path: Path,
) -> None:
    """With a provider package that fails to import installed, a project on the built-in
    ``fake`` provider runs as ever, from the CLI."""
    site = tmp_path / "site"
    install(
        site,
        "broken_provider",
        {"broken": "broken_provider:SPEC"},
        {"broken_provider": "raise ImportError('a dependency is missing')\n"},
    )
    root = project(tmp_path / "project", "fake", "{responses: [Hello Ada]}")
    done = cli(root, site, "run", "hello", "-i", "name=Ada")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello Ada\n"


def test_the_router_builds_a_registered_provider_once_per_profile() -> None:
    """A spec's client is built from the profile's options (``per_profile`` by default) and kept."""
    built: list[dict[str, object]] = []

    def build(config: ProviderConfig) -> EchoClient:
        built.append(dict(config.options))
        return EchoClient()

    router = Router(registry=Registry([ProviderSpec(name="echo", client=build)]))
    request = LLMRequest(
        target=Target(provider="echo", model="m"),
        messages=(Message(role="user", content="hi"),),
        options={"a": 1},
    )
    assert router.generate(request).text == "echo: hi"
    assert router.generate(request).text == "echo: hi"
    assert built == [{"a": 1}]


def test_built_in_specs_carry_their_providers_knowledge() -> None:
    """Each built-in spec loads without its SDK and says what the shared code asks: prices,
    cache minimums, media limits, batch limits and its classifier."""
    code = textwrap.dedent(
        """
        import sys
        from scriptorium.llm.registry import default_registry
        registry = default_registry()
        anthropic, openai = registry.get("anthropic"), registry.get("openai")
        assert "claude-sonnet-4-6" in anthropic.prices and "gpt-4o" in openai.prices
        assert anthropic.minimum_cacheable_tokens("claude-sonnet-4-6") == 1024
        assert openai.minimum_cacheable_tokens("gpt-4o") is None
        assert anthropic.media_limits(None, {}).max_images == 100
        assert openai.media_limits("http://127.0.0.1:9/v1", {}).kinds == frozenset()
        assert anthropic.batch_limits.max_requests == 100_000
        assert anthropic.classify is not None and openai.classify is not None
        for sdk in ("anthropic", "openai"):
            assert sdk not in sys.modules, sdk
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_usage_of_a_registered_provider_is_reported_as_given(tmp_path: Path) -> None:
    """What a third-party client reports (usage, model) reaches the result unchanged."""

    class Counting:
        def generate(self, request: LLMRequest) -> LLMResponse:
            return LLMResponse(text="ok", model="c-1", usage=Usage(input_tokens=5, llm_calls=1))

    spec = ProviderSpec(name="counting", client=lambda config: Counting())
    engine = Engine(project(tmp_path, "counting"), providers=[spec])
    result = engine.run("hello", inputs={"name": "Ada"})
    assert (result.output.text, result.usage.input_tokens) == ("ok", 5)


def _keyed(name: str) -> ProviderSpec:
    return ProviderSpec(name=name, client=lambda config: _NoClient(), needs_key=True)


class _NoClient:
    def generate(self, request: LLMRequest) -> LLMResponse:
        raise AssertionError("no call is made in these tests")


def test_a_route_deferring_its_key_rule_is_answered_by_the_same_registry() -> None:
    # The provider the route defers to exists only in this registry: the answer cannot come
    # from any process-wide one.
    deferring = ProviderSpec(
        name="mirror",
        client=lambda config: _NoClient(),
        route=lambda options, profile: Route(key_rule_of=str(options.get("through", ""))),
    )
    registry = Registry([deferring, _keyed("vault")], entry_points=False)

    assert registry.route_for(deferring, {"through": "vault"}).needs_key
    assert registry.route_for(deferring, {"through": "vault"}).key_rule_of is None
    assert not registry.route_for(deferring, {"through": "nowhere"}).needs_key
    # A route deferring to its own provider asks nobody: no key, no recursion.
    assert not registry.route_for(deferring, {"through": "mirror"}).needs_key
    assert (
        not Registry([deferring], entry_points=False)
        .route_for(deferring, {"through": "vault"})
        .needs_key
    )


def test_a_replay_recording_needs_the_key_of_the_provider_it_records_through() -> None:
    registry = Registry([_keyed("vault")], entry_points=False)
    replay = registry.get("replay")
    recording = {"mode": "record", "record_provider": "vault", "cassette": "c.jsonl"}

    assert registry.route_for(replay, recording).needs_key
    assert not registry.route_for(replay, {**recording, "mode": "replay"}).needs_key
    assert not registry.route_for(replay, {**recording, "record_provider": "fake"}).needs_key


def test_a_built_in_spec_loads_no_adapter_code_until_a_declared_callable_is_called() -> None:
    """A spec names its adapter's callables (``lazy``): loading it imports none of the client,
    body, call, stream or SDK modules of its package, and the first call of one imports its
    module only."""
    code = textwrap.dedent(
        """
        import importlib, sys
        from scriptorium.llm.registry import BUILTIN, Lazy, ProviderConfig
        for name, reference in BUILTIN.items():
            module, _, attribute = reference.partition(":")
            if not module.endswith(".spec"):
                continue
            package = module.removesuffix(".spec")
            spec = getattr(importlib.import_module(module), attribute)
            for part in ("client", "body", "call", "stream", "sdk", "batches"):
                assert f"{package}.{part}" not in sys.modules, (name, part)
            assert isinstance(spec.client, Lazy), name
            assert isinstance(spec.classify, Lazy), name
            client = spec.client(ProviderConfig(provider=name))
            assert type(client).__module__ == f"{package}.client", name
        for sdk in ("anthropic", "openai", "google.genai", "boto3"):
            assert sdk not in sys.modules, sdk
        print("ok")
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_a_lazy_reference_resolves_a_dotted_attribute_once() -> None:
    """``lazy(module, "Class.attribute")`` reaches into a class; the target is kept after the
    first call, and one that is not callable is refused by name."""
    make = lazy("scriptorium.llm.registry", "WireView")
    view = make("system", None, ())
    assert isinstance(view, WireView)
    assert view.system == "system"
    assert make.resolve() is WireView
    assert lazy("scriptorium.llm.registry", "Registry.get").resolve() is Registry.get
    with pytest.raises(TypeError, match="ENTRY_POINT_GROUP"):
        lazy("scriptorium.llm.registry", "ENTRY_POINT_GROUP").resolve()


def _request(options: dict[str, object] | None = None) -> LLMRequest:
    return LLMRequest(
        target=Target(provider="toy", model="m"),
        messages=(Message(role="user", content="hi"),),
        options=dict(options or {}),
    )


def test_a_request_problem_is_refused_before_the_wire_view() -> None:
    """``request_problem`` is asked first: its problem is ``InvalidRequestError`` naming its
    field, and the wire view is never built; a request without one gets the view."""
    built: list[LLMRequest] = []

    def wire(request: LLMRequest) -> WireView:
        built.append(request)
        return WireView(request.system, None, ())

    def problem(request: LLMRequest) -> RequestProblem | None:
        if request.options.get("bad"):
            return RequestProblem("options.bad", "options.bad cannot be sent")
        return None

    spec = ProviderSpec(name="toy", client=_no_client, wire=wire, request_problem=problem)
    with pytest.raises(InvalidRequestError, match="cannot be sent") as caught:
        spec.wire_view(_request({"bad": True}))
    assert caught.value.field == "options.bad"
    assert built == []
    assert spec.wire_view(_request()).system is None
    assert len(built) == 1


def test_a_spec_gives_one_media_limits_for_every_target() -> None:
    """``media`` may be the one ``MediaLimits`` of every target instead of a rule."""
    limits = MediaLimits(provider="toy", kinds=frozenset({"image"}))
    spec = ProviderSpec(name="toy", client=_no_client, media=limits)
    assert spec.media_limits("http://127.0.0.1:9", {}) is limits
    assert ProviderSpec(name="toy", client=_no_client).media_limits(None, {}) is None


def _no_client(config: ProviderConfig) -> Client:
    raise AssertionError("no client is built here")
