"""The shared semantic table: every row runs against each engine, which must give the same result.

Engines: "ripgrep" (rg found and confined), "python" (the built-in engine, chosen by config) and "hidden"
(engine "auto" with no rg to be found: the run without rg). Each row's result under every engine must equal
the Python engine's, and the rows with a `golden` value must equal it too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from repo_sandbox.config.loader import load_settings
from repo_sandbox.engine import rgprocess, ripgrep, select
from repo_sandbox.engine.rgsearch import SWITCH_LINES
from repo_sandbox.tools.search_text import SearchTextArgs, SearchTextContentResult, search_text
from repo_sandbox.tree import facts
from repo_sandbox.workspace import Workspace
from tree_files import write_tree

ENGINES = ("ripgrep", "python", "hidden")
MANY = SWITCH_LINES + 700
"""Hits of 'needle' in many.txt: more than the unsorted rg run collects, so the sorted stream answers."""


def _tree(root: Path) -> Path:
    files: dict[str, str | bytes] = {
        "a.py": "import os\ndef main():\n    return os.name  # TODO\n",
        "b.txt": "Alpha\nalpha\nALPHA\nÉcole école ÉCOLE\nstraße STRASSE\n",
        "crlf.txt": "one TODO\r\ntwo\r\n",
        "bom.txt": b"\xef\xbb\xbfimport first\nsecond TODO\n",
        "nonl.txt": "last line TODO",
        "latin1.txt": "caf\xe9 TODO\n".encode("latin-1"),
        "binary.dat": b"TODO\x00\x01\x02" * 10,
        "noise.dat": bytes(range(128, 256)) * 4 + b"\x00" + bytes(range(128, 256)) * 4,
        "late_nul.txt": b"TODO early\n" + b"x" * 9000 + b"\nTODO\x00late\n",
        "late_nul_big.txt": b"TODO early\n" + (b"y" * 99 + b"\n") * 800 + b"\x00\nTODO after\n",
        "empty.txt": "",
        "meta.txt": "a.b(c)\na+b\n[x]\n{brace}\n-e flag\n--help\n",
        "ctx.txt": "".join(f"c{i}{' HIT' if i in (5, 7, 20) else ''}\n" for i in range(1, 21)),
        "many.txt": "".join("needle\n" if i % 2 else "hay\n" for i in range(2 * MANY)),
        "-dash.txt": "dash TODO\n",
        "sub/deep/x.py": "def f():\n    pass  # TODO\n",
        "sub/deep/y.md": "# TODO docs\n",
        "sub/x.py": "x = 1  # TODO\n",
        "sub-b/z.py": "z = 2  # TODO\n",
        "greek.txt": "αβγ δ\nabc\n",
        "digits.txt": "a1 b22 c333\n",
        "sets.txt": "bcd\nbad\na&b\n[x]\n",
        ".hidden/h.txt": "hidden TODO\n",
        ".env": "SECRET=TODO\n",
        "ignored/i.txt": "ignored TODO\n",
        "kept.log": "kept TODO\n",
        "other.log": "other TODO\n",
        ".gitignore": "ignored/\n*.log\n!kept.log\n",
    }
    return write_tree(root, files)


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tree(tmp_path_factory.mktemp("semantics") / "repo")


def _workspace(root: Path, engine: str, **search: Any) -> Workspace:
    overrides: dict[tuple[str, str], Any] = {("workspace", "root"): str(root)}
    if engine == "ripgrep":
        overrides[("search", "engine")] = "ripgrep"
    elif engine == "python":
        overrides[("search", "engine")] = "python"
    else:
        overrides[("search", "ripgrep_path")] = str(root / "no-such-rg")
    for key, value in search.items():
        overrides[("search", key)] = value
    return Workspace(load_settings(None, env={}, overrides=overrides))


@pytest.fixture(params=ENGINES)
def engine_ws(request: pytest.FixtureRequest, tree: Path) -> Iterator[Workspace]:
    ws = _workspace(tree, request.param)
    expected = {"ripgrep": "ripgrep", "python": "python", "hidden": "python"}[request.param]
    if expected == "ripgrep" and ripgrep.locate() is None:
        pytest.fail("no rg found: the ripgrep wheel is a dependency of this project on Linux")
    assert select.report(ws)["engine"] == expected
    yield ws
    ws.close()


@pytest.fixture  # per test: a paged search keeps its run (and the directory it holds open) in the workspace
def reference(tree: Path) -> Iterator[Workspace]:
    ws = _workspace(tree, "python")
    yield ws
    ws.close()


CASES: list[tuple[str, dict[str, Any], Any]] = [
    # -- matching ---------------------------------------------------------------------------------
    ("literal", {"pattern": "TODO"}, None),
    ("regex class", {"pattern": r"def \w+\("}, None),
    ("fixed strings keep metacharacters", {"pattern": "a.b(c)", "fixed_strings": True}, [("meta.txt", 1)]),
    ("escaped brace", {"pattern": r"\{brace\}"}, [("meta.txt", 4)]),
    ("pattern that looks like a flag", {"pattern": "-e"}, [("meta.txt", 5)]),
    ("pattern that looks like a long flag", {"pattern": "--help"}, [("meta.txt", 6)]),
    (
        "case-insensitive ASCII",
        {"pattern": "alpha", "case_sensitive": False},
        [("b.txt", 1), ("b.txt", 2), ("b.txt", 3)],
    ),
    ("case-insensitive Unicode", {"pattern": "école", "case_sensitive": False}, [("b.txt", 4)]),
    ("simple case folding only", {"pattern": "STRASSE", "case_sensitive": False}, [("b.txt", 5)]),
    ("unicode property", {"pattern": r"\p{Greek}+"}, [("greek.txt", 1)]),
    ("digits", {"pattern": r"\d{3}"}, [("digits.txt", 1)]),
    ("word boundary", {"pattern": r"\bos\b"}, [("a.py", 1), ("a.py", 3)]),
    ("start of text is start of line", {"pattern": r"\Aimport"}, [("a.py", 1), ("bom.txt", 1)]),
    ("end of text is end of line", {"pattern": r"TODO\z", "path": "sub"}, [("sub/deep/x.py", 2), ("sub/x.py", 1)]),
    ("dollar before CR does not match", {"pattern": r"TODO$", "path": "crlf.txt"}, []),
    ("empty lines", {"pattern": "^$", "path": "ctx.txt"}, []),
    ("class intersection", {"pattern": "^[a-z&&[^aeiou]]+$", "glob": "sets.txt"}, [("sets.txt", 1)]),
    ("class difference", {"pattern": "^[a-d--a]+$", "glob": "sets.txt"}, [("sets.txt", 1)]),
    ("nested class is a union", {"pattern": "[&[\\[]]", "glob": "sets.txt"}, [("sets.txt", 3), ("sets.txt", 4)]),
    ("class sets in a named file", {"pattern": "^[a-z&&[^aeiou]]+$", "path": "sets.txt"}, [("sets.txt", 1)]),
    ("class sets, case-insensitive", {"pattern": "^[A-Z&&[^AEIOU]]+$", "case_sensitive": False}, [("sets.txt", 1)]),
    ("braced code point", {"pattern": "\\u{e9}cole|\\x{C9}COLE"}, [("b.txt", 4)]),
    ("braced code point, eight digits", {"pattern": "\\U{3b1}\\U{3B2}"}, [("greek.txt", 1)]),
    ("word start and end", {"pattern": "\\<os\\>", "glob": "*.py"}, [("a.py", 1), ("a.py", 3)]),
    ("special word boundaries", {"pattern": "\\b{start}os\\b{end}", "glob": "*.py"}, [("a.py", 1), ("a.py", 3)]),
    ("half word boundaries", {"pattern": "\\b{start-half}name\\b{end-half}"}, [("a.py", 3)]),
    ("escaped punctuation", {"pattern": "\\-\\-help"}, [("meta.txt", 6)]),
    ("posix classes are ASCII", {"pattern": "^[[:alpha:]]+ ", "glob": "b.txt"}, []),  # not École, straße
    ("legacy encoding is text", {"pattern": "^caf", "glob": "latin1.txt"}, [("latin1.txt", 1)]),
    # -- files --------------------------------------------------------------------------------------
    ("bom, no final newline, latin-1", {"pattern": "TODO|import first", "glob": "{bom,nonl,latin1}.txt"}, None),
    ("dot never matches an invalid byte", {"pattern": "caf. TODO"}, []),
    ("non-word never matches an invalid byte", {"pattern": r"\W TODO", "path": "latin1.txt"}, []),
    ("negated class never matches an invalid byte", {"pattern": "caf[^x]", "path": "."}, []),
    ("U+FFFD in a pattern is not an invalid byte", {"pattern": "caf\ufffd"}, []),
    ("invalid bytes shown as U+FFFD", {"pattern": "TODO", "glob": "latin1.txt", "context": 1}, [("latin1.txt", 1)]),
    ("late NUL makes a file report nothing", {"pattern": "TODO", "glob": "late_*"}, []),
    ("a file named like a flag", {"pattern": "dash"}, [("-dash.txt", 1)]),
    ("single file path", {"pattern": "TODO", "path": "crlf.txt"}, [("crlf.txt", 1)]),
    ("subdirectory, path order across a-b", {"pattern": "TODO", "glob": "*.py"}, None),
    ("glob with a slash", {"pattern": "TODO", "glob": "sub/**/*.py"}, [("sub/deep/x.py", 2), ("sub/x.py", 1)]),
    ("negated glob", {"pattern": "TODO", "glob": "!*.{py,txt,log}"}, [("sub/deep/y.md", 1)]),
    ("hidden on", {"pattern": "TODO", "include_hidden": True}, None),
    ("ignored on", {"pattern": "TODO", "include_ignored": True}, None),
    # -- modes, context, paging -----------------------------------------------------------------------
    ("context overlaps", {"pattern": "HIT", "context": 2}, None),
    ("count mode", {"pattern": "TODO|needle", "output_mode": "count"}, None),
    ("files mode", {"pattern": "TODO", "output_mode": "files_with_matches"}, None),
    ("files mode paged", {"pattern": "TODO", "output_mode": "files_with_matches", "limit": 3, "offset": 2}, None),
    ("content paged", {"pattern": "TODO", "limit": 4, "offset": 3}, None),
    ("many hits, first page", {"pattern": "needle", "limit": 50}, None),
    ("many hits, later page", {"pattern": "needle", "limit": 20, "offset": MANY - 10}, None),
    ("many hits, count mode", {"pattern": "needle|TODO", "output_mode": "count", "limit": 2}, None),
]


def _content(result: Any) -> SearchTextContentResult:
    assert isinstance(result, SearchTextContentResult)
    return result


def _rows(result: Any) -> list[tuple[str, int]]:
    return [(m.path, m.line) for m in result.matches]


@pytest.fixture
def rg_spawns(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """The argv of every rg the engine starts."""
    spawned: list[list[str]] = []
    real_init = rgprocess.RgProcess.__init__

    def counting_init(self: rgprocess.RgProcess, argv: list[str], *args: Any, **kwargs: Any) -> None:
        spawned.append(argv)
        real_init(self, argv, *args, **kwargs)

    monkeypatch.setattr(rgprocess.RgProcess, "__init__", counting_init)
    return spawned


@pytest.mark.parametrize(("name", "arguments", "golden"), CASES, ids=[c[0] for c in CASES])
def test_every_engine_gives_the_python_engines_result(
    engine_ws: Workspace,
    reference: Workspace,
    rg_spawns: list[list[str]],
    name: str,
    arguments: dict[str, Any],
    golden: Any,
) -> None:
    args = SearchTextArgs.model_validate({"limit": 1000, **arguments})
    result = search_text(engine_ws, args)
    uses_rg = select.report(engine_ws)["engine"] == "ripgrep" and not arguments.get("path", "").endswith(".txt")
    assert bool(rg_spawns) == uses_rg  # the ripgrep rows really ran rg (no silent fallback)
    rg_spawns.clear()
    assert result == search_text(reference, args), name
    assert not rg_spawns
    if golden is not None:
        assert _rows(result) == golden


def test_the_table_covers_what_it_claims(reference: Workspace) -> None:
    many = search_text(reference, SearchTextArgs(pattern="needle", limit=50))
    assert (many.truncated, many.total_matches >= 50) == (True, True)
    late = search_text(reference, SearchTextArgs(pattern="x", glob="late_*"))
    assert (late.files_searched, late.skipped_binary) == (2, 0)
    everything = search_text(reference, SearchTextArgs(pattern="TODO", limit=1000))
    assert everything.skipped_binary == 2
    assert all(not m.path.startswith((".env", "ignored/", "other.log")) for m in _content(everything).matches)
    ctx = search_text(reference, SearchTextArgs(pattern="HIT", context=2))
    assert [(m.line, m.before, m.after) for m in _content(ctx).matches][:2] == [
        (5, ["c3", "c4"], ["c6", "c7 HIT"]),
        (7, ["c5 HIT", "c6"], ["c8", "c9"]),
    ]


@pytest.mark.parametrize("engine", ENGINES)
def test_files_over_the_size_limit_are_counted_alike(tree: Path, engine: str) -> None:
    ws = _workspace(tree, engine)
    ws.settings.limits.max_file_bytes = 5000
    reference = _workspace(tree, "python")
    reference.settings.limits.max_file_bytes = 5000
    try:
        args = SearchTextArgs(pattern="TODO")
        result = search_text(ws, args)
        assert result == search_text(reference, args)
        assert result.skipped_too_large == 3  # many.txt and both late_nul files
    finally:
        ws.close()
        reference.close()


@pytest.mark.parametrize(
    ("gitignore", "runs"),
    [
        ("ignored/\n*.log\n!kept.log\n", 1),  # rules rg and git read alike: rg's own pruning is kept
        ("*.log\n!k*.log\n[io]gnored/\n", 2),  # a class and a negated wildcard: rerun with --no-ignore
    ],
)
def test_ignore_rules_ripgrep_would_read_differently_are_decided_by_the_walker(
    tmp_path: Path, rg_spawns: list[list[str]], gitignore: str, runs: int
) -> None:
    root = _tree(tmp_path / "repo")
    (root / ".gitignore").write_text(gitignore)
    rg_ws, py_ws = _workspace(root, "ripgrep"), _workspace(root, "python")
    try:
        args = SearchTextArgs(pattern="TODO", limit=1000)
        result = search_text(rg_ws, args)
        assert len(rg_spawns) == runs
        assert ("--no-ignore" in rg_spawns[-1]) == (runs == 2)
        assert result == search_text(py_ws, args)
        assert "kept.log" in [m.path for m in _content(result).matches]
    finally:
        rg_ws.close()
        py_ws.close()


def test_the_status_resource_names_the_engine_and_the_rg_binary(tree: Path) -> None:
    from repo_sandbox.runtime.assembly import AgentLoopState
    from repo_sandbox.wiring.resources import Caller, status_document

    for engine, expected in (("ripgrep", "ripgrep"), ("hidden", "python")):
        ws = _workspace(tree, engine)
        try:
            search = status_document(ws, AgentLoopState.from_workspace(ws), Caller("s", can_elicit=False), {})["search"]
        finally:
            ws.close()
        assert search["engine"] == expected
        if expected == "ripgrep":
            assert search["ripgrep"]["version"] >= "13" and "path" not in search["ripgrep"]
        else:
            assert search["ripgrep"] is None


@pytest.mark.parametrize(("engine", "racy_ns"), [("ripgrep", facts.RACY_NS), ("ripgrep", -1), ("python", 0)])
def test_a_file_rewritten_between_searches_is_seen_as_it_is_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, engine: str, racy_ns: int
) -> None:
    """The ripgrep engine remembers sniffed kinds by identity and change time (racy_ns -1: even of files
    changed just now); a rewrite must show."""
    monkeypatch.setattr(facts, "RACY_NS", racy_ns)
    root = tmp_path / "repo"
    root.mkdir()
    target = root / "f.txt"
    target.write_text("TODO one\n")
    ws = _workspace(root, engine)
    try:
        args = SearchTextArgs(pattern="TODO")
        assert search_text(ws, args).total_matches == 1
        target.write_bytes(b"TODO\x00binary now\n")  # same size class, new content: now binary
        result = search_text(ws, args)
        assert (result.total_matches, result.skipped_binary) == (0, 1)
        target.write_text("TODO text again, longer\nTODO\n")
        result = search_text(ws, args)
        assert (result.total_matches, result.skipped_binary, result.files_searched) == (2, 0, 1)
        os.link(target, tmp_path / "outside-link")  # a second hard link: the policy refuses the file
        result = search_text(ws, args)
        assert (result.total_matches, result.files_searched) == (0, 0)
    finally:
        ws.close()


@pytest.mark.parametrize("rgignore", [False, True])
def test_ignore_files_that_only_ripgrep_would_read_change_nothing(tmp_path: Path, rgignore: bool) -> None:
    root = _tree(tmp_path / "repo")
    (root / "rules.txt").write_text("*.py\ndeep/\n")
    (root / "sub" / ".gitignore").symlink_to(root / "rules.txt")
    if rgignore:
        (root / ".rgignore").write_text("*.txt\n")
    rg_ws, py_ws = _workspace(root, "ripgrep"), _workspace(root, "python")
    try:
        args = SearchTextArgs(pattern="TODO", limit=1000)
        result = search_text(rg_ws, args)
        assert result == search_text(py_ws, args)
        paths = [m.path for m in _content(result).matches]
        assert "sub/x.py" in paths and "sub/deep/x.py" in paths and "crlf.txt" in paths
    finally:
        rg_ws.close()
        py_ws.close()
