"""The direct send (``scriptorium.llm.anthropic.direct``) against the SDK's own ``post``, through the real
``anthropic`` SDK and FakeAnthropicServer on 127.0.0.1: the same request on the wire, the same
errors, and ``post`` wherever the direct send would not be exactly that."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from scriptorium._testing.anthropic_server import FakeAnthropicServer
from scriptorium._testing.http import RecordedRequest
from scriptorium.llm.anthropic import direct as _direct
from scriptorium.llm.anthropic.client import AnthropicClient
from scriptorium.llm.anthropic.sdk import default_factory, http_response_class
from scriptorium.llm.anthropic.sdk import sdk as load_sdk
from scriptorium.llm.model import LLMRequest, Target
from scriptorium.prompt.model import Message

KEY = "sk-ant-direct-canary-5b1e9d"
BODY = b'{"model":"claude-haiku-4-5","max_tokens":16,"messages":[{"role":"user","content":"Hi"}]}'
TIMEOUT = 5.0


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeAnthropicServer]:
    with FakeAnthropicServer(default_text="ok") as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeAnthropicServer) -> FakeAnthropicServer:
    shared_server.reset()
    return shared_server


def url_of(server: FakeAnthropicServer) -> str:
    return server.url + "/v1/messages"


def via_post(client: Any, url: str, body: bytes = BODY, timeout: float = TIMEOUT) -> Any:
    return client.post(
        url, content=body, cast_to=http_response_class(), options={"timeout": timeout}
    )


def via_direct(client: Any, url: str, body: bytes = BODY, timeout: float = TIMEOUT) -> Any:
    poster = _direct.direct_post(load_sdk(), client, url)
    assert poster is not None, "the SDK's own client should go direct"
    return poster.send(body, timeout)


def last(server: FakeAnthropicServer) -> RecordedRequest:
    return server.requests[-1]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# --- the same request, the same answer ---------------------------------------------------------


def test_the_installed_sdk_goes_direct_for_both_client_kinds() -> None:
    """If an SDK upgrade changes what is checked, this fails instead of quietly going slow."""
    sync = default_factory(False, KEY, "http://127.0.0.1:9")
    assert _direct.direct_post(load_sdk(), sync, "http://127.0.0.1:9/v1/messages") is not None

    async def build() -> Any:
        client = default_factory(True, KEY, "http://127.0.0.1:9")
        try:
            return _direct.direct_post(load_sdk(), client, "http://127.0.0.1:9/v1/messages")
        finally:
            await client.close()

    assert asyncio.run(build()) is not None


@pytest.mark.parametrize("timeout", [TIMEOUT, 0.75, 59.999871234, 600.0])
def test_sync_direct_sends_what_post_sends(server: FakeAnthropicServer, timeout: float) -> None:
    client = default_factory(False, KEY, server.url)
    with client:
        through_post = via_post(client, url_of(server), timeout=timeout)
        sent_by_post = last(server)
        direct = via_direct(client, url_of(server), timeout=timeout)
        sent_direct = last(server)
    assert sent_direct.method == sent_by_post.method == "POST"
    assert sent_direct.path == sent_by_post.path == "/v1/messages"
    assert sent_direct.raw == sent_by_post.raw == BODY
    assert sent_direct.headers == sent_by_post.headers
    assert sent_direct.headers["x-stainless-timeout"] == str(timeout)
    # The key as the SDK release sends it: x-api-key, or (newer releases) a bearer token.
    auth = sent_direct.headers
    assert (auth.get("x-api-key") or auth.get("authorization", "").removeprefix("Bearer ")) == KEY
    assert direct.status_code == through_post.status_code == 200
    assert direct.json()["content"] == through_post.json()["content"]
    assert direct.headers["request-id"]


def test_async_direct_sends_what_post_sends(server: FakeAnthropicServer) -> None:
    async def both() -> tuple[RecordedRequest, RecordedRequest]:
        client = default_factory(True, KEY, server.url)
        async with client:
            await client.post(
                url_of(server),
                content=BODY,
                cast_to=http_response_class(),
                options={"timeout": TIMEOUT},
            )
            by_post = last(server)
            poster = _direct.direct_post(load_sdk(), client, url_of(server))
            assert poster is not None
            answer = await poster.asend(BODY, TIMEOUT)
            assert answer.status_code == 200
            return by_post, last(server)

    by_post, direct = asyncio.run(both())
    assert direct.raw == by_post.raw
    assert direct.headers == by_post.headers
    assert direct.headers["x-stainless-async"] == "async:asyncio"


def test_every_body_gets_its_own_content_length(server: FakeAnthropicServer) -> None:
    client = default_factory(False, KEY, server.url)
    with client:
        for body in (b"{}", BODY, BODY + b" " * 1000):
            via_direct(client, url_of(server), body)
            assert last(server).raw == body
            assert last(server).headers["content-length"] == str(len(body))


# --- the same errors -----------------------------------------------------------------------------


def caught(send: Callable[[], Any]) -> Any:
    with pytest.raises(load_sdk().AnthropicError) as info:
        send()
    return info.value


@pytest.mark.parametrize("status", [400, 401, 403, 404, 413, 429, 500, 529])
def test_an_error_status_is_the_sdk_error_post_raises(
    server: FakeAnthropicServer, status: int
) -> None:
    client = default_factory(False, KEY, server.url)
    with client:
        server.fail(status, headers={"retry-after": "3"})
        by_post = caught(lambda: via_post(client, url_of(server)))
        server.fail(status, headers={"retry-after": "3"})
        direct = caught(lambda: via_direct(client, url_of(server)))
    assert type(direct) is type(by_post)
    assert isinstance(direct, load_sdk().APIStatusError)
    assert isinstance(by_post, load_sdk().APIStatusError)
    assert direct.status_code == by_post.status_code == status
    assert direct.body == by_post.body
    assert direct.response.headers["retry-after"] == "3"
    # The same message, but for the request id some SDK releases put in it (each request has its
    # own).
    assert _without_id(direct) == _without_id(by_post)


def _without_id(err: Any) -> str:
    request_id = getattr(err, "request_id", None)
    return str(err).replace(request_id, "<id>") if request_id else str(err)


def test_async_error_status_is_the_sdk_error(server: FakeAnthropicServer) -> None:
    async def send() -> Any:
        client = default_factory(True, KEY, server.url)
        async with client:
            server.fail(529)
            poster = _direct.direct_post(load_sdk(), client, url_of(server))
            assert poster is not None
            with pytest.raises(load_sdk().AnthropicError) as info:
                await poster.asend(BODY, TIMEOUT)
            return info.value

    err = asyncio.run(send())
    assert isinstance(err, load_sdk().APIStatusError)
    assert err.status_code == 529
    assert err.status_code == 529


def test_a_timeout_is_the_sdks_timeout_error(server: FakeAnthropicServer) -> None:
    client = default_factory(False, KEY, server.url)
    with client:
        server.delay(1.0)
        err = caught(lambda: via_direct(client, url_of(server), timeout=0.2))
    assert isinstance(err, load_sdk().APITimeoutError)
    assert err.__cause__ is not None


def test_no_answer_is_the_sdks_connection_error(server: FakeAnthropicServer) -> None:
    base = f"http://127.0.0.1:{closed_port()}"
    nobody = default_factory(False, KEY, base)
    with nobody:
        refused = caught(lambda: via_direct(nobody, base + "/v1/messages"))
    client = default_factory(False, KEY, server.url)
    with client:
        server.reset_connection()
        reset = caught(lambda: via_direct(client, url_of(server)))

    for err in (refused, reset):
        assert isinstance(err, load_sdk().APIConnectionError)
        assert not isinstance(err, load_sdk().APITimeoutError)
        assert KEY not in str(err)
        assert KEY not in repr(err)


def test_async_timeout_and_refusal_are_the_sdks_errors(server: FakeAnthropicServer) -> None:
    base = f"http://127.0.0.1:{closed_port()}"

    async def both() -> list[Any]:
        errors: list[Any] = []
        for endpoint, timeout in ((server.url, 0.2), (base, TIMEOUT)):
            client = default_factory(True, KEY, endpoint)
            async with client:
                poster = _direct.direct_post(load_sdk(), client, endpoint + "/v1/messages")
                assert poster is not None
                with pytest.raises(load_sdk().AnthropicError) as info:
                    await poster.asend(BODY, timeout)
                errors.append(info.value)
        return errors

    server.delay(1.0)
    timed_out, refused = asyncio.run(both())
    assert isinstance(timed_out, load_sdk().APITimeoutError)
    # A refused connection is a connection error; whether the SDK calls it a timeout too (its
    # aiohttp backend did before 2.1) is the SDK's own wording, not asserted here.
    assert isinstance(refused, load_sdk().APIConnectionError)


# --- post wherever the direct send would not be exactly that -----------------------------------


def test_a_subclass_or_wrapper_goes_through_post() -> None:
    sdk = load_sdk()

    class Custom(sdk.Anthropic):  # type: ignore[misc,name-defined]
        pass

    custom = Custom(api_key=KEY, base_url="http://127.0.0.1:9", max_retries=0)
    assert _direct.direct_post(sdk, custom, "http://127.0.0.1:9/v1/messages") is None

    class Wrapper:
        __slots__ = ()

    assert _direct.direct_post(sdk, Wrapper(), "http://127.0.0.1:9/v1/messages") is None


def test_middleware_goes_through_post(server: FakeAnthropicServer) -> None:
    client = default_factory(False, KEY, server.url)
    if not hasattr(client, "with_middleware"):
        pytest.skip("this SDK has no middleware")
    seen: list[str] = []

    def note(request: Any, call_next: Any) -> Any:
        seen.append("called")
        return call_next(request)

    from scriptorium.llm.anthropic import post_messages

    with client, client.with_middleware(note) as wrapped:
        assert _direct.direct_post(load_sdk(), wrapped, url_of(server)) is None
        # The adapter's send on that client runs the middleware (through post).
        body = {"model": "claude-haiku-4-5", "max_tokens": 8}
        content, _ = post_messages(wrapped, body, TIMEOUT)
    assert b'"ok"' in content
    assert seen == ["called"]


def test_cookies_from_a_server_send_through_post(server: FakeAnthropicServer) -> None:
    client = default_factory(False, KEY, server.url)
    with client:
        assert _direct.direct_post(load_sdk(), client, url_of(server)) is not None
        client._client.cookies.set("session", "abc", domain="127.0.0.1")
        assert _direct.direct_post(load_sdk(), client, url_of(server)) is None
        client._client.cookies.clear()
        assert _direct.direct_post(load_sdk(), client, url_of(server)) is not None


def test_the_sdks_debug_logging_sends_through_post(server: FakeAnthropicServer) -> None:
    """``ANTHROPIC_LOG=debug`` shows every request the SDK sends: while it is on, all go there."""
    import logging

    sdk_log = logging.getLogger(f"{load_sdk().__name__}._base_client")
    client = default_factory(False, KEY, server.url)
    before = sdk_log.level
    with client:
        assert _direct.direct_post(load_sdk(), client, url_of(server)) is not None
        sdk_log.setLevel(logging.DEBUG)
        try:
            assert _direct.direct_post(load_sdk(), client, url_of(server)) is None
        finally:
            sdk_log.setLevel(before)
        assert _direct.direct_post(load_sdk(), client, url_of(server)) is not None


def test_another_url_on_the_same_client_goes_through_post(server: FakeAnthropicServer) -> None:
    client = default_factory(False, KEY, server.url)
    with client:
        assert _direct.direct_post(load_sdk(), client, url_of(server)) is not None
        other = server.url + "/v1/messages/count_tokens"
        assert _direct.direct_post(load_sdk(), client, other) is None


def test_an_sdk_it_cannot_read_falls_back_to_post_for_good(
    server: FakeAnthropicServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An SDK whose internals differ: the template cannot be built, the adapter still answers."""

    def unreadable(self: _direct.DirectPost) -> Any:
        raise AttributeError("no such internal")

    monkeypatch.setattr(_direct.DirectPost, "_template", unreadable)
    adapter = AnthropicClient()
    request = LLMRequest(
        target=Target(provider="anthropic", model="claude-haiku-4-5", endpoint=server.url),
        api_key=KEY,
        messages=(Message(role="user", content="Hi"),),
    )
    with adapter:
        assert adapter.generate(request).text == "ok"
        assert adapter.generate(request).text == "ok"
        sdk_client = adapter.clients.sync(server.url, KEY)
        assert getattr(sdk_client, _direct._ATTR) is False
    assert len(server.requests) == 2


