"""The floor a Python SDK server cannot go under (`floor`): a bare MCPServer with no policy, no jail and no
masking. `head` is the floor of a read_file call; `files` pages through one `rg --files` listing and `grep`
returns the first matches of one `rg -n` run: the least a server answering search_files and search_text
through the SDK does. (`bare_server.py`, the start-up reference, stays as small as an MCPServer gets.)

Usage: python floor_server.py [RG]   (RG: the rg binary for `files` and `grep`; default `rg`)
"""

import subprocess
import sys
from itertools import islice

from mcp.server import MCPServer
from pydantic import BaseModel

server = MCPServer("bare")
RG = sys.argv[1] if len(sys.argv) > 1 else "rg"
SWITCH_LINES = 2000
_listings: dict[tuple[str, str], list[str]] = {}


class Page(BaseModel):
    files: list[str]
    total: int
    next_offset: int | None


class Match(BaseModel):
    path: str
    line: int
    text: str


class Matches(BaseModel):
    matches: list[Match]
    total: int


@server.tool()
def head(path: str, lines: int = 200) -> str:
    """The first lines of a file."""
    with open(path, encoding="utf-8", errors="replace") as file:
        return "".join(islice(file, lines))


@server.tool()
def files(root: str, glob: str, offset: int = 0, limit: int = 1000) -> Page:
    """A page of the files under `root` matching `glob`, in path order (one rg run per root and glob)."""
    listing = _listings.get((root, glob))
    if listing is None:
        done = subprocess.run([RG, "--files", "-g", glob, "."], cwd=root, capture_output=True, text=True, check=False)
        listing = _listings[(root, glob)] = sorted(done.stdout.splitlines())
    end = offset + limit
    return Page(files=listing[offset:end], total=len(listing), next_offset=end if end < len(listing) else None)


@server.tool()
def grep(root: str, pattern: str, fixed: bool = False, icase: bool = False, limit: int = 100) -> Matches:
    """The first `limit` matching lines under `root` in path order, and how many were read: all of them, or
    (past `SWITCH_LINES`, where sorting everything would cost more than the search) a lower bound, from a
    sorted run stopped once the page is full."""
    flags = (["-F"] if fixed else []) + (["-i"] if icase else [])
    argv = [RG, "-n", "--no-heading", "--with-filename", "--null", *flags, "--", pattern, "."]
    lines = _lines(argv, root, SWITCH_LINES + 1)
    if len(lines) > SWITCH_LINES:
        lines = _lines([*argv[:1], "--sort", "path", *argv[1:]], root, limit)
    hits: list[tuple[bytes, int, bytes]] = []
    for line in lines:
        path, _, rest = line.rstrip(b"\n").partition(b"\0")
        number, _, text = rest.partition(b":")
        hits.append((path, int(number or 0), text))
    hits.sort(key=lambda hit: (hit[0], hit[1]))
    found = [
        Match(path=p.decode(errors="replace"), line=n, text=t.decode(errors="replace")) for p, n, t in hits[:limit]
    ]
    return Matches(matches=found, total=len(hits))


def _lines(argv: list[str], root: str, most: int) -> list[bytes]:
    """Up to `most` lines of the command's output (it is stopped once it has printed them)."""
    with subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as process:
        assert process.stdout is not None
        lines = list(islice(process.stdout, most))
        process.kill()
    return lines


if __name__ == "__main__":
    server.run()
