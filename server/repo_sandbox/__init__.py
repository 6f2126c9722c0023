"""repo-sandbox-mcp: safe, fast, read-only access to one code repository for AI agents, over MCP."""

__version__ = "0.1.0"
