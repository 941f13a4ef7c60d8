"""Builds the chat provider once, at startup: an OpenAI-compatible endpoint when one is configured."""

from __future__ import annotations

import openai

from app.agent.providers.base import ChatProvider
from app.agent.providers.offline import OfflineModel
from app.agent.providers.openai_compat import OpenAIChatProvider
from app.lib.settings import Settings
from app.lib.tokens import TokenCounter


def build_chat_provider(settings: Settings, counter: TokenCounter) -> ChatProvider:
    """Online when a key or base URL is set (DashScope + qwen-plus with a DashScope key), else offline."""
    if not (settings.model_api_key() or settings.openai_base_url):
        return OfflineModel(counter)
    client = openai.AsyncOpenAI(
        api_key=settings.model_api_key() or "not-needed",  # local servers (Ollama, vLLM) take any key
        base_url=settings.model_base_url(),
        timeout=settings.model_timeout_s,
        max_retries=settings.model_max_retries,
    )
    return OpenAIChatProvider(client, settings.default_chat_model())
