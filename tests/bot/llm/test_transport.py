"""The model call's transport (aiohttp under the openai SDK) against real sockets on loopback:
each way a connection can fail reads as what it is; HTTP_PROXY and NO_PROXY are still obeyed;
a base URL's credentials are still sent as Basic authentication."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Callable

import aiohttp
import httpx2
import openai
import pytest

from bot.config.schema import LLMConfig
from bot.llm.client import OpenAIChatModel
from bot.llm.errors import LLMError
from bot.llm.sdk_errors import classify
from tests.fakes.llm_server import FakeLLM, Reply, caller, text
from tests.fakes.redis_server import free_port

MakeModel = Callable[..., OpenAIChatModel]
HI = [{"role": "user", "content": "hi"}]


async def fails_with(model: OpenAIChatModel) -> LLMError:
    try:
        with pytest.raises(LLMError) as caught:
            await model.complete(HI, [])
    finally:
        await model.aclose()
    return caught.value


def model_at(port: int) -> OpenAIChatModel:
    config = LLMConfig(model="m", max_retries=0, timeout_s=5)
    return OpenAIChatModel(config, api_key="k", base_url=f"http://127.0.0.1:{port}/v1")


async def test_the_model_is_called_over_aiohttp(make_model: MakeModel) -> None:
    # The transport is a measured choice (docs/benchmarks.md): half the CPU per call.
    assert isinstance(make_model().client._client, openai.DefaultAioHttpClient)


async def test_a_base_url_with_credentials_signs_in_with_them(fake_llm: FakeLLM) -> None:
    """As httpx does: Basic authentication from the URL's ``user:password@`` (in place of
    the API key's bearer), and no credentials in the request line."""
    authorizations: list[str] = []

    def reply(_: object) -> Reply:
        authorizations.append(caller.get())
        return text("signed in")

    fake_llm.otherwise = reply
    config = LLMConfig(model="m", max_retries=0)
    url = fake_llm.base_url.replace("http://", "http://model-user:pass%20word@")
    model = OpenAIChatModel(config, api_key="k", base_url=url)
    try:
        assert (await model.complete(HI, [])).text == "signed in"
    finally:
        await model.aclose()
    assert authorizations == ["Basic " + base64.b64encode(b"model-user:pass word").decode()]


async def test_a_refused_connection_is_unreachable_not_slow() -> None:
    error = await fails_with(model_at(free_port()))
    assert error.kind == "unreachable"
    assert "ClientConnectorError" in str(error)
    assert error.user_message.startswith("The model service is not answering")


async def test_a_server_that_hangs_up_is_unreachable() -> None:
    async def hang_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.close()

    server = await asyncio.start_server(hang_up, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    async with server:
        error = await fails_with(model_at(port))
    assert error.kind == "unreachable"
    assert "ServerDisconnectedError" in str(error)


async def test_a_server_slower_than_the_timeout_is_a_timeout(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("late", delay_s=3))
    error = await fails_with(make_model(max_retries=0, timeout_s=0.5))
    assert error.kind == "timeout"
    assert error.user_message.startswith("The model service took too long")


async def test_a_stream_that_stalls_mid_answer_is_a_timeout(
    fake_llm: FakeLLM, make_model: MakeModel
) -> None:
    fake_llm.add(text("an answer that stalls", chunk_delay_s=2))  # after its first chunk
    error = await fails_with(make_model(max_retries=0, timeout_s=0.5))
    assert error.kind == "timeout"


@pytest.mark.parametrize(
    ("under", "kind"),
    [
        (aiohttp.ServerDisconnectedError(), "unreachable"),
        (aiohttp.ClientOSError(104, "Connection reset by peer"), "unreachable"),
        (aiohttp.ConnectionTimeoutError("connect timed out"), "timeout"),
        (aiohttp.SocketTimeoutError("read timed out"), "timeout"),
        (None, "timeout"),
    ],
)
def test_a_timeout_is_read_by_what_lies_under_it(under: Exception | None, kind: str) -> None:
    """The aiohttp transport reports every connection failure as an httpx ConnectTimeout,
    which the SDK turns into its APITimeoutError."""
    request = httpx2.Request("POST", "http://model.test/v1/chat/completions")
    transport_error = httpx2.ConnectTimeout("mapped by the transport")
    transport_error.__cause__ = under
    sdk_error = openai.APITimeoutError(request=request)
    sdk_error.__cause__ = transport_error
    assert classify(sdk_error).kind == kind
    assert classify(transport_error).kind == kind  # mid-stream: the SDK does not wrap it


class ForwardProxy:
    """An HTTP forward proxy on loopback: notes each request's target, then pipes the bytes
    to the origin it names."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self.server: asyncio.Server | None = None

    async def start(self) -> str:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def stop(self) -> None:
        if self.server is not None:
            self.server.close()
            await self.server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        line = await reader.readline()
        target = line.split()[1].decode()
        self.targets.append(target)
        origin = httpx2.URL(target)
        up_reader, up_writer = await asyncio.open_connection(origin.host, origin.port)
        up_writer.write(line)

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))


@pytest.fixture
async def proxy() -> AsyncIterator[ForwardProxy]:
    server = ForwardProxy()
    yield server
    await server.stop()


async def test_requests_go_through_the_proxy_in_http_proxy(
    fake_llm: FakeLLM,
    make_model: MakeModel,
    proxy: ForwardProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("NO_PROXY", "no_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HTTP_PROXY", await proxy.start())
    fake_llm.add(text("through the proxy"))
    response = await make_model().complete(HI, [])
    assert response.text == "through the proxy"
    assert proxy.targets == [f"{fake_llm.base_url}/chat/completions"]


async def test_no_proxy_is_obeyed(
    fake_llm: FakeLLM,
    make_model: MakeModel,
    proxy: ForwardProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", await proxy.start())
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    fake_llm.add(text("straight"))
    assert (await make_model().complete(HI, [])).text == "straight"
    assert proxy.targets == []
