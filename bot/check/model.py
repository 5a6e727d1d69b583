"""The LLM endpoint, as `slack-agent check` sees it: reachable, key accepted, and the
configured model listed by ``/models`` where the server has that endpoint."""

from __future__ import annotations

import openai

from bot.check.findings import Finding, fail, ok, reason, warn

AREA = "llm"
TIMEOUT_S = 10.0
SHOWN = 10  # model names quoted when the configured one is missing


async def check_model(base_url: str | None, api_key: str | None, model: str) -> list[Finding]:
    client = openai.AsyncOpenAI(
        api_key=api_key or "unused", base_url=base_url, timeout=TIMEOUT_S, max_retries=0
    )
    where = str(client.base_url).rstrip("/")
    try:
        names = [m.id async for m in client.models.list()]
    except openai.AuthenticationError:
        return [fail(AREA, f"{where} refused the API key (401): check OPENAI_API_KEY")]
    except openai.PermissionDeniedError:
        return [fail(AREA, f"{where} refused access (403): check OPENAI_API_KEY")]
    except openai.NotFoundError:
        return [
            ok(AREA, f"{where} answers"),
            warn(AREA, f"{where} has no /models endpoint, so model {model} was not checked"),
        ]
    except openai.APIStatusError as exc:
        return [fail(AREA, f"{where} answered /models with HTTP {exc.status_code}")]
    except (openai.APIConnectionError, openai.APITimeoutError) as exc:
        return [fail(AREA, f"cannot reach {where}: {reason(exc)}")]
    finally:
        await client.close()
    reached = ok(AREA, f"{where} answers ({len(names)} models listed)")
    if model in names:
        return [reached, ok(AREA, f"model {model} is listed")]
    offered = ", ".join(sorted(names)[:SHOWN]) + (" ..." if len(names) > SHOWN else "")
    return [
        reached,
        fail(AREA, f"model {model} (llm.model) is not listed; the server lists: {offered}"),
    ]