def test_a_hook_that_suspends_is_refused() -> None:
    async def suspends() -> int:
        await asyncio.sleep(0)
        return 1

    async def finishes() -> int:
        return 2

    with pytest.raises(RuntimeError):
        _direct._settled(suspends())
    assert _direct._settled(finishes()) == 2
    assert _direct._settled(3) == 3


def test_async_adapter_runs_go_direct(server: FakeAnthropicServer) -> None:
    request = LLMRequest(
        target=Target(provider="anthropic", model="claude-haiku-4-5", endpoint=server.url),
        api_key=KEY,
        messages=(Message(role="user", content="Hi"),),
    )
    adapter = AnthropicClient()

    async def twice() -> list[str]:
        async with adapter:
            texts = [(await adapter.agenerate(request)).text for _ in range(2)]
            sdk_client = await adapter.clients.async_(server.url, KEY)
            assert isinstance(getattr(sdk_client, _direct._ATTR), _direct.DirectPost)
            return texts

    assert asyncio.run(twice()) == ["ok", "ok"]


def test_a_client_and_its_poster_are_freed_together(server: FakeAnthropicServer) -> None:
    """One async SDK client per event loop: nothing may keep the old ones alive."""
    import gc
    import weakref

    seen: list[weakref.ref[Any]] = []

    async def once() -> None:
        client = default_factory(True, KEY, server.url)
        async with client:
            poster = _direct.direct_post(load_sdk(), client, url_of(server))
            assert poster is not None
            await poster.asend(BODY, TIMEOUT)
        seen.append(weakref.ref(client))

    for _ in range(3):
        asyncio.run(once())
    gc.collect()
    assert [ref() for ref in seen] == [None, None, None]


