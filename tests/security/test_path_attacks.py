"""The jail's attack table: every row goes through every tool that takes a path, on every jail backend.

A row is a caller path and what the jail must answer: a graded error code (the same from every tool), or
"file"/"dir" for a path that resolves inside the root. Each outcome is also checked for what must never
be in it: content from outside the root or from deny-listed files, host paths the caller did not write,
and names of denied entries the caller did not write.
"""

from __future__ import annotations

import json
import unicodedata
from dataclasses import dataclass
from typing import Any

import pytest
from attack_tree import DENIED_NAMES, INSIDE_MARKER, AttackTree, call_bounded, leaked_secrets

from repo_sandbox.runtime.pipeline import CallOutcome
from repo_sandbox.workspace import Workspace

FILE = "file"
DIR = "dir"

CATEGORY = {
    "path_outside_root": "permission_denied",
    "path_denied": "permission_denied",
    "special_file": "permission_denied",
    "not_found": "not_found",
    "invalid_arguments": "invalid_argument",
    "not_a_file": "invalid_argument",
    "not_a_directory": "invalid_argument",
}


@dataclass(frozen=True, slots=True)
class Row:
    path: str
    """The caller's path; `{root}`, `{base}` and `{outside}` are replaced by the tree's absolute paths."""
    expect: str
    """An error code, or FILE / DIR for a path that resolves inside the root."""
    dir_tool_expect: str | None = None
    """What search_files (which needs a directory) answers when it differs from `expect`."""


def r(path: str, expect: str, dir_tool_expect: str | None = None) -> Any:
    return pytest.param(Row(path, expect, dir_tool_expect), id=ascii(path)[1:-1][:60] or "empty")


NFC_RESUME = unicodedata.normalize("NFC", "résumé.txt")
NFD_RESUME = unicodedata.normalize("NFD", "résumé.txt")

