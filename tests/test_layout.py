"""The kit's imports run one way: no cycle anywhere, and `sdpa_course`'s packages in layers.

The import graph is read from the source (`ast`: imports at the top and inside functions
alike, since a deferred import still ties two modules together), over every module of
`sdpa_ref`, `autograder` and `sdpa_course`. Then a fresh interpreter imports every module in
dependency order, the modules a module needs before it: each must import cleanly there.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("sdpa_ref", "autograder", "sdpa_course")

# sdpa_course, bottom to top: a module may import the kit's modules of its own layer or below
# (as the package docstrings say). `sdpa_course` itself only holds the version.
LAYERS = (
    ("sdpa_course", "sdpa_course.errors", "sdpa_course.assignment",
     "sdpa_course.deferred_imports"),
    ("sdpa_course.engine_call",),
    ("sdpa_course.reports",),
    ("sdpa_course.nbgrader_ext",),
    ("sdpa_course.course",),
    ("sdpa_course.grading",),
    ("sdpa_course.platforms",),
    ("sdpa_course.demo",),
    ("sdpa_course.cli",),
)
# What the layer `reports` is made of: plain data in, text and files out.
NOT_IN_REPORTS = ("nbgrader", "nbconvert", "traitlets")
# Modules that need an optional extra (`sdpa-course[dask]`), skipped when it is missing.
OPTIONAL = {"sdpa_course.grading.dask_executor": "distributed",
            "sdpa_course.grading.dask_worker": "distributed"}


def kit_modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            modules[name.removesuffix(".__init__")] = path
    return modules


MODULES = kit_modules()


def _imported_names(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:  # relative: from the module's package, one level up per extra dot
        package = module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]
        parts = package.split(".")
        base = ".".join(parts[: len(parts) - node.level + 1])
        prefix = f"{base}.{node.module}" if node.module else base
    else:
        prefix = node.module or ""
    return [prefix] + [f"{prefix}.{alias.name}" for alias in node.names]


def _kit_module(name: str) -> str | None:
    """The kit's module that `import name` loads (`a.b.function` -> `a.b`), or None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def import_nodes(module: str):
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    return [node for node in ast.walk(tree) if isinstance(node, (ast.Import, ast.ImportFrom))]


def imports_of(module: str) -> set[str]:
    """The kit's modules `module` imports, anywhere in its source."""
    found = set()
    for node in import_nodes(module):
        for name in _imported_names(module, node):
            target = _kit_module(name)
            # a package's __init__ importing its own modules is how a package is made
            own = MODULES[module].name == "__init__.py" and (target or "").startswith(module + ".")
            if target and target != module and not own:
                found.add(target)
    return found


GRAPH = {module: imports_of(module) for module in MODULES}


def dependency_order() -> list[str]:
    return list(TopologicalSorter(GRAPH).static_order())


def layer_of(module: str) -> int:
    for index, layer in enumerate(LAYERS):
        if any(module == top or module.startswith(top + ".") for top in layer):
            return index
    raise AssertionError(f"{module} is in no layer of sdpa_course: add it to LAYERS")


def test_the_kit_has_no_import_cycle():
    try:
        dependency_order()
    except CycleError as err:
        pytest.fail(f"import cycle: {' -> '.join(err.args[1])}")


def test_the_graph_sees_imports_of_every_kind():
    # the reading of imports above is what the other tests trust: check it on known ones
    assert "sdpa_course.errors" in GRAPH["sdpa_course.cli"]
    assert "sdpa_course.grading.dask_executor" in GRAPH["sdpa_course.grading.grade"]  # deferred
    assert "autograder.sandbox.blocker" in GRAPH["autograder.sandbox.pool"]  # relative
    assert "autograder.engine" in GRAPH["sdpa_course.engine_call"]


@pytest.mark.parametrize("module", [m for m in MODULES if m.startswith("sdpa_course")])
def test_sdpa_course_imports_only_its_own_layer_or_below(module):
    upward = sorted(target for target in GRAPH[module]
                    if target.startswith("sdpa_course") and layer_of(target) > layer_of(module))
    assert not upward, f"{module} imports from a layer above it: {upward}"


def test_nothing_imports_the_command_line():
    assert not [module for module, targets in GRAPH.items() if "sdpa_course.cli" in targets]


def test_reports_are_made_without_nbgrader():
    for module in (m for m in MODULES if m.startswith("sdpa_course.reports")):
        for node in import_nodes(module):
            for name in _imported_names(module, node):
                assert name.split(".")[0] not in NOT_IN_REPORTS, f"{module} imports {name}"


def test_imports_inside_functions_say_why():
    """In every package of the kit, not only sdpa_course (the house rule is the kit's)."""
    lines_without_reason = []
    for path in MODULES.values():
        source = path.read_text().splitlines()
        tree = ast.parse("\n".join(source))
        for function in ast.walk(tree):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, (ast.Import, ast.ImportFrom)):
                    # its own line, or the comment above the block of imports it belongs to
                    first = node.lineno - 1
                    while first > 0 and source[first - 1].lstrip().startswith(("import ",
                                                                              "from ")):
                        first -= 1
                    said = " ".join(source[max(first - 1, 0): node.end_lineno])
                    if "deferred" not in said:
                        lines_without_reason.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not lines_without_reason, ("imports inside functions without a `# deferred: why` "
                                      f"comment: {lines_without_reason}")


def test_every_module_imports_in_dependency_order_in_a_fresh_interpreter():
    order = [m for m in dependency_order() if m in MODULES]
    script = (
        "import importlib, importlib.util, sys\n"
        f"optional = {OPTIONAL!r}\n"
        "for name in sys.argv[1:]:\n"
        "    needs = optional.get(name)\n"
        "    if needs and importlib.util.find_spec(needs) is None:\n"
        "        continue\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except Exception as err:\n"
        "        sys.exit(f'{name}: {type(err).__name__}: {err}')\n"
    )
    done = subprocess.run([sys.executable, "-c", script, *order], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


PACKAGES_OF_SDPA_COURSE = sorted(m for m, path in MODULES.items()
                                 if m.startswith("sdpa_course.") and path.name == "__init__.py")


@pytest.mark.parametrize("package", PACKAGES_OF_SDPA_COURSE)
def test_each_package_docstring_names_what_it_owns_and_may_import(package):
    docstring = ast.get_docstring(ast.parse(MODULES[package].read_text())) or ""
    assert "May import:" in docstring, f"{package}'s docstring does not say what it may import"
    owned = [m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == package]
    unnamed = [name for name in owned  # `name` or `name.something`
               if f"`{name}`" not in docstring and f"`{name}." not in docstring]
    assert not unnamed, f"{package}'s docstring does not name its modules {unnamed}"


def test_the_top_package_docstring_names_every_module_and_package_of_sdpa_course():
    docstring = ast.get_docstring(ast.parse(MODULES["sdpa_course"].read_text())) or ""
    direct = [m.split(".")[1] for m in MODULES
              if m.count(".") == 1 and m.startswith("sdpa_course.")]
    unnamed = [name for name in direct if f"`{name}" not in docstring]
    assert direct and not unnamed, f"sdpa_course's docstring does not name {unnamed}"
