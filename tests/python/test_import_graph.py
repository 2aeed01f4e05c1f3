"""The Python package in floors (issue 65): the library (kasoku/__init__, errors, sched, multiparty, bigint, ...) <
kasoku.nn < kasoku.service (the server, ks.Client, the Ray executor) < the command line (kasoku.cli, kasoku/__main__).
Read from the source with ast, every import of a kasoku module, at module level or inside a function: none goes to a
higher floor, none closes a loop, and an import inside a function is there for an optional dependency (listed below
with its reason), never to break a loop."""

from __future__ import annotations

import ast
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "python" / "kasoku"

FLOORS = {0: "library", 1: "kasoku.nn", 2: "kasoku.service", 3: "the command line"}
# The command line's floor outside kasoku/cli: the entry of python -m kasoku.
CLI_OUTSIDE_CLI = {"kasoku.__main__"}
EXTENSIONS = {"kasoku._kasoku"}  # compiled (nanobind): the bottom of the library floor, it imports no kasoku module

# The one import of a higher floor: ks.Client, the module __getattr__ of kasoku/__init__.py that loads the service's
# client at its first use.
LAZY_ATTRIBUTE = ("kasoku", "kasoku.service.client")
# Every import of a kasoku module inside a function, and why it is not at module level. Nothing else may be there.
IN_FUNCTION = {
    LAZY_ATTRIBUTE: "ks.Client, a lazy attribute: the library imports nothing of the service when it is imported",
    ("kasoku.cli", "kasoku.service.app"): "python -m kasoku serve needs FastAPI and uvicorn (kasoku[serve])",
    ("kasoku.service.core.service", "kasoku.service.ray_executor"): "--executor ray needs Ray (kasoku[distributed])",
}


def floor(module: str) -> int:
    if module == "kasoku.cli" or module.startswith("kasoku.cli.") or module in CLI_OUTSIDE_CLI:
        return 3
    if module == "kasoku.service" or module.startswith("kasoku.service."):
        return 2
    if module == "kasoku.nn" or module.startswith("kasoku.nn."):
        return 1
    return 0


def modules(pkg: Path = PKG) -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its __init__.py)."""
    out = {}
    for path in sorted(pkg.rglob("*.py")):
        parts = list(path.relative_to(pkg.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@dataclass(frozen=True)
class Edge:
    source: str
    target: str
    function: str | None  # the enclosing function's name; None at module level (a class body runs at import too)
    line: int

    def __str__(self) -> str:
        where = f"in {self.function}()" if self.function else "at module level"
        return f"{self.source} imports {self.target} {where} (line {self.line})"


class _Imports(ast.NodeVisitor):
    def __init__(self, source: str, is_package: bool, known: set[str]):
        self.source, self.known = source, known
        self.package = source if is_package else source.rpartition(".")[0]
        self.function: str | None = None
        self.edges: list[Edge] = []
        self.unknown: list[str] = []

    def _edge(self, target: str, node: ast.AST) -> None:
        if target not in self.known:
            self.unknown.append(f"{self.source} line {node.lineno}: no module {target}")
        elif target != self.source:
            self.edges.append(Edge(self.source, target, self.function, node.lineno))

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "kasoku" or alias.name.startswith("kasoku."):
                self._edge(alias.name, node)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            if node.level > 1:
                base = base[: -(node.level - 1)]
            base_name = ".".join(base + ([node.module] if node.module else []))
        else:
            base_name = node.module or ""
        if not (base_name == "kasoku" or base_name.startswith("kasoku.")):
            return
        for alias in node.names:
            sub = f"{base_name}.{alias.name}"
            self._edge(sub if sub in self.known else base_name, node)  # a submodule, or a name of base's

    def _function(self, node) -> None:
        outer, self.function = self.function, self.function or node.name
        self.generic_visit(node)
        self.function = outer

    visit_FunctionDef = visit_AsyncFunctionDef = _function

    def visit_Lambda(self, node: ast.Lambda) -> None:
        outer, self.function = self.function, self.function or "<lambda>"
        self.generic_visit(node)
        self.function = outer


def imports_of(path: Path, source: str, is_package: bool, known: set[str]) -> _Imports:
    v = _Imports(source, is_package, known)
    v.visit(ast.parse(path.read_text(), filename=str(path)))
    return v


def graph(pkg: Path = PKG) -> tuple[list[Edge], list[str]]:
    mods = modules(pkg)
    known = set(mods) | EXTENSIONS
    edges, unknown = [], []
    for name, path in mods.items():
        v = imports_of(path, name, path.name == "__init__.py", known)
        edges += v.edges
        unknown += v.unknown
    return edges, unknown


def cycles(edges: list[Edge]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    succ: dict[str, set[str]] = {}
    for e in edges:
        succ.setdefault(e.source, set()).add(e.target)
        succ.setdefault(e.target, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(succ):
        if v not in index:
            visit(v)
    return out


def violations(pkg: Path = PKG) -> list[str]:
    """Everything wrong with the package's imports, one sentence each (empty: the floors hold)."""
    edges, problems = graph(pkg)
    for e in edges:
        if floor(e.target) > floor(e.source):
            if (e.source, e.target) == LAZY_ATTRIBUTE and e.function == "__getattr__":
                continue
            problems.append(
                f"upward: {e}: floor {floor(e.source)} ({FLOORS[floor(e.source)]}) may not import "
                f"floor {floor(e.target)} ({FLOORS[floor(e.target)]})"
            )
    for c in cycles([e for e in edges if e.function is None]):
        problems.append(f"a loop of module-level imports: {' <-> '.join(c)}")
    # An import moved into a function to break a loop is still a loop: count them all (the lazy attribute excepted:
    # it runs once kasoku is imported, from a name's first use).
    for c in cycles([e for e in edges if (e.source, e.target) != LAZY_ATTRIBUTE]):
        problems.append(f"a loop through imports inside functions: {' <-> '.join(c)}")
    for e in edges:
        if e.function and e.target not in EXTENSIONS and (e.source, e.target) not in IN_FUNCTION:
            problems.append(
                f"inside a function: {e}: move it to module level, or list it in IN_FUNCTION with its reason"
            )
    in_function = {(e.source, e.target) for e in edges if e.function}
    for pair in sorted(set(IN_FUNCTION) - in_function):
        problems.append(f"IN_FUNCTION lists {pair[0]} -> {pair[1]}, which no function imports: remove it")
    return problems