ROWS = [
    # -- traversal ---------------------------------------------------------------------------------
    r("../outside/secret.txt", "path_outside_root"),
    r("..", "path_outside_root"),
    r("../", "path_outside_root"),
    r("a/../../outside/secret.txt", "path_outside_root"),
    r("./../outside/secret.txt", "path_outside_root"),
    r("src/../../outside/secret.txt", "path_outside_root"),
    r("src/pkg/../../../outside", "path_outside_root"),
    r("../repo/README.md", "path_outside_root"),  # comes back in, but leaves first: refused
    r("../" * 20 + "etc/passwd", "path_outside_root"),
    r("src/../README.md", FILE),
    # -- sibling prefix (CVE-2025-53110: '/x/repo-evil' starts with the string '/x/repo') -----------------
    r("../repo-evil/secret.txt", "path_outside_root"),
    r("{root}-evil/secret.txt", "path_outside_root"),
    r("{root}-evil", "path_outside_root"),
    r("link_sibling/secret.txt", "path_outside_root"),
    # -- absolute paths ----------------------------------------------------------------------------
    r("{root}/README.md", FILE),
    r("{root}", DIR),
    r("{root}/", DIR),
    r("{root}/src/../README.md", FILE),
    r("{root}/../repo/README.md", FILE),  # lexically the same file under the root
    r("{root}/../outside/secret.txt", "path_outside_root"),
    r("/{root}/README.md", FILE),  # a doubled leading slash is still the root
    r("{outside}/secret.txt", "path_outside_root"),
    r("/etc/passwd", "path_outside_root"),
    r("//etc/passwd", "path_outside_root"),
    r("/", "path_outside_root"),
    r("{root}/.env", "path_denied"),
    # -- home directories --------------------------------------------------------------------------
    r("~", "path_outside_root"),
    r("~/.ssh/id_rsa", "path_outside_root"),
    r("~root/.bashrc", "path_outside_root"),
    r("~nobody", "path_outside_root"),
    r("./~", "not_found"),  # a literal name in the root: nothing is expanded
    # -- symlinks out of the root ------------------------------------------------------------------
    r("link_out_file_rel", "path_outside_root"),
    r("link_out_file_abs", "path_outside_root"),
    r("link_out_dir_rel", "path_outside_root"),
    r("link_out_dir_rel/secret.txt", "path_outside_root"),
    r("link_out_dir_abs", "path_outside_root"),
    r("link_out_dir_abs/dir/inner.txt", "path_outside_root"),
    r("src/link_up_out", "path_outside_root"),
    r("link_abs_in", "path_outside_root"),  # absolute targets are refused even when they name the root
    # -- symlinks inside the root ------------------------------------------------------------------
    r("link_in_file", FILE),
    r("link_in_dir", DIR),
    r("link_in_dir/main.py", FILE),
    r("link_in_dir/", DIR),
    r("src/link_up_in", FILE),
    # -- symlink chains ----------------------------------------------------------------------------
    r("chain_out_1", "path_outside_root"),
    r("chain_in_1", FILE),
    # -- dangling and looping links ----------------------------------------------------------------
    r("dangling", "not_found"),
    r("dangling_out", "path_outside_root"),
    r("loop_a", "special_file"),
    r("loop_a/x", "special_file"),
    r("self_loop", "special_file"),
    r("loop_dir", "special_file"),
    r("through_file", "not_found"),  # 'README.md/../.env': '..' through a file is ENOTDIR, not .env
    # -- in-root symlinks to deny-listed files and directories -------------------------------------
    r("link_env", "path_denied"),
    r("link_git", "path_denied"),
    r("link_git/config", "path_denied"),
    r("link_git_config", "path_denied"),
    r("link_cfg/prod.yaml", "path_denied"),  # an anchored rule, reached through a directory link
    r("link_cfg/dev.yaml", FILE),
    r("link_cfg", DIR),  # walking a linked directory applies the rules of its real path: prod.yaml stays hidden
    r("link_private", "path_denied"),
    r("link_private/notes.txt", "path_denied"),
    r("link_resume_nfd", "path_denied"),
    # -- /proc magic links -------------------------------------------------------------------------
    r("proc_root", "path_outside_root"),
    r("proc_root/etc/passwd", "path_outside_root"),
    r("proc_cwd", "path_outside_root"),
    r("proc_fd0", "path_outside_root"),
    r("proc_environ", "path_outside_root"),
    r("proc_root_rel/etc/passwd", "path_outside_root"),
    r("/proc/self/root/etc/passwd", "path_outside_root"),
    r("/proc/self/cwd", "path_outside_root"),
    # -- FIFOs, sockets, devices -------------------------------------------------------------------
    r("fifo", "special_file"),
    r("sock", "special_file"),
    r("devnode", "special_file"),
    r("dev_zero", "path_outside_root"),
    r("dev_tty", "path_outside_root"),
    r("dev_zero_rel", "path_outside_root"),
    r("/dev/zero", "path_outside_root"),
    # -- hard links --------------------------------------------------------------------------------
    r("hardlink_out.txt", "special_file", "not_a_directory"),
    # -- NUL bytes, over-long paths and components, unencodable text -------------------------------
    r("README.md\x00.txt", "invalid_arguments"),
    r("\x00", "invalid_arguments"),
    r("a" * 256, "invalid_arguments"),
    r("a/" * 2049, "invalid_arguments"),
    r("é" * 128, "invalid_arguments"),  # 128 characters, 256 bytes: components are measured in bytes
    r("\ud800", "invalid_arguments"),  # a lone surrogate, as JSON's \\ud800 decodes
    # -- backslashes -------------------------------------------------------------------------------
    r("..\\outside\\secret.txt", "invalid_arguments"),
    r("src\\main.py", "invalid_arguments"),
    r("\\etc\\passwd", "invalid_arguments"),
    # -- encoded dots: literal names, never decoded ------------------------------------------------
    r("%2e%2e/outside/secret.txt", "not_found"),
    r("%2e%2e/decoy.txt", FILE),  # a directory really named '%2e%2e' is just a directory
    r("%2e%2e%2foutside%2fsecret.txt", "not_found"),
    r("..%2f..%2fetc%2fpasswd", "not_found"),
    r("%252e%252e/", "not_found"),
    # -- unicode look-alikes -----------------------------------------------------------------------
    r("\uff0e\uff0e/outside/secret.txt", "not_found"),  # fullwidth full stops
    r("\u2024\u2024/outside/secret.txt", "not_found"),  # one-dot leaders
    r("\u2025/outside/secret.txt", "not_found"),  # two-dot leader
    r("..\u2215outside\u2215secret.txt", "not_found"),  # division slashes: one literal component
    r(NFD_RESUME, "path_denied"),  # the name as it is on disk (decomposed) against an NFC rule
    r(NFC_RESUME, "path_denied"),
    # -- case variants of denied names -------------------------------------------------------------
    r(".ENV", "path_denied"),
    r(".Env", "path_denied"),
    r(".Git/config", "path_denied"),
    r(".GIT", "path_denied"),
    r("ID_RSA", "path_denied"),
    r("SERVER.PEM", "path_denied"),
    r("Config/Prod.yaml", "path_denied"),
    # -- trailing slashes, '//', '/./', whitespace -------------------------------------------------
    r("src//main.py", FILE),
    r("src/./main.py", FILE),
    r("./src/main.py", FILE),
    r("src/main.py/", FILE),  # normalised lexically, like the rest of the path
    r("src/", DIR),
    r("", DIR),
    r("  README.md  ", FILE),
    r(".//.env", "path_denied"),
    r(".git//config", "path_denied"),
    r("./.git/./config", "path_denied"),
    # -- deny-listed files reached directly --------------------------------------------------------
    r(".env", "path_denied"),
    r("id_rsa", "path_denied"),
    r("server.pem", "path_denied"),
    r(".git", "path_denied"),
    r(".git/config", "path_denied"),
    r(".git/missing/deeper", "path_denied"),
    r("config/prod.yaml", "path_denied"),
    r("private", "path_denied"),
    r("private/notes.txt", "path_denied"),
    r("src/../.env", "path_denied"),
    # -- existence oracle: a denied name that does not exist answers exactly as one that does ------
    r(".env.missing", "path_denied"),
    r("missing.pem", "path_denied"),
    r(".env/below", "path_denied"),
    r(".env.missing/below", "path_denied"),
    r("private/missing.txt", "path_denied"),
    r("config/prod.yaml/below", "path_denied"),
    r("Private/Missing.txt", "path_denied"),
    # -- trailing dots and spaces: the same name to Windows, SMB and git's NTFS checks, so denied too ------
    r("server.pem.", "path_denied"),
    r("server.pem. .", "path_denied"),
    r(".netrc ", "path_denied"),
    r(".git./config", "path_denied"),
    r(".git . /config", "path_denied"),
    r("config./prod.yaml", "path_denied"),  # an anchored rule, its directory spelled with a trailing dot
    r("private../notes.txt", "path_denied"),
    r("id_ed25519 .", "path_denied"),
    r("README.md.", "not_found"),  # an allowed name keeps its own answer
    r("...", "not_found"),
    # -- compatibility (NFKC) forms of denied names: one name on a formKC file system ----------------
    r("x.\uff2b\uff25\uff39", "path_denied"),  # fullwidth KEY
    r("x.KEY", "path_denied"),
    r("\uff0eenv", "path_denied"),  # a fullwidth full stop
    r(".\uff45\uff4e\uff56.local", "path_denied"),
    r("\uff0egit/config", "path_denied"),
    r("server.\u24df\u24d4\u24dc", "path_denied"),  # circled letters: NFKC makes them 'pem'
    r("server.pe\u1d50", "path_denied"),  # a modifier letter m
    r("x.\u212aey", "path_denied"),  # KELVIN SIGN folds to 'k'
    r("x.k\u212aey", "not_found"),  # 'x.kkey' is no key file: folding does not over-reach
    # -- anchored rules match at the root only, unanchored ones at any depth --------------------------
    r("src/config/prod.yaml", "not_found"),  # '/config/prod.yaml' is anchored: not a denied path
    r("src/private/x.txt", "path_denied"),
    r("src/pkg/.git/HEAD", "path_denied"),
    r("src/.env.local", "path_denied"),
    r("sub/.docker/config.json", "path_denied"),  # the default credential rule holds at any depth
    r("src/.docker/config.json", "path_denied"),
    r("src/.ssh/id_ed25519.pub", "path_denied"),
    # -- a symlink to the root's parent ----------------------------------------------------------------
    r("link_parent", "path_outside_root"),
    r("link_parent/repo/README.md", "path_outside_root"),
    r("link_parent/outside/secret.txt", "path_outside_root"),
    r("link_parent/repo-evil", "path_outside_root"),
    r("src/../link_parent/repo/.env", "path_denied"),  # the deny check on the caller's path comes first
    # -- the root spelled through /proc -------------------------------------------------------------------
    r("/proc/self/root{root}/README.md", "path_outside_root"),
    r("/proc/thread-self/root/etc/passwd", "path_outside_root"),
    r("/proc/1/cwd", "path_outside_root"),
    # -- limits exactly: the longest accepted component and path reach the file system -------------------
    r("a" * 255, "not_found"),
    r("a/" * 2047 + "a", "not_found"),  # 4095 bytes
    r("./" * 2046 + "README.md", "invalid_arguments"),  # 4101 bytes, though it normalises to 9
    r("\x00README.md", "invalid_arguments"),
    r(".env\x00", "invalid_arguments"),
    r("bad\udcffname", "not_found"),  # a non-UTF-8 byte as surrogateescape spells it: a name like any other
    r("key\udcff.pem", "path_denied"),  # ... and the deny-list still reads the rest of the name
    r(".git\udcff/../.env", "path_denied"),
    # -- a denied name as a lexical detour: normalised away, never opened --------------------------
    r("config/prod.yaml/../dev.yaml", FILE),
    r(".git/../README.md", FILE),
]

