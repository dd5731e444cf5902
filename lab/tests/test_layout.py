"""The lab's layout: one package per experiment with the same module roles, and no import cycles."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

PGLAB = Path(__file__).resolve().parents[1] / "pglab"
EXPERIMENTS = sorted(p for p in (PGLAB / "experiments").iterdir() if (p / "__init__.py").exists())
# Every experiment has these modules; plots.py too, since every experiment draws.
ROLES = ("command", "options", "runner", "analysis", "report", "plots")


def module_name(path: Path) -> str:
    parts = path.relative_to(PGLAB.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> set[str]:
    """pglab modules that `path` imports, at module level or inside functions."""
    found: set[str] = set()
    package = module_name(path).rsplit(".", 1)[0] if path.name != "__init__.py" else module_name(path)
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("pglab"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + [base])
            if not base.startswith("pglab"):
                continue
            for alias in node.names:  # "from pglab.x import y": y may be a module
                candidate = f"{base}.{alias.name}"
                found.add(candidate if (PGLAB.parent / (candidate.replace(".", "/") + ".py")).exists()
                          else base)
    return found


def test_every_experiment_has_the_same_module_roles() -> None:
    assert EXPERIMENTS
    for package in EXPERIMENTS:
        missing = [role for role in ROLES if not (package / f"{role}.py").exists()]
        assert not missing, f"{package.name} lacks {missing}"


@pytest.mark.parametrize("package", EXPERIMENTS, ids=lambda p: p.name)
def test_every_command_module_registers_the_same_way(package: Path) -> None:
    command = importlib.import_module(f"pglab.experiments.{package.name}.command")
    assert isinstance(command.NAME, str)
    assert callable(command.add_parser) and callable(command.command)
    from pglab import cli

    assert command in cli.COMMANDS


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    graph = {module_name(p): imports_of(p) for p in PGLAB.rglob("*.py")}
    cycles = []
    for start in graph:
        stack = [(start, [start])]
        seen: set[str] = set()
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    cycles.append(" -> ".join([*path, nxt]))
                elif nxt not in seen and nxt in graph:
                    seen.add(nxt)
                    stack.append((nxt, [*path, nxt]))
    assert not cycles, "import cycles:\n" + "\n".join(sorted(set(cycles)))


def test_the_cli_imports() -> None:
    importlib.import_module("pglab.cli")
