"""The benchmark harness (`scripts/bench`): our tools through a real MCP client vs the CLI references."""