TOOLS = ("read_file", "search_text", "count_lines", "search_files")


def expand(path: str, tree: AttackTree) -> str:
    return (
        path.replace("{root}", str(tree.root)).replace("{outside}", str(tree.outside)).replace("{base}", str(tree.base))
    )


def arguments(tool: str, path: str) -> dict[str, Any]:
    """The call of `tool` on `path` that exposes the most: hidden and ignored files included."""
    if tool == "read_file":
        return {"path": path}
    if tool == "search_text":
        return {"pattern": ".", "path": path, "include_hidden": True, "include_ignored": True}
    if tool == "count_lines":
        return {"path": path, "include_hidden": True, "include_ignored": True}
    return {"pattern": "**", "path": path, "include_hidden": True, "include_ignored": True}


def expected_code(row: Row, tool: str) -> str | None:
    """The error code `tool` must answer, or None when it must succeed."""
    if tool == "search_files" and row.dir_tool_expect is not None:
        return row.dir_tool_expect
    if row.expect == FILE:
        return "not_a_directory" if tool == "search_files" else None
    if row.expect == DIR:
        return "not_a_file" if tool == "read_file" else None
    return row.expect


def assert_nothing_leaks(outcome: CallOutcome, user_path: str, tree: AttackTree) -> None:
    text = outcome.to_json()
    assert leaked_secrets(text) == [], text
    unquoted = json.loads(text)  # compare decoded strings, not JSON escapes
    flat = json.dumps(unquoted, ensure_ascii=False).replace(json.dumps(user_path, ensure_ascii=False)[1:-1], "")
    assert str(tree.base) not in flat, f"a host path the caller did not write: {flat}"
    for name in DENIED_NAMES:
        if unicodedata.normalize("NFKC", name).casefold() not in unicodedata.normalize("NFKC", user_path).casefold():
            assert f'{name}"' not in flat and f"{name}/" not in flat, f"denied name {name!r} in {flat}"


