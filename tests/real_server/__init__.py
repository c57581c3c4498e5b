"""A real OpenAI-compatible server: llama.cpp with a small model."""
