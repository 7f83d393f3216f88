"""The capture proxy for the Anthropic and OpenAI APIs: every call recorded whole."""