def assert_success(outcome: CallOutcome, tool: str) -> None:
    payload = outcome.payload
    if tool == "read_file":
        assert INSIDE_MARKER in payload["content"]
    elif tool == "search_text":
        assert any(INSIDE_MARKER in match["text"] for match in payload["matches"])
    elif tool == "count_lines":
        assert payload["files"] >= 1 and payload["total_lines"] >= 1
    else:
        assert payload["files"], "a directory of the tree lists at least one file"


@pytest.mark.parametrize("row", ROWS)
@pytest.mark.parametrize("tool", TOOLS)
def test_attack_row_is_answered_exactly_by_every_tool_without_leaking(
    row: Row, tool: str, backend_ws: Workspace, attack_tree: AttackTree
) -> None:
    if row.path == "devnode" and not attack_tree.has_device_node:
        pytest.skip("creating a device node needs CAP_MKNOD, which this environment does not grant")
    path = expand(row.path, attack_tree)
    outcome = call_bounded(backend_ws, tool, arguments(tool, path))
    code = expected_code(row, tool)
    if code is None:
        assert not outcome.is_error, outcome.payload
        assert_success(outcome, tool)
    else:
        assert outcome.is_error, outcome.payload
        error = outcome.payload["error"]
        assert (error["code"], error["category"]) == (code, CATEGORY[code]), error
        assert error["retryable"] is False
    assert_nothing_leaks(outcome, path, attack_tree)


def test_attack_table_has_more_than_sixty_rows() -> None:
    assert len(ROWS) >= 60