def test_threads_sharing_a_new_client_all_send_direct(server: FakeAnthropicServer) -> None:
    """The local executor's threads share one SDK client: the first requests race to build the
    template, and every one of them still sends the request ``post`` would."""
    import threading

    client = default_factory(False, KEY, server.url)
    start = threading.Barrier(12)
    failures: list[BaseException] = []

    def one() -> None:
        start.wait()
        try:
            via_direct(client, url_of(server))
        except BaseException as err:  # collected, asserted below
            failures.append(err)

    with client:
        threads = [threading.Thread(target=one) for _ in range(12)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    assert failures == []
    sent = server.requests[-12:]
    assert len(sent) == 12
    assert {r.raw for r in sent} == {BODY}
    assert len({tuple(sorted(r.headers.items())) for r in sent}) == 1


STREAM_BODY = BODY[:-1] + b',"stream":true}'


def test_a_stream_opened_direct_sends_what_a_streamed_post_sends(
    server: FakeAnthropicServer,
) -> None:
    """The streamed request goes direct too: same bytes and headers as ``post(stream=True)``,
    the response handed over unread."""
    client = default_factory(False, KEY, server.url)
    sdk = load_sdk()
    with client:
        streamed = client.post(
            url_of(server),
            content=STREAM_BODY,
            cast_to=sdk.types.Message,
            options={"timeout": TIMEOUT},
            stream=True,
            stream_cls=sdk.Stream[sdk.types.RawMessageStreamEvent],
        )
        streamed.response.read()
        by_post = last(server)
        poster = _direct.direct_post(sdk, client, url_of(server))
        assert poster is not None
        response = poster.open(STREAM_BODY, TIMEOUT)
        assert not response.is_closed
        body = response.read()
        direct = last(server)
    assert direct.raw == by_post.raw == STREAM_BODY
    assert direct.headers == by_post.headers
    assert b"message_stop" in body


def test_a_stream_opened_direct_raises_the_sdk_error_of_a_status(
    server: FakeAnthropicServer,
) -> None:
    client = default_factory(False, KEY, server.url)
    sdk = load_sdk()
    with client:
        server.fail(429)
        poster = _direct.direct_post(sdk, client, url_of(server))
        assert poster is not None
        with pytest.raises(sdk.RateLimitError):
            poster.open(STREAM_BODY, TIMEOUT)

        async def opened() -> None:
            aclient = default_factory(True, KEY, server.url)
            async with aclient:
                server.fail(529)
                aposter = _direct.direct_post(sdk, aclient, url_of(server))
                assert aposter is not None
                with pytest.raises(sdk.APIStatusError) as caught:
                    await aposter.aopen(STREAM_BODY, TIMEOUT)
                assert caught.value.status_code == 529
                good = await aposter.aopen(STREAM_BODY, TIMEOUT)
                assert b"message_stop" in await good.aread()

        asyncio.run(opened())