def test_the_floors_hold():
    problems = violations()
    assert not problems, "\n".join(problems)


def test_the_package_has_its_floors():
    mods = modules()
    by_floor: dict[int, set[str]] = {}
    for m in mods:
        by_floor.setdefault(floor(m), set()).add(m)
    assert {"kasoku", "kasoku.errors", "kasoku.sched", "kasoku.multiparty", "kasoku.bigint"} <= by_floor[0]
    assert {"kasoku.nn", "kasoku.nn.compiler", "kasoku.nn.runtime"} <= by_floor[1]
    assert {"kasoku.service.client", "kasoku.service.ray_executor", "kasoku.service.app"} <= by_floor[2]
    assert {"kasoku.__main__", "kasoku.cli", "kasoku.cli.bench", "kasoku.cli.demo"} <= by_floor[3]
    edges, _ = graph()
    assert len(edges) > 50  # the parser sees the package's imports


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root / "kasoku"


def test_the_check_sees_each_kind_of_violation(tmp_path):
    """A small package of each mistake: the check names it (and passes the same package without it)."""
    base = {
        "kasoku/__init__.py": "from . import errors\n"
        "def __getattr__(name):\n    from .service.client import Client\n    return Client\n",
        "kasoku/errors.py": "",
        "kasoku/sched.py": "from ._kasoku import sched as _s\n",
        "kasoku/nn/__init__.py": "import kasoku as ks\nfrom .ir import Affine\n",
        "kasoku/nn/ir.py": "import kasoku as ks\n",
        "kasoku/service/__init__.py": "",
        "kasoku/service/client.py": "from kasoku.errors import Error\nfrom . import wire\n",
        "kasoku/service/wire.py": "import kasoku as ks\nimport kasoku.nn as ksnn\n",
        "kasoku/service/app.py": "",
        "kasoku/service/ray_executor.py": "from .executors import Job\n",
        "kasoku/service/executors.py": "import kasoku as ks\n",
        "kasoku/service/core/__init__.py": "",
        "kasoku/service/core/service.py": "def make():\n    from ..ray_executor import RayExecutor\n",
        "kasoku/cli/__init__.py": "from kasoku.cli import bench\ndef main():\n    from kasoku.service import app\n",
        "kasoku/cli/bench.py": "import kasoku as ks\nfrom kasoku.service.client import graph_dict\n",
        "kasoku/__main__.py": "from kasoku.cli import main\n",
    }
    assert violations(_write(tmp_path / "ok", base)) == []

    def check(change: dict[str, str], expected: str) -> None:
        found = violations(_write(tmp_path / str(len(list(tmp_path.iterdir()))), {**base, **change}))
        assert any(expected in v for v in found), (expected, found)

    # the four loops of issue 65, each written the way it was
    check({"kasoku/sched.py": "def run():\n    from . import hardware_threads\n"}, "inside a function")
    check(
        {"kasoku/__init__.py": "from .service.client import Client\n"},
        "upward: kasoku imports kasoku.service.client at module level",
    )
    check(
        {"kasoku/service/executors.py": "def f():\n    from kasoku.service.core import service\n"},
        "a loop through imports inside functions",
    )
    check(
        {
            "kasoku/service/ray_executor.py": "from .core.service import make\n",
            "kasoku/service/core/service.py": "from ..ray_executor import RayExecutor\n",
        },
        "a loop of module-level imports: kasoku.service.core.service <-> kasoku.service.ray_executor",
    )
    # a higher floor, at module level and inside a function
    check({"kasoku/nn/ir.py": "from kasoku.service import wire\n"}, "upward: kasoku.nn.ir imports kasoku.service.wire")
    check({"kasoku/errors.py": "def f():\n    from kasoku.cli import bench\n"}, "upward: kasoku.errors imports")
    check({"kasoku/service/app.py": "import kasoku.cli\n"}, "upward: kasoku.service.app imports kasoku.cli")
    # a loop on one floor
    check({"kasoku/errors.py": "from kasoku import sched\n", "kasoku/sched.py": "from .errors import Error\n"}, "loop")
    # an import of a module that is not there (a moved one)
    check({"kasoku/service/app.py": "from kasoku.client import Client\n"}, "no module kasoku.client")
    # an in-function import nobody listed, and a listed one that is gone
    check({"kasoku/nn/ir.py": "def f():\n    from kasoku import errors\n"}, "inside a function: kasoku.nn.ir")
    check({"kasoku/service/core/service.py": ""}, "which no function imports")


