"""The start-up reference: a bare MCPServer with one tool, spawned the same way as repo-sandbox."""

from mcp.server import MCPServer

server = MCPServer("bare")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


if __name__ == "__main__":
    server.run()
