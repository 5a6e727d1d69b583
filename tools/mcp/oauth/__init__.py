"""Signing each person in to a remote MCP server (OAuth 2.1, the MCP authorization spec).

The SDK's ``OAuthClientProvider`` does discovery, registration, PKCE, resource indicators,
``iss`` checks and scope step-up; this package splits its one-coroutine flow in two so that
no process waits on a person: the worker captures the authorization request the SDK built
(``provider.py``), and whichever replica receives the browser's callback exchanges the code
(``grants.py``). It knows the SDK and nothing of the bot, Redis or Slack: tokens come and go
through the ``PersonTokens`` protocol (``tokens.py``), which the bot implements over Redis.

Import from the modules; the package itself imports nothing (the SDK loads only where an
``auth: oauth`` server is configured).
"""
