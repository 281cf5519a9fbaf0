"""The house rules of docs/architecture.md that a reader relies on: no import circles, modules of
a size one can read, and no generated file to keep in step."""

from __future__ import annotations

import ast
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"
MAX_LINES = 600
MAX_CLI_LINES = 500  # a command-line module, or a command's feature (commands/)


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        name = ".".join(path.relative_to(SRC).with_suffix("").parts)
        found[name.removesuffix(".__init__")] = path
    return found


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """The project modules a module imports, wherever the import stands: at the top, deferred into
    a function (a deferred import hides a circle from Python, not from the reader), or under ``if
    TYPE_CHECKING`` (a type named across a circle ties the two modules as firmly as a call)."""
    tree = ast.parse(path.read_text())
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            submodules = {f"{node.module}.{alias.name}" for alias in node.names} & set(modules)
            found |= submodules
            if len(submodules) < len(node.names):  # a name defined in the module itself
                found.add(node.module)
    return found & set(modules)


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while (top := stack.pop()) != module:
                component.append(top)
            if component:
                circles.append(sorted([module, *component]))

    for module in graph:
        if module not in index:
            visit(module)
    return circles


def test_no_import_circles() -> None:
    modules = _modules()
    graph = {name: _imports(path, modules) for name, path in modules.items()}
    assert _circles(graph) == []


def test_the_circle_finder_finds_a_circle() -> None:
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_an_import_deferred_into_a_function_counts(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    import a\n")
    (tmp_path / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import d\n")
    (tmp_path / "d.py").write_text("from c import x\n")
    modules = {name: tmp_path / f"{name}.py" for name in "abcd"}
    graph = {name: _imports(path, modules) for name, path in modules.items()}
    assert graph == {"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"c"}}
    assert _circles(graph) == [["a", "b"], ["c", "d"]]


def test_long_modules_say_why_and_command_line_modules_stay_short() -> None:
    long_unexplained = []
    for name, path in _modules().items():
        lines = len(path.read_text().splitlines())
        docstring = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_LINES and f"Longer than {MAX_LINES} lines" not in docstring:
            long_unexplained.append((name, lines))
        if name.startswith(("gdsdoctor.cli.", "gdsdoctor.commands.")):
            assert lines <= MAX_CLI_LINES, (name, lines)
    assert long_unexplained == []


def test_no_generated_file_is_tracked() -> None:
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=False
    ).stdout.split()
    if not tracked:  # not a git checkout (an sdist): nothing to check
        return
    generated = [p for p in tracked if p.endswith((".pack.json", ".pack.trees", ".whl", ".pyc"))]
    assert generated == [] and "src/gdsdoctor/rules.json" not in tracked
