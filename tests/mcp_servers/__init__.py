"""Real MCP servers over stdio and HTTP."""
