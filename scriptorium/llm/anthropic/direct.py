"""Posting prebuilt JSON bytes through an SDK client's own HTTP client, with the request's headers
worked out once per client instead of on every call.

The SDK's lower-level ``post`` still rebuilds everything per request: it copies its options
model, merges the default, platform and auth headers into a fresh header set, joins the path onto
the base URL, lets its HTTP client merge those again with its own defaults and cookies, and wraps
the answer. For one client, one URL and one timeout every one of those steps gives the same
result each time. :class:`DirectPost` asks the SDK for that result once (its own
``_build_request`` on the same options ``post`` would make) and then, per call, builds only the
HTTP request around the new body and hands it to the SDK's HTTP client, the way the SDK does:

- same headers (auth, version, platform, ``x-stainless-*``), URL, timeout and redirect rules,
  and the HTTP client's own request hooks (the media splicer) and connection pool;
- same errors: a timeout becomes the SDK's ``APITimeoutError``, any other failure to get an
  answer its ``APIConnectionError``, an error status the ``APIStatusError`` subclass the SDK's
  own ``_make_status_error_from_response`` picks.

It is used only where that is exactly what ``post`` would do: the SDK's own client class (not a
wrapper or subclass from an ``sdk_factory``), no custom auth (which may sign each request), no
SDK middleware, no per-request idempotency header, no request hook overridden, no cookies on the
HTTP client (those change between requests), and the SDK's request logging off (its DEBUG lines
describe each request it sends; someone reading them should see every request). The SDK's own
tracing opens spans only for requests its typed methods made, so a raw ``post`` has none to
skip. Anything else, or an SDK whose internals differ from what is checked here, takes ``post``
(:func:`direct_post` returns None).
"""

from __future__ import annotations

import importlib
import inspect
import logging
import threading
from typing import Any

from scriptorium.llm.sdk_http import http_module

__all__ = ["DirectPost", "direct_post"]

log = logging.getLogger("scriptorium.llm")

# Where an SDK client keeps its DirectPost, or False when it must go through ``post``. On the
# client itself, so the two live and die together (a registry keyed by client would keep every
# client alive through its poster, one per event loop that ever ran one).
_ATTR = "_scriptorium_direct"
_lock = threading.Lock()

# The headers that carry the request's timeout (the retry loop gives each attempt what is left of
# the run's budget, so it differs on every call), and those the HTTP client sets per request.
_TIMEOUT_HEADERS = ("x-stainless-timeout", "x-stainless-read-timeout")
_PER_REQUEST = frozenset({*_TIMEOUT_HEADERS, "content-length"})
# Two timeouts to build the template with, to see which headers follow the timeout.
_ONE, _OTHER = 600.0, 7.25


