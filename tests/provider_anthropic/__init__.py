"""The Anthropic adapter, against its fake server, recordings and the live API."""
