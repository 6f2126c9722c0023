"""The start-up reference: a bare MCPServer, spawned the same way as repo-sandbox; its `head` tool is the
floor of a read_file call through the Python SDK (no policy, no jail, no masking)."""

from itertools import islice

from mcp.server import MCPServer

server = MCPServer("bare")


@server.tool()
def echo(text: str) -> str:
    """Echo the text."""
    return text


@server.tool()
def head(path: str, lines: int = 200) -> str:
    """The first lines of a file."""
    with open(path, encoding="utf-8", errors="replace") as file:
        return "".join(islice(file, lines))


if __name__ == "__main__":
    server.run()
