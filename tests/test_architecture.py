"""The layers stay visible: no package-level import cycle, no reaching into another package's `_private`
parts, and only the few upward imports named below.

Every module under server/repo_sandbox is parsed with `ast`; imports inside functions and under
`TYPE_CHECKING` count like any other. A "unit" is a top-level package or root module of repo_sandbox.
Run this file as a script (`python tests/test_architecture.py`) to print the numbers.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

PACKAGE = "repo_sandbox"
SOURCE = Path(__file__).resolve().parents[1] / "server" / PACKAGE

# The declared layer order, lowest first. A unit may import units of its own layer or below.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset({"errors", "calls", "meter", "stdout", "testing", "heap", "__init__"}),
    frozenset({"shell"}),
    frozenset({"policy"}),
    frozenset({"config"}),
    frozenset({"fs"}),
    frozenset({"tree"}),
    frozenset({"audit"}),
    frozenset({"workspace"}),
    frozenset({"engine", "exec"}),
    frozenset({"tools"}),
    frozenset({"runtime"}),
    # MCP wiring: the server assembled from everything below, then the transports that carry it.
    frozenset({"wiring", "roots"}),
    frozenset({"transports"}),
    frozenset({"serving", "cli", "bridge", "entry", "__main__"}),
)

# (importer module, imported module) -> why this import runs up a layer. At most five.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}

MAX_UPWARD = 5


@dataclass(frozen=True)
class Import:
    importer: str  # dotted module name of the importing file
    target: str  # dotted module name imported from
    names: tuple[str, ...]  # names imported from `target` (empty for `import x.y`)
    line: int


def module_name(path: Path) -> str:
    parts = path.relative_to(SOURCE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(SOURCE.rglob("*.py"))}


def _resolve(importer: str, is_package: bool, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = importer.split(".") if is_package else importer.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def imports_of(module: str) -> Iterator[Import]:
    path = modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    yield Import(module, alias.name, (), node.lineno)
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, path.name == "__init__.py", node)
            if target.split(".")[0] != PACKAGE:
                continue
            names = tuple(alias.name for alias in node.names)
            submodules = [name for name in names if f"{target}.{name}" in modules()]
            for name in submodules:  # `from pkg import module` imports the module
                yield Import(module, f"{target}.{name}", (), node.lineno)
            rest = tuple(name for name in names if name not in submodules)
            if rest or not submodules:
                yield Import(module, target, rest, node.lineno)


@cache
def all_imports() -> tuple[Import, ...]:
    return tuple(found for module in modules() for found in imports_of(module))


def unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def layer(name: str) -> int:
    for index, members in enumerate(LAYERS):
        if name in members:
            return index
    raise KeyError(name)


def unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {unit(module): set() for module in modules()}
    for found in all_imports():
        if unit(found.importer) != unit(found.target):
            graph[unit(found.importer)].add(unit(found.target))
    return graph


def cycles() -> list[tuple[str, ...]]:
    """Groups of units that reach each other through imports (strongly connected, more than one unit)."""
    graph = unit_graph()

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph[todo.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reached = {name: reach(name) for name in graph}
    groups = {tuple(sorted({name} | {o for o in reached[name] if name in reached[o]})) for name in graph}
    return sorted(group for group in groups if len(group) > 1)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_imports() -> list[Import]:
    """Imports of another unit's underscore-prefixed module or name."""
    return [
        found
        for found in all_imports()
        if unit(found.importer) != unit(found.target)
        and (any(_private(part) for part in found.target.split(".")) or any(_private(n) for n in found.names))
    ]


def upward_imports() -> dict[tuple[str, str], list[int]]:
    """(importer, imported module) -> lines, for imports of a unit in a higher layer."""
    found_up: dict[tuple[str, str], list[int]] = {}
    for found in all_imports():
        if layer(unit(found.importer)) < layer(unit(found.target)):
            found_up.setdefault((found.importer, found.target), []).append(found.line)
    return found_up


def test_every_unit_has_a_layer() -> None:
    declared = set().union(*LAYERS)
    undeclared = sorted({unit(module) for module in modules()} - declared)
    assert not undeclared, f"place these in LAYERS: {undeclared}"


def test_no_package_level_cycle() -> None:
    graph = unit_graph()
    found = list(cycles())
    detail = [
        f"{group}: " + ", ".join(f"{a}->{b}" for a in group for b in sorted(graph[a]) if b in group) for group in found
    ]
    assert not found, "\n".join(detail)


def test_no_cross_package_private_import() -> None:
    found = private_imports()
    lines = [f"{f.importer}:{f.line} imports {f.target} {f.names or ''}" for f in found]
    assert not found, "\n".join(lines)


def test_upward_imports_are_few_and_named() -> None:
    found = upward_imports()
    unlisted = sorted(set(found) - set(ALLOWED_UPWARD))
    stale = sorted(set(ALLOWED_UPWARD) - set(found))
    assert not unlisted, "upward imports not in ALLOWED_UPWARD:\n" + "\n".join(f"{a} -> {b}" for a, b in unlisted)
    assert not stale, f"ALLOWED_UPWARD entries no longer used: {stale}"
    assert len(ALLOWED_UPWARD) <= MAX_UPWARD


def test_the_parser_sees_function_level_and_type_checking_imports() -> None:
    in_function = {f.target for f in imports_of(f"{PACKAGE}.policy.exec_model")}
    type_checking = {f.target for f in imports_of(f"{PACKAGE}.policy.commands")}
    assert f"{PACKAGE}.policy.commands" in in_function
    assert f"{PACKAGE}.policy.exec_model" in type_checking
    assert len(all_imports()) > 400


if __name__ == "__main__":
    graph = unit_graph()
    print("cycles:", len(cycles()))
    for group in cycles():
        print("  ", group, [f"{a}->{b}" for a in group for b in sorted(graph[a]) if b in group])
    up = upward_imports()
    print("upward:", len(up))
    for (importer, target), lines in sorted(up.items()):
        print(f"   {importer}:{lines} -> {target}")
    private = private_imports()
    print("private:", len(private))
    for f in private:
        print(f"   {f.importer}:{f.line} -> {f.target} {f.names}")