class DirectPost:
    """One SDK client's POSTs of JSON bytes to one absolute URL (see the module)."""

    __slots__ = (
        "_client",
        "_http",
        "_options",
        "_request",
        "_sdk",
        "_sdk_log",
        "_status_error",
        "_template_parts",
        "_timeout_error",
        "url",
    )

    def __init__(self, sdk: Any, client: Any, url: str) -> None:
        self._sdk = sdk
        self._client = client
        self._http = client._client
        self.url = url
        base = importlib.import_module(f"{sdk.__name__}._base_client")
        http = http_module(sdk)
        self._request = http.Request
        self._timeout_error = http.TimeoutException
        self._status_error = client._make_status_error_from_response
        self._options = base.FinalRequestOptions
        # The SDK logs each request it sends at DEBUG (``ANTHROPIC_LOG=debug``): while that is on,
        # requests go through ``post`` so what someone debugging reads is complete.
        self._sdk_log = logging.getLogger(base.__name__)
        # What ``post`` sends besides the body (headers, and the URL parsed), built on first
        # use; None until then. One attribute, set at once: threads share a poster.
        self._template_parts: tuple[Any, Any] | None = None

    def ready(self) -> bool:
        """Whether requests can go direct: the header template is built on first use, and False
        for good if the SDK does not build requests the way this module expects."""
        if self._template_parts is not None:
            return True
        try:
            self._template_parts = self._template()
        except Exception as err:
            log.debug("sending through the SDK's post: %s", type(err).__name__)
            setattr(self._client, _ATTR, False)
            return False
        return True

    def _built(self, timeout_s: float) -> Any:
        client = self._client
        options = self._options.construct(
            method="post", url=self.url, content=b"", timeout=timeout_s
        )
        # The async client's hook is a coroutine; the SDK's own does not suspend.
        options = _settled(client._prepare_options(options))
        return client._build_request(options, retries_taken=0)

    def _template(self) -> tuple[Any, Any]:
        """The headers ``post`` sends, which must differ between two timeouts only in the two
        that name it, with the timeout applied to every phase (what :meth:`build` recreates)."""
        one, other = self._built(_ONE), self._built(_OTHER)
        for built, timeout_s in ((one, _ONE), (other, _OTHER)):
            if built.extensions != _extensions(timeout_s):
                raise ValueError("the SDK sets other request extensions")
            for name in _TIMEOUT_HEADERS:
                if built.headers.get(name) != str(timeout_s):
                    raise ValueError(f"the SDK sends {name} otherwise")
        rest = [item for item in one.headers.multi_items() if item[0] not in _PER_REQUEST]
        if rest != [item for item in other.headers.multi_items() if item[0] not in _PER_REQUEST]:
            raise ValueError("the SDK's headers depend on more than the timeout")
        headers = one.headers.copy()
        del headers["content-length"]  # set again from each body
        return headers, one.url

    def build(self, body: bytes, timeout_s: float) -> Any:
        """The HTTP request ``post`` would send for ``body`` (after :meth:`ready`)."""
        parts = self._template_parts
        assert parts is not None, "ready() first"
        headers, url = parts
        request = self._request(
            "POST", url, headers=headers, content=body, extensions=_extensions(timeout_s)
        )
        shown = str(timeout_s)
        for name in _TIMEOUT_HEADERS:
            request.headers[name] = shown
        return request

    def send(self, body: bytes, timeout_s: float) -> Any:
        """Send ``body``; the response of a 2xx, else the SDK's error (see the module)."""
        request = self.build(body, timeout_s)
        try:
            response = self._http.send(request)
        except Exception as err:
            raise self._failed(err, request) from err
        if not response.is_success:
            if not response.is_closed:
                response.read()
            raise self._status_error(response) from None
        return response

    def open(self, body: bytes, timeout_s: float) -> Any:
        """Send ``body`` (a ``stream: true`` request) and return the response unread, as
        ``post(..., stream=True)`` hands it over; an error status is read and raised as the
        SDK's error, as there."""
        request = self.build(body, timeout_s)
        try:
            response = self._http.send(request, stream=True)
        except Exception as err:
            raise self._failed(err, request) from err
        if not response.is_success:
            try:
                response.read()
            finally:
                response.close()
            raise self._status_error(response) from None
        return response

    async def aopen(self, body: bytes, timeout_s: float) -> Any:
        """The async twin of :meth:`open`."""
        request = self.build(body, timeout_s)
        try:
            response = await self._http.send(request, stream=True)
        except Exception as err:
            raise self._failed(err, request) from err
        if not response.is_success:
            try:
                await response.aread()
            finally:
                await response.aclose()
            raise self._status_error(response) from None
        return response

    async def asend(self, body: bytes, timeout_s: float) -> Any:
        """The async twin of :meth:`send` (the client's HTTP client is an async one)."""
        request = self.build(body, timeout_s)
        try:
            response = await self._http.send(request)
        except Exception as err:
            raise self._failed(err, request) from err
        if not response.is_success:
            if not response.is_closed:
                await response.aread()
            raise self._status_error(response) from None
        return response

    def _failed(self, err: Exception, request: Any) -> Exception:
        sdk = self._sdk
        sdk_error: bool = isinstance(err, sdk.AnthropicError)
        if sdk_error:  # raised by a request hook: already the SDK's
            return err
        if isinstance(err, self._timeout_error):
            return sdk.APITimeoutError(request=request)  # type: ignore[no-any-return]
        return sdk.APIConnectionError(request=request)  # type: ignore[no-any-return]


def _extensions(timeout_s: float) -> dict[str, Any]:
    """The request extensions of a ``post`` with this timeout: the same for every phase."""
    return {
        "timeout": {"connect": timeout_s, "read": timeout_s, "write": timeout_s, "pool": timeout_s}
    }


def _settled(value: Any) -> Any:
    """``value``, or the result of a coroutine that finishes without suspending."""
    if not inspect.iscoroutine(value):
        return value
    try:
        value.send(None)
    except StopIteration as done:
        return done.value
    value.close()
    raise RuntimeError("the SDK's request hook suspends")


def _fits(sdk: Any, client: Any) -> bool:
    """Whether ``post`` on ``client`` does nothing per request that :class:`DirectPost` skips."""
    if type(client) not in (sdk.Anthropic, sdk.AsyncAnthropic):
        return False
    base = importlib.import_module(f"{sdk.__name__}._base_client")
    parent = base.AsyncAPIClient if type(client) is sdk.AsyncAnthropic else base.SyncAPIClient
    return (
        client.custom_auth is None
        and getattr(client, "_idempotency_header", None) is None
        and not getattr(client, "_middleware", ())
        and type(client)._prepare_request is parent._prepare_request
        and hasattr(client, "_make_status_error_from_response")
        and hasattr(client, "_build_request")
        and hasattr(base, "FinalRequestOptions")
    )


def direct_post(sdk: Any, client: Any, url: str) -> DirectPost | None:
    """``client``'s :class:`DirectPost` for ``url``, or None when this request must go through
    the SDK's ``post`` (see the module)."""
    poster = getattr(client, _ATTR, None)
    if poster is None:
        with _lock:
            poster = getattr(client, _ATTR, None)
            if poster is None:
                poster = _make(sdk, client, url)
                try:
                    setattr(client, _ATTR, poster)
                except AttributeError:  # no room for it: not the SDK's own client
                    return None
    if isinstance(poster, bool) or poster.url != url or poster._http.cookies:
        return None
    if poster._sdk_log.isEnabledFor(logging.DEBUG):
        return None
    return poster if poster.ready() else None


def _make(sdk: Any, client: Any, url: str) -> DirectPost | bool:
    try:
        return DirectPost(sdk, client, url) if _fits(sdk, client) else False
    except Exception as err:  # an SDK whose internals differ: its post is always right
        log.debug("sending through the SDK's post: %s", type(err).__name__)
        return False
