"""Files people share: what kind each is (pure), and reading them with the bot token.

Slack serves a file's bytes at its ``url_private`` to a request carrying the bot token
(``Authorization: Bearer xoxb-...``, scope ``files:read``;
https://docs.slack.dev/messaging/working-with-files). Without the scope Slack answers with
its sign-in page (HTML), which is recognised and reported, never given to the model. The
token is only sent to Slack's own hosts (or the configured API host).

Every failure is logged and gives None: the model is then told the file could not be read.
"""

from __future__ import annotations

import asyncio
import base64
import logging
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from urllib.parse import urlsplit

import aiohttp
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.calls import safe_call
from bot.turn.message import FileRef

log = logging.getLogger(__name__)

TEXT_MIMETYPES = {
    "application/json",
    "application/xml",
    "application/x-yaml",
    "application/yaml",
    "application/toml",
    "application/javascript",
    "application/x-javascript",
    "application/typescript",
    "application/x-sh",
    "application/x-python",
    "application/sql",
    "application/csv",
    "application/x-ndjson",
}
TEXT_FILETYPES = {
    "text", "markdown", "md", "csv", "tsv", "json", "xml", "yaml", "yml", "toml", "ini",
    "python", "javascript", "typescript", "java", "kotlin", "scala", "c", "cpp", "csharp",
    "go", "rust", "ruby", "php", "perl", "swift", "shell", "bash", "powershell", "sql", "html",
    "css", "scss", "diff", "patch", "dockerfile", "makefile", "lua", "r", "haskell", "clojure",
    "elixir", "erlang", "groovy", "log", "tex", "rst", "asciidoc", "jsx", "tsx", "vue",
}  # fmt: skip
TEXT_SUFFIXES = {
    ".txt", ".md", ".markdown", ".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".xml", ".yaml",
    ".yml", ".toml", ".ini", ".cfg", ".conf", ".log", ".py", ".js", ".ts", ".tsx", ".jsx",
    ".java", ".kt", ".go", ".rs", ".rb", ".php", ".c", ".h", ".cpp", ".hpp", ".cs", ".sh",
    ".sql", ".html", ".css", ".diff", ".patch", ".rst", ".tex", ".env.example", ".properties",
}  # fmt: skip
IMAGE_MIMETYPES = {"image/png", "image/jpeg", "image/gif", "image/webp"}
IMAGE_MAX_BYTES = 4_000_000
READ_TIMEOUT_S = 20.0


def is_text(file: FileRef) -> bool:
    mimetype = file.mimetype.lower()
    if mimetype.startswith("text/") or mimetype in TEXT_MIMETYPES:
        return True
    if file.filetype.lower() in TEXT_FILETYPES or file.mode == "snippet":
        return True
    return PurePosixPath(file.name.lower()).suffix in TEXT_SUFFIXES


def is_image(file: FileRef) -> bool:
    return file.mimetype.lower() in IMAGE_MIMETYPES


def size_words(size: int) -> str:
    """``2.1 KB``: a size as people read it."""
    if size < 1000:
        return f"{size} bytes"
    value, units = size / 1000, ["KB", "MB", "GB"]
    while value >= 1000 and len(units) > 1:
        value, units = value / 1000, units[1:]
    return f"{value:.1f} {units[0]}"


def kind_words(file: FileRef) -> str:
    return file.pretty_type or file.filetype or file.mimetype or "unknown type"


@dataclass(frozen=True)
class TextContent:
    text: str
    truncated: bool


class FileReader:
    def __init__(
        self,
        client: AsyncWebClient,
        *,
        text_chars: int,
        image_max_bytes: int = IMAGE_MAX_BYTES,
        timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self.client = client
        self.text_chars = text_chars
        self.image_max_bytes = image_max_bytes
        self.timeout_s = timeout_s
        # Slack's hosts, and the API's own (GovSlack: slack-gov.com; a test server).
        api_host = urlsplit(client.base_url).hostname or ""
        self._hosts = {"slack.com", api_host.removeprefix("api.")} - {""}

    async def described(self, file: FileRef) -> FileRef:
        """``file`` with its details from ``files.info`` when the event gave only its id
        (Slack Connect, ``file_access: check_file_info``)."""
        if not file.needs_info or not file.id:
            return file
        try:
            async with asyncio.timeout(self.timeout_s):
                response = await safe_call(self.client.files_info, file=file.id)
        except TimeoutError:
            log.warning("files.info for %s took longer than %.0f s", file.id, self.timeout_s)
            return file
        if response is None:
            return file
        full = FileRef.of(response.get("file") or {})
        return replace(full, file_access="") if full.id else file

    async def text(self, file: FileRef) -> TextContent | None:
        """The file's text, cut to ``text_chars``."""
        url = file.url_private_download or file.url_private
        limit = self.text_chars * 4 + 4  # UTF-8: at most four bytes a character
        got = await self._get(url, limit, file)
        if got is None:
            return None
        data, content_type, complete = got
        if content_type == "text/html" and not (
            file.mimetype == "text/html" or file.filetype == "html"
        ):
            log.warning(
                "file %s could not be read: Slack answered with a web page (the app may lack "
                "the files:read scope)",
                file.id,
            )
            return None
        text = data.decode("utf-8", errors="replace")
        truncated = not complete or len(text) > self.text_chars
        return TextContent(text[: self.text_chars], truncated)

    async def image(self, file: FileRef) -> str | None:
        """The picture as a data URL (a thumbnail when Slack made one), or None."""
        url = file.thumb_1024 or file.thumb_720 or file.thumb_480
        if not url:
            if file.size > self.image_max_bytes:
                log.info("image %s is too large to show (%d bytes)", file.id, file.size)
                return None
            url = file.url_private_download or file.url_private
        got = await self._get(url, self.image_max_bytes + 1, file)
        if got is None:
            return None
        data, content_type, complete = got
        if not complete:
            log.info("image %s is too large to show", file.id)
            return None
        mimetype = content_type if content_type.startswith("image/") else file.mimetype
        if not mimetype.startswith("image/"):
            log.warning("file %s: Slack did not answer with an image (%s)", file.id, content_type)
            return None
        return f"data:{mimetype};base64,{base64.b64encode(data).decode()}"

    def _may_send_token(self, url: str) -> bool:
        host = urlsplit(url).hostname or ""
        return any(host == known or host.endswith("." + known) for known in self._hosts)

    async def _get(self, url: str, limit: int, file: FileRef) -> tuple[bytes, str, bool] | None:
        """Up to ``limit`` bytes of ``url``, the content type, and whether that was all."""
        if not url:
            log.info("file %s has no URL to read it from", file.id)
            return None
        if not self._may_send_token(url):
            log.info("file %s is not hosted by Slack; not reading it", file.id)
            return None
        headers = {"Authorization": f"Bearer {self.client.token}"}
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout) as session,
                session.get(url, headers=headers) as response,
            ):
                if response.status != 200:
                    log.warning("file %s could not be read: HTTP %d", file.id, response.status)
                    return None
                chunks: list[bytes] = []
                total = 0
                async for chunk in response.content.iter_chunked(64 * 1024):
                    chunks.append(chunk)
                    total += len(chunk)
                    if total >= limit:
                        break
                complete = total < limit or response.content.at_eof()
                data = b"".join(chunks)[:limit]
                return data, response.content_type, complete
        except (aiohttp.ClientError, TimeoutError) as exc:
            log.warning("file %s could not be read: %s", file.id, type(exc).__name__)
            return None
