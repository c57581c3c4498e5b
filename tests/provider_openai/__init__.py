"""The OpenAI adapters (Chat Completions and Responses), against their fake server,
recordings and the live API."""
