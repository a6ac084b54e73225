"""lq's import layers (pyproject.toml's import-linter contracts) held by every import, the lazy ones inside functions
included (``lint-imports``, which ``make test`` runs first, reads only a module's own imports), and no import circle."""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGE = ROOT / "lq"


def _modules() -> dict[str, Path]:
    found = {}
    for file in PACKAGE.rglob("*.py"):
        parts = file.relative_to(ROOT).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = file
    return found


def _imports(name: str, file: Path, known: dict[str, Path]) -> set[str]:
    """The modules of lq that ``name`` imports anywhere in its file (a name imported from a package: its submodule of
    that name where there is one)."""
    package = name.split(".") if file.name == "__init__.py" else name.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(file.read_text(), str(file))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def _layer(module: str, layers: list[list[str]]) -> int | None:
    """The index of the layer ``module`` belongs to (0: the highest), or None."""
    for i, names in enumerate(layers):
        if any(module == n or module.startswith(f"{n}.") for n in names):
            return i
    return None


def _contracts() -> list[tuple[str, list[list[str]]]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    out = []
    for contract in config:
        if contract["type"] != "layers":
            continue
        for container in contract.get("containers", [""]):
            prefix = f"{container}." if container else ""
            layers = [[prefix + n.strip() for n in layer.split("|")] for layer in contract["layers"]]
            out.append((contract["name"], layers))
    return out


def test_no_import_anywhere_in_lq_goes_from_a_lower_layer_to_a_higher_one():
    known = _modules()
    contracts = _contracts()
    assert contracts, "pyproject.toml names no layers contract"
    upward = []
    for name, file in known.items():
        for target in _imports(name, file, known):
            for contract, layers in contracts:
                low, high = _layer(name, layers), _layer(target, layers)
                if low is not None and high is not None and high < low:
                    upward.append(f"{name} imports {target} ({contract})")
    assert not upward, "\n".join(upward)


def test_lq_has_no_import_circle_lazy_imports_included():
    known = _modules()
    graph = {name: {t for t in _imports(name, file, known) if known[t].name != "__init__.py"} for name, file in
             known.items() if file.name != "__init__.py"}  # fmt: skip
    index, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(node: str) -> None:  # Tarjan's strongly connected components
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    assert len(graph) > 50 and not circles, circles
