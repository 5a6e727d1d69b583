"""The LLM client: any OpenAI-compatible Chat Completions server.

Import from the modules (``bot.llm.client``, ``.response``, ``.errors``, ``.usage``...): the
package itself imports nothing, so what needs only prices, token counts or usage (the
ingress's budgets, say) does not load the openai SDK (half a second and about 45 MB)."""