def test_imports_outside_the_package_name_its_modules():
    """The tests, examples, scripts and benchmarks import kasoku's modules where they are (not where they were)."""
    known = set(modules()) | EXTENSIONS
    files = [
        p
        for d in ("tests", "examples", "scripts", "bench", "hw")
        for p in sorted((ROOT / d).rglob("*.py"))
        if not any(part.startswith(".") or part.startswith("venv") for part in p.relative_to(ROOT).parts)
    ]
    assert files
    unknown = []
    for path in files:
        unknown += imports_of(path, "__outside__", False, known).unknown
    assert unknown == []


def test_importing_kasoku_loads_the_library_only():
    """import kasoku loads no module of a higher floor; ks.Client loads the service's client at its first use."""
    code = (
        "import sys, kasoku as ks\n"
        "above = sorted(m for m in sys.modules if m.startswith(('kasoku.nn', 'kasoku.service', 'kasoku.cli')))\n"
        "assert above == [], above\n"
        "assert 'Client' in dir(ks) and 'Client' in ks.__all__\n"
        "from kasoku.service.client import Client\n"
        "assert ks.Client is Client and 'kasoku.service.client' in sys.modules\n"
        "from kasoku import Client as C\n"
        "assert C is Client\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("name", ["Nothing", "client"])
def test_an_unknown_attribute_is_still_an_attribute_error(name):
    import kasoku as ks

    with pytest.raises(AttributeError):
        getattr(ks, name)


def test_no_module_imports_another_modules_underscore_names():
    """A module's names with a leading underscore are its own: what another module of the package uses has a name
    without one (the compiled extension, kasoku._kasoku, aside: its classes are the library's to wrap)."""
    crossing = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.level or (node.module or "").startswith("kasoku")):
                continue
            if node.module and node.module.split(".")[-1] == "_kasoku":
                continue
            crossing += [f"{name} imports {a.name} from {node.module}" for a in node.names if a.name[:1] == "_"]
    assert not crossing, crossing
