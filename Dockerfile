# syntax=docker/dockerfile:1
# Build: docker build -t slack-agent .    Run: docker compose up (see docker-compose.yml)

FROM python:3.11-slim AS build
COPY --from=ghcr.io/astral-sh/uv:0.9 /uv /uvx /bin/
ENV UV_COMPILE_BYTECODE=1 UV_LINK_MODE=copy UV_PYTHON_DOWNLOADS=never
WORKDIR /app
# Dependencies first, so code changes do not reinstall them.
RUN --mount=type=cache,target=/root/.cache/uv \
    --mount=type=bind,source=uv.lock,target=uv.lock \
    --mount=type=bind,source=pyproject.toml,target=pyproject.toml \
    uv sync --locked --no-dev --no-install-project
COPY . /app
RUN --mount=type=cache,target=/root/.cache/uv \
    uv sync --locked --no-dev

FROM python:3.11-slim
RUN groupadd --system app && useradd --system --gid app --home-dir /app --no-create-home app
COPY --from=build --chown=app:app /app /app
ENV PATH="/app/.venv/bin:$PATH" PYTHONUNBUFFERED=1
WORKDIR /app
USER app
EXPOSE 3000
# Liveness on --port in HTTP and Socket Mode alike (/readyz for readiness). /metrics is on
# --port only in Socket Mode; in HTTP mode add --metrics-port N (Slack's port stays without it).
HEALTHCHECK --interval=30s --timeout=3s CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3000/healthz')" || exit 1
CMD ["slack-agent", "run", "--port", "3000"]
