"""The docs' runnable snippets, against a local wire server."""
