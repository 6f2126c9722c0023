"""The MCP wiring: server assembly, tool handlers, resources, session ids, result conversion, the SDK adapter."""
