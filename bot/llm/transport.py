"""The HTTP client under the openai SDK: its httpx client (retries, timeouts, proxies from
HTTPS_PROXY and NO_PROXY, certificates as httpx verifies them) over aiohttp's connections,
the transport of the SDK's ``aiohttp`` extra (``openai.DefaultAioHttpClient``). It costs
half the CPU per model call of httpx's own connection pool (docs/benchmarks.md).

Two things differ from httpx's transport, and are mended here or in bot/llm/errors.py:

- A base URL with ``user:password@`` gets httpx's Basic authentication, as before; aiohttp
  refuses a URL with credentials beside an Authorization header, so they leave the URL once
  the header is built (they were never sent in the request line anyway).
- Every failed connection (refused, reset, closed by the server) reaches the SDK as a
  timeout: ``sdk_errors.connection_lost`` reads what lies under it.
"""

from __future__ import annotations

import httpx2
import openai


async def _credentials_out_of_url(request: httpx2.Request) -> None:
    if request.url.userinfo:
        request.url = request.url.copy_with(userinfo=b"")


def http_client() -> httpx2.AsyncClient:
    """A new client for one model; the SDK closes it with the model."""
    return openai.DefaultAioHttpClient(event_hooks={"request": [_credentials_out_of_url]})
