"""Pathname expansion done by the server, inside the jail, the way bash does it by default.

Bash semantics kept: `*`, `?` and `[...]` (with `!`/`^` negation, ranges and `[:class:]`) in unquoted
text; each `/`-separated component matched against one directory level; names starting with `.` only
matched by a pattern that starts with a literal `.`; `.` and `..` never matched; results sorted bytewise
(C locale); a pattern with no match is passed on literally (no nullglob, no failglob); no globstar,
no extglob, no brace expansion.

Server rules on top: directories are opened through the jail (an absolute pattern must start inside the
root; a symlink leading out is dropped), a deny-listed entry is never produced, FIFOs, sockets, devices and
(unless allowed) hard-linked files are skipped, a match starting with `-` becomes `./-x` so it can never be
read as an option, and the work is capped (entries scanned, matches, argv bytes).
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from typing import Final

from repo_sandbox.errors import InvalidArgumentsError, PathDeniedError, PathOutsideRootError, SandboxError
from repo_sandbox.fs.jail import Jail
from repo_sandbox.shell.words import GLOB_CHARS, Segment, Word

MAX_GLOB_MATCHES: Final = 10_000
"""Most paths all the globs of one command may produce."""
MAX_GLOB_SCANNED: Final = 200_000
"""Most directory entries all the globs of one command may look at."""
MAX_ARGV_BYTES: Final = 512 * 1024
"""Largest total size of the arguments of one command after expansion."""

_CLASSES: Final = {
    "alpha": "a-zA-Z",
    "digit": "0-9",
    "alnum": "a-zA-Z0-9",
    "upper": "A-Z",
    "lower": "a-z",
    "space": " \\t\\n\\r\\f\\v",
    "blank": " \\t",
    "xdigit": "0-9A-Fa-f",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "word": "a-zA-Z0-9_",
}
_Chars = list[tuple[str, bool]]


def _bracket(chars: _Chars, start: int) -> tuple[str, int] | None:
    """Translate the bracket expression at `start` ('['); None when it is not closed (then '[' is literal)."""
    i = start + 1
    negate = i < len(chars) and chars[i][0] in "!^" and not chars[i][1]
    if negate:
        i += 1
    members: list[str] = []
    first = True
    while i < len(chars):
        char, quoted = chars[i]
        if char == "]" and not quoted and not first:
            body = "".join(members)
            return (f"[^{body}]" if negate else f"[{body}]"), i + 1
        if char == "[" and not quoted and i + 1 < len(chars) and chars[i + 1][0] == ":":
            text = "".join(c for c, _ in chars[i + 2 :])
            name = text.split(":]", 1)[0]
            if name in _CLASSES and ":]" in text:
                members.append(_CLASSES[name])
                i += len(name) + 4
                first = False
                continue
        if char == "-" and not quoted and members and i + 1 < len(chars) and chars[i + 1][0] != "]":
            members.append("-")
        else:
            members.append(re.escape(char))
        first = False
        i += 1
    return None


def component_regex(segments: list[Segment]) -> re.Pattern[str] | None:
    """The regex for one path component, or None when it has no (working) glob characters."""
    chars: _Chars = [(c, s.quoted) for s in segments for c in s.text]
    parts: list[str] = []
    is_glob = False
    i = 0
    while i < len(chars):
        char, quoted = chars[i]
        if not quoted and char == "*":
            parts.append(".*")
            is_glob = True
        elif not quoted and char == "?":
            parts.append(".")
            is_glob = True
        elif not quoted and char == "[":
            bracket = _bracket(chars, i)
            if bracket is not None:
                parts.append(bracket[0])
                is_glob = True
                i = bracket[1]
                continue
            parts.append(re.escape(char))
        else:
            parts.append(re.escape(char))
        i += 1
    return re.compile("".join(parts), re.DOTALL) if is_glob else None


def _split_components(word: Word) -> list[list[Segment]]:
    components: list[list[Segment]] = [[]]
    for segment in word.segments:
        pieces = segment.text.split("/")
        for index, piece in enumerate(pieces):
            if index:
                components.append([])
            if piece:
                components[-1].append(Segment(piece, segment.quoted))
    return components


class GlobExpander:
    """Expands the words of one command; the caps apply to the command as a whole."""

    def __init__(self, jail: Jail, cwd: str, shown_root: str | None = None) -> None:
        self.jail = jail
        self.cwd = cwd
        self.shown_root = (shown_root or jail.root).rstrip("/")
        """Where programs see the repository: absolute patterns start there and expand to paths under it."""
        self.scanned = 0
        self.matched = 0

    def expand(self, word: Word) -> list[str]:
        """Raises: InvalidArgumentsError when a cap is hit; jail errors for a pattern rooted outside or denied."""
        if not word.has_glob:
            return [word.text]
        components = _split_components(word)
        states = [("", self.cwd)]
        if word.text.startswith("/"):
            root_parts = self._root_parts(word.text)
            components = components[1 + root_parts :]
            states = [(self.shown_root + "/", ".")]
        trailing_slash = len(components) > 1 and not components[-1]
        if trailing_slash:
            components = components[:-1]
        for index, component in enumerate(components):
            last = index == len(components) - 1
            regex = component_regex(component)
            literal = "".join(s.text for s in component)
            if regex is None:
                states = [(f"{shown}{literal}", posixpath.join(rel, literal)) for shown, rel in states]
                if last:
                    states = [s for s in states if self._exists(s[1])]
            else:
                hidden_ok = literal.startswith(".")
                need_dir = not last or trailing_slash
                states = [m for shown, rel in states for m in self._scan(shown, rel, regex, hidden_ok, need_dir)]
            states = [(f"{shown}/", rel) for shown, rel in states] if not last else states
            if not states:
                return [word.text]
        matches = sorted((shown + "/" if trailing_slash else shown for shown, _ in states), key=_c_order)
        self.matched += len(matches)
        if self.matched > MAX_GLOB_MATCHES:
            raise InvalidArgumentsError(
                f"The globs of this command match more than {MAX_GLOB_MATCHES} paths.",
                hint="Use a narrower pattern, or search_files to list files page by page.",
                field="command",
                max_matches=MAX_GLOB_MATCHES,
            )
        return [f"./{m}" if m.startswith("-") else m for m in matches]

    def _root_parts(self, text: str) -> int:
        """How many leading components of an absolute pattern are the root itself; refuses any other start."""
        root = self.shown_root
        if not text.startswith(root + "/"):
            raise PathOutsideRootError(
                f"The pattern '{text}' is outside the repository root.", path=text, field="command"
            )
        return len([p for p in root.split("/") if p])

    def _exists(self, rel: str) -> bool:
        try:
            opened, dir_fd, _ = self.jail.open_any(posixpath.normpath(rel), field="command")
        except SandboxError:
            return False
        for fd in (opened.fd if opened else None, dir_fd):
            if fd is not None:
                os.close(fd)
        return True

    def _scan(
        self, shown: str, rel: str, regex: re.Pattern[str], hidden_ok: bool, need_dir: bool
    ) -> list[tuple[str, str]]:
        try:
            dir_fd, dir_rel = self.jail.open_dir(posixpath.normpath(rel) if rel else ".", field="command")
        except (PathOutsideRootError, PathDeniedError):
            raise
        except SandboxError:
            return []
        found: list[tuple[str, str]] = []
        try:
            with os.scandir(dir_fd) as entries:
                for entry in entries:
                    self.scanned += 1
                    if self.scanned > MAX_GLOB_SCANNED:
                        raise InvalidArgumentsError(
                            f"The globs of this command look at more than {MAX_GLOB_SCANNED} directory entries.",
                            hint="Use a narrower pattern (fewer '*' levels).",
                            field="command",
                        )
                    name = entry.name
                    if (name.startswith(".") and not hidden_ok) or not regex.fullmatch(name):
                        continue
                    child = name if dir_rel == "." else f"{dir_rel}/{name}"
                    if self.jail.is_denied(child) or not self._usable(entry, child, need_dir=need_dir):
                        continue
                    found.append((shown + name, posixpath.join(rel, name)))
        finally:
            os.close(dir_fd)
        return found

    def _usable(self, entry: os.DirEntry[str], child: str, *, need_dir: bool) -> bool:
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode):
            try:
                opened, dir_fd, _ = self.jail.open_any(child, field="command")
            except SandboxError:
                return False  # leads outside, to a denied or special file, or nowhere
            if opened is not None:
                os.close(opened.fd)
            if dir_fd is not None:
                os.close(dir_fd)
            return dir_fd is not None or not need_dir
        if stat.S_ISDIR(info.st_mode):
            return True
        if not stat.S_ISREG(info.st_mode) or need_dir:
            return False
        return info.st_nlink == 1 or self.jail.allow_hard_links


def _c_order(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def check_argv_size(argv: list[str]) -> None:
    """Raises: InvalidArgumentsError when the expanded arguments are too large to pass on."""
    size = sum(len(a.encode("utf-8", "surrogateescape")) + 1 for a in argv)
    if size > MAX_ARGV_BYTES:
        raise InvalidArgumentsError(
            f"The expanded command is {size} bytes long; the limit is {MAX_ARGV_BYTES}.",
            hint="Use a narrower glob.",
            field="command",
        )


__all__ = ["GLOB_CHARS", "GlobExpander", "check_argv_size", "component_regex"]
