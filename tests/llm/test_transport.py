"""The pooled transport under the real SDKs, against the loopback fakes: keep-alive reuse, a server
that closes idle connections, a reset in the middle of a response, a stall past the timeout,
cancellation, many in flight, keep-alive expiry, both SDKs, sync and async."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import anthropic
import openai
import pytest

from scriptorium._testing.http import RESET, Answer
from scriptorium.llm.sdk_http import http_module
from scriptorium.llm.transport import pooled_http_client, transport_classes
from scriptorium.testing import FakeAnthropicServer, FakeOpenAIServer

KEY = "sk-ant-transport-test-0000"
ASK: dict[str, Any] = {
    "model": "claude-test",
    "max_tokens": 16,
    "messages": [{"role": "user", "content": "hi"}],
}


def _sync(server: FakeAnthropicServer, **pool: Any) -> tuple[Any, Any]:
    sync_class, _ = transport_classes(http_module(anthropic))
    transport = sync_class(**pool)
    http = anthropic.DefaultHttpxClient(transport=transport)
    client = anthropic.Anthropic(
        api_key=KEY, base_url=server.base_url, max_retries=0, http_client=http
    )
    return client, transport


def _async(server: FakeAnthropicServer, **pool: Any) -> tuple[Any, Any]:
    _, async_class = transport_classes(http_module(anthropic))
    transport = async_class(**pool)
    http = anthropic.DefaultAsyncHttpxClient(transport=transport)
    client = anthropic.AsyncAnthropic(
        api_key=KEY, base_url=server.base_url, max_retries=0, http_client=http
    )
    return client, transport


def _text(message: Any) -> str:
    return str(message.content[0].text)


def test_sequential_calls_reuse_one_connection_and_streams_read_whole() -> None:
    with FakeAnthropicServer() as server:
        client, transport = _sync(server)
        assert [_text(client.messages.create(**ASK)) for _ in range(5)] == ["ok"] * 5
        with client.messages.stream(**ASK) as stream:
            assert stream.get_final_text() == "ok"
        assert transport.opened == 1
        assert transport.idle == 1
        client.close()
        assert transport.idle == 0


def test_a_connection_the_server_closed_while_idle_is_dropped_not_failed() -> None:
    with FakeAnthropicServer() as server:
        client, transport = _sync(server)
        assert _text(client.messages.create(**ASK)) == "ok"
        assert server.close_connections() == 1
        time.sleep(0.05)  # the FIN reaches the idle socket
        assert _text(client.messages.create(**ASK)) == "ok"
        assert transport.opened == 2
        client.close()


def test_async_a_connection_the_server_closed_while_idle_is_dropped_not_failed() -> None:
    with FakeAnthropicServer() as server:

        async def main() -> None:
            client, transport = _async(server)
            assert _text(await client.messages.create(**ASK)) == "ok"
            assert server.close_connections() == 1
            await asyncio.sleep(0.05)
            assert _text(await client.messages.create(**ASK)) == "ok"
            assert transport.opened == 2
            await client.close()

        asyncio.run(main())


def test_a_reset_in_the_middle_of_a_response_is_a_connection_error_and_not_reused() -> None:
    with FakeAnthropicServer() as server:
        client, transport = _sync(server)
        server.push(lambda _req: Answer(parts=((0.0, b'{"id": "msg_'), (0.05, RESET))))
        with pytest.raises(anthropic.APIConnectionError) as caught:
            client.messages.create(**ASK)
        assert not isinstance(caught.value, anthropic.APITimeoutError)
        assert transport.idle == 0
        assert _text(client.messages.create(**ASK)) == "ok"
        assert transport.opened == 2
        client.close()


def test_async_a_reset_in_the_middle_of_a_stream_is_a_transport_error() -> None:
    with FakeAnthropicServer() as server:
        server.reset_midstream()

        async def main() -> None:
            client, transport = _async(server)
            # The SDK leaves a body read's failure as the HTTP library's own error.
            with pytest.raises(http_module(anthropic).TransportError):
                async with client.messages.stream(**ASK) as stream:
                    await stream.get_final_text()
            assert transport.idle == 0
            assert _text(await client.messages.create(**ASK)) == "ok"
            await client.close()

        asyncio.run(main())


def test_a_stall_past_the_timeout_times_out_per_attempt_and_the_connection_is_dropped() -> None:
    with FakeAnthropicServer() as server:
        client, transport = _sync(server)
        server.delay(3.0)
        started = time.monotonic()
        with pytest.raises(anthropic.APITimeoutError):
            client.messages.create(**ASK, timeout=0.3)
        assert time.monotonic() - started < 2.5
        assert transport.idle == 0
        assert _text(client.messages.create(**ASK)) == "ok"
        assert transport.opened == 2
        client.close()


def test_async_a_stall_past_the_timeout_times_out() -> None:
    with FakeAnthropicServer() as server:
        server.delay(3.0)

        async def main() -> None:
            client, transport = _async(server)
            with pytest.raises(anthropic.APITimeoutError):
                await client.messages.create(**ASK, timeout=0.3)
            assert transport.idle == 0
            assert _text(await client.messages.create(**ASK)) == "ok"
            await client.close()

        asyncio.run(main())


def test_a_cancelled_request_closes_its_connection() -> None:
    with FakeAnthropicServer() as server:
        server.delay(2.0)

        async def main() -> None:
            client, transport = _async(server)
            task = asyncio.ensure_future(client.messages.create(**ASK))
            await asyncio.sleep(0.2)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert transport.idle == 0
            assert _text(await client.messages.create(**ASK)) == "ok"
            assert transport.opened == 2
            await client.close()

        asyncio.run(main())


def test_a_stream_closed_at_its_last_event_keeps_its_connection() -> None:
    """A stream's reader stops at the last event and closes; the chunked terminator already
    there is read on close, so the connection goes back to the pool (sync and async)."""
    with FakeAnthropicServer() as server:
        client, transport = _sync(server)
        for _ in range(3):
            with client.messages.with_streaming_response.create(**ASK, stream=True) as response:
                for line in response.iter_lines():
                    if "message_stop" in line:
                        break
        assert transport.opened == 1
        client.close()

        async def main() -> None:
            aclient, atransport = _async(server)
            for _ in range(3):
                async with aclient.messages.with_streaming_response.create(
                    **ASK, stream=True
                ) as response:
                    async for line in response.iter_lines():
                        if "message_stop" in line:
                            break
            assert atransport.opened == 1
            await aclient.close()

        asyncio.run(main())


def test_a_stream_left_half_read_closes_its_connection() -> None:
    with FakeAnthropicServer() as server:
        client, transport = _sync(server)
        server.push(
            lambda _req: Answer(
                content_type="text/event-stream",
                parts=((0.0, b"event: ping\ndata: {}\n\n"), (1.0, b"event: ping\ndata: {}\n\n")),
            )
        )
        with client.messages.with_streaming_response.create(**ASK, stream=True) as response:
            next(response.iter_bytes())
        assert transport.idle == 0
        assert _text(client.messages.create(**ASK)) == "ok"
        assert transport.opened == 2
        client.close()


def test_two_hundred_in_flight_then_kept_within_the_keep_alive_limit() -> None:
    with FakeAnthropicServer(latency_s=0.05) as server:

        async def main() -> None:
            client, transport = _async(server, max_keepalive=50)
            answers = await asyncio.gather(*(client.messages.create(**ASK) for _ in range(200)))
            assert [_text(a) for a in answers] == ["ok"] * 200
            assert transport.opened <= 200
            assert transport.idle <= 50
            again = await asyncio.gather(*(client.messages.create(**ASK) for _ in range(50)))
            assert len(again) == 50
            await client.close()
            assert transport.idle == 0

        asyncio.run(main())


def test_threads_share_the_sync_pool() -> None:
    with FakeAnthropicServer(latency_s=0.02) as server:
        client, transport = _sync(server)
        texts: list[str] = []
        lock = threading.Lock()

        def work() -> None:
            for _ in range(5):
                text = _text(client.messages.create(**ASK))
                with lock:
                    texts.append(text)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert texts == ["ok"] * 40
        assert transport.opened <= 8
        client.close()


def test_idle_connections_past_the_keep_alive_expiry_are_not_reused() -> None:
    with FakeAnthropicServer() as server:
        client, transport = _sync(server, keepalive_expiry=0.05)
        client.messages.create(**ASK)
        time.sleep(0.1)
        client.messages.create(**ASK)
        assert transport.opened == 2
        client.close()


def test_the_openai_sdk_over_the_pool_sync_and_async() -> None:
    with FakeOpenAIServer() as server:
        http = pooled_http_client(openai, False)
        client = openai.OpenAI(
            api_key="sk-test-0000000000", base_url=server.url, max_retries=0, http_client=http
        )
        ask: dict[str, Any] = {
            "model": "gpt-test",
            "messages": [{"role": "user", "content": "hi"}],
        }
        first = client.chat.completions.create(**ask)
        assert first.choices[0].message.content is not None
        client.close()

        async def main() -> None:
            aclient = openai.AsyncOpenAI(
                api_key="sk-test-0000000000",
                base_url=server.url,
                max_retries=0,
                http_client=pooled_http_client(openai, True),
            )
            answers = await asyncio.gather(
                *(aclient.chat.completions.create(**ask) for _ in range(10))
            )
            assert len(answers) == 10
            await aclient.close()

        asyncio.run(main())


def test_no_pooled_client_when_the_environment_names_a_proxy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    assert pooled_http_client(anthropic, False) is None
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.delenv("https_proxy", raising=False)
    assert pooled_http_client(anthropic, False) is not None


def test_a_streamed_request_body_is_sent_chunk_by_chunk_and_arrives_whole() -> None:
    """The media splicer hands the transport a body in chunks; they go out as they come (not
    joined first) and the server reads exactly the body, sync and async."""
    http = http_module(anthropic)
    parts = [b'{"model": "claude-test", ', b'"max_tokens": 16, ', b'"messages": []}']
    length = str(sum(len(p) for p in parts))

    class Chunks(http.SyncByteStream, http.AsyncByteStream):  # type: ignore[misc,name-defined]  # the SDK library, known at run time
        def __iter__(self) -> Any:
            yield from parts

        async def __aiter__(self) -> Any:
            for part in parts:
                yield part

    with FakeAnthropicServer() as server:
        sync_class, async_class = transport_classes(http)
        url = server.base_url + "/v1/messages"
        headers = {"content-length": length, "content-type": "application/json"}
        with http.Client(transport=sync_class()) as client:
            request = client.build_request("POST", url, headers=headers)
            request.stream = Chunks()
            assert client.send(request).status_code == 200
        assert server.requests[-1].raw == b"".join(parts)

        async def main() -> None:
            async with http.AsyncClient(transport=async_class()) as aclient:
                arequest = aclient.build_request("POST", url, headers=headers)
                arequest.stream = Chunks()
                assert (await aclient.send(arequest)).status_code == 200

        asyncio.run(main())
        assert server.requests[-1].raw == b"".join(parts)


def test_past_the_keep_alive_limit_the_oldest_idle_connection_of_any_origin_goes() -> None:
    """Two servers, one idle connection allowed: the second answer's connection stays, the
    first's is closed, so a third call to the first server opens a new one."""
    sync_class, _ = transport_classes(http_module(anthropic))
    transport = sync_class(max_keepalive=1)
    with (
        FakeAnthropicServer() as first,
        FakeAnthropicServer() as second,
        anthropic.DefaultHttpxClient(transport=transport) as http,
    ):
        clients = [
            anthropic.Anthropic(
                api_key=KEY, base_url=server.base_url, max_retries=0, http_client=http
            )
            for server in (first, second)
        ]
        clients[0].messages.create(**ASK)
        clients[1].messages.create(**ASK)
        assert (transport.opened, transport.idle) == (2, 1)
        clients[0].messages.create(**ASK)
        assert (transport.opened, transport.idle) == (3, 1)
        clients[1].messages.create(**ASK)
        assert transport.opened == 4  # the second server's connection went in its turn
