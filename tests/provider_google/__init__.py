"""The Gemini adapter (`google:` and `vertex:`) against its stand-in, through the official SDK."""
