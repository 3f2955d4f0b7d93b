"""The shape of the code: three wings (inputs, analysis, render) and a few
modules at the root, no import cycles, floors that only look down (the
inputs never reach the analysis or the outputs, the analysis never reaches
up to the outputs, nothing the fleet stands on reaches up to it), nobody
reaching into another package's private modules, state passed
explicitly, small modules, every detector id known only to the detectors
and the knowledge base, every list of input kinds and output formats made
from its registry, a core that imports without the optional extras, and a
command line that starts light."""
from __future__ import annotations

import ast
import collections
import functools
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "sarsleuth"
#: "no module over 450 lines"
MAX_MODULE_LINES = 450


def _modules() -> dict[str, Path]:
    out = {}
    for f in PACKAGE.rglob("*.py"):
        parts = list(f.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = f
    return out


@functools.lru_cache(maxsize=None)
def _tree(path: Path) -> ast.Module:
    """A module's syntax tree, parsed once for every test that reads it."""
    return ast.parse(path.read_text("utf-8"))


def _import_graph() -> dict[str, set]:
    """Every sarsleuth-internal import, lazy (inside functions) ones included
    (a fresh copy each time: a test may prune it)."""
    return {name: set(targets) for name, targets in _imports().items()}


@functools.lru_cache(maxsize=1)
def _imports() -> dict[str, frozenset]:
    mods = _modules()
    graph: dict = collections.defaultdict(set)
    for name, path in mods.items():
        for node in ast.walk(_tree(path)):
            targets = []
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("sarsleuth"):
                targets.append(node.module)
                targets += [f"{node.module}.{a.name}" for a in node.names if f"{node.module}.{a.name}" in mods]
            elif isinstance(node, ast.Import):
                targets += [a.name for a in node.names if a.name.startswith("sarsleuth")]
            for target in targets:
                while target and target not in mods:
                    target = target.rsplit(".", 1)[0] if "." in target else ""
                if target and target != name:
                    graph[name].add(target)
    return {name: frozenset(targets) for name, targets in graph.items()}


def _cycles(graph) -> list[list[str]]:
    index: dict = {}
    low: dict = {}
    stack: list = []
    on_stack: set = set()
    found: list = []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycles():
    graph = _import_graph()
    # a package's __init__ re-exporting its children is not a cycle
    for name in list(graph):
        graph[name] = {t for t in graph[name] if not (name.startswith(t + ".") or t.startswith(name + "."))}
    assert _cycles(graph) == []


def _room(module: str) -> str:
    """The room of a module: the top-level module or package of sarsleuth it
    is in (``sarsleuth`` itself for the package's face)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def _under(module: str, places) -> bool:
    return any(module == p or module.startswith(p + ".") for p in places)


#: The analysis: what a case means, told on the case's clock, and the data
#: model it is told in.  Outputs show it; it never asks them anything (a
#: zone, a format, how a notebook draws an incident).
ANALYSIS = ("sarsleuth.model", "sarsleuth.detectors", "sarsleuth.analysis.correlate", "sarsleuth.analysis.narrative", "sarsleuth.timebase")


def test_the_analysis_never_imports_the_outputs():
    graph = _import_graph()
    offenders = sorted(f"{m} -> {t}" for m, targets in graph.items() if _under(m, ANALYSIS)
                       for t in targets if _under(t, ("sarsleuth.render",)))
    assert offenders == []


#: The inputs wing: from what the user named to parsed sources.  It knows
#: nothing of what is made of them.
INPUTS = ("sarsleuth.inputs",)
ABOVE_INPUTS = ("sarsleuth.analysis", "sarsleuth.detectors", "sarsleuth.render", "sarsleuth.case",
                "sarsleuth.fleet", "sarsleuth.redaction", "sarsleuth.saved_cases", "sarsleuth.cli")
#: The wings and the other packages; at most this many modules stand at the
#: package root beside them.
WINGS = ("inputs", "analysis", "render")
MAX_ROOT_MODULES = 12


def test_the_inputs_never_import_the_analysis_or_the_outputs():
    graph = _import_graph()
    offenders = sorted(f"{m} -> {t}" for m, targets in graph.items() if _under(m, INPUTS)
                       for t in targets if _under(t, ABOVE_INPUTS))
    assert offenders == []


def test_the_package_root_holds_the_wings_and_a_few_modules():
    assert all((PACKAGE / wing / "__init__.py").is_file() for wing in WINGS)
    root = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(root) <= MAX_ROOT_MODULES, root


def test_nobody_reaches_into_another_package_s_private_modules():
    """A module named ``_x`` is its package's own: importing it from
    outside that package (the module's parent) ties the two together
    behind the back of their public names."""
    offenders = []
    for module, targets in _import_graph().items():
        for target in targets:
            leaf = target.rsplit(".", 1)[-1]
            if leaf.startswith("_") and not leaf.startswith("__"):
                owner = target.rsplit(".", 1)[0]
                if not (module == owner or module.startswith(owner + ".")):
                    offenders.append(f"{module} -> {target}")
    assert offenders == []


def test_no_context_variables():
    """A value a call depends on is passed to it: a ContextVar (or a module
    global set for the length of a call) hides it from whoever reads the
    call."""
    offenders = []
    for name, path in _modules().items():
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.Import) and any(a.name == "contextvars" for a in node.names):
                offenders.append(name)
            elif isinstance(node, ast.ImportFrom) and node.module == "contextvars":
                offenders.append(name)
            elif isinstance(node, (ast.Name, ast.Attribute)) and getattr(node, "id", getattr(node, "attr", "")) \
                    == "ContextVar":
                offenders.append(name)
    assert sorted(set(offenders)) == []


#: rooms the fleet stands on that still import it; an entry must go once it
#: no longer does, so the list can only shrink
STILL_BELOW_FLEET: set = set()


def test_nothing_the_fleet_stands_on_imports_it():
    """``fleet/`` analyses many hosts with what a single case uses: no room
    it reaches (directly or through others) may import it back (an arrow
    that runs back up a floor)."""
    rooms: dict = collections.defaultdict(set)
    for module, targets in _import_graph().items():
        for target in targets:
            if _room(module) != _room(target):
                rooms[_room(module)].add(_room(target))
    below, todo = set(), ["fleet"]
    while todo:
        for room in rooms.get(todo.pop(), ()):
            if room not in below and room != "fleet":
                below.add(room)
                todo.append(room)
    back = {room for room in below if "fleet" in rooms[room]}
    assert back - STILL_BELOW_FLEET == set()
    assert STILL_BELOW_FLEET - back == set(), "fixed: drop it from STILL_BELOW_FLEET"


def test_nothing_inside_reads_the_package_face():
    """``sarsleuth/__init__.py`` is the API's face and reaches up to the
    case (``load``): a module of the package that took a name from it
    (the version, say) would import the top from below."""
    mods = _modules()
    offenders = []
    for name, path in mods.items():
        if name == "sarsleuth":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom) and node.module == "sarsleuth":
                offenders += [f"{name}: {a.name}" for a in node.names if f"sarsleuth.{a.name}" not in mods]
            elif isinstance(node, ast.Import) and any(a.name == "sarsleuth" for a in node.names):
                offenders.append(f"{name}: import sarsleuth")
    assert offenders == []


#: modules still waiting for their split; an entry must go once its module is
#: short, so the list can only shrink
STILL_LONG: set = set()


def test_no_module_is_long():
    long = {str(p.relative_to(PACKAGE.parent)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text("utf-8").splitlines())) > MAX_MODULE_LINES}
    assert set(long) - STILL_LONG == set()
    assert STILL_LONG - set(long) == set(), "split: drop it from STILL_LONG"


#: modules that still name detector ids; an entry must go once it is clean
STILL_NAMING_DETECTORS: set = set()


def test_detector_ids_live_in_detectors_and_knowledge():
    from sarsleuth.detectors import registry
    ids = set(registry())
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE)
        if rel.parts[0] in ("detectors", "knowledge"):
            continue
        tree = _tree(path)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in ids:
                offenders.append(str(rel))
    assert set(offenders) - STILL_NAMING_DETECTORS == set()
    assert STILL_NAMING_DETECTORS - set(offenders) == set(), "clean: drop it from STILL_NAMING_DETECTORS"


def test_core_imports_and_analyses_without_optional_extras():
    """dask, duckdb, pyarrow and zstandard are extras, and hyperscan and isal
    have no wheel on some platforms: a case is read and analysed without any
    of them."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in {'dask', 'distributed', 'duckdb', 'hyperscan', 'isal', 'pyarrow', 'zstandard'}:\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import sarsleuth, sarsleuth.cli\n"
        f"case = sarsleuth.load({str(PACKAGE.parent / 'samples' / 'nginx-proxy-oom')!r})\n"
        "print(case.incidents[0].category)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "memory-exhaustion"


@pytest.mark.parametrize("module", ["sarsleuth.cli"])
def test_command_line_start_up_imports_nothing_heavy(module):
    code = (f"import sys, {module}\n"
            "heavy = sorted(m for m in ('pandas', 'numpy', 'matplotlib', 'lark', 'pyarrow') if m in sys.modules)\n"
            "print(','.join(heavy))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == ""


@pytest.mark.parametrize("name,kind", [("sa06", "sa"), ("sar06.txt", "sar-text"), ("messages", "syslog"),
                                       ("error.log", "nginx-error")])
def test_sniff_imports_nothing_heavy(name, kind):
    """``sarsleuth sniff`` reads a few KB of head: it must not pay for numpy
    or pandas (a tenth of a second each), whatever the kind of the file."""
    path = PACKAGE.parent / "samples" / "nginx-proxy-oom" / name
    code = ("import sys\n"
            "from sarsleuth.cli import main\n"
            f"sys.argv = ['sarsleuth', 'sniff', {str(path)!r}]\n"
            "try:\n"
            "    main()\n"
            "except SystemExit as exc:\n"
            "    assert not exc.code, exc.code\n"
            "heavy = sorted(m for m in ('pandas', 'numpy', 'matplotlib', 'lark', 'pyarrow') if m in sys.modules)\n"
            "print('heavy:' + ','.join(heavy))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == [f"{path}\t{kind}", "heavy:"]


def test_parse_of_an_sa_file_loads_no_case_and_no_progress_bar(tmp_path):
    """``parse`` of one file pays for reading and writing it: not for the
    case and its detectors (what ``--format openmetrics`` reads through),
    nor for rich while no bar is shown."""
    path = PACKAGE.parent / "samples" / "nginx-proxy-oom" / "sa06"
    code = ("import sys\n"
            "from sarsleuth.cli import run\n"
            f"assert run(['parse', '-q', {str(path)!r}, '-o', {str(tmp_path / 'out.csv')!r}]) == 0\n"
            "loaded = sorted(m for m in ('sarsleuth.case', 'sarsleuth.detectors', 'rich.progress', 'matplotlib')\n"
            "                if m in sys.modules)\n"
            "print('loaded:' + ','.join(loaded))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines() == ["loaded:"]
    assert (tmp_path / "out.csv").read_text().startswith("timestamp,host,section,device,metric,value\n")


def test_every_input_kind_is_in_the_schema_the_contract_and_the_readme():
    """The parser registry is the one list of input kinds: the JSON
    document's schema, CONTRACT.md and the README's table are written from
    it by ``tools/input_kinds.py``, and a kind missing from any fails here."""
    import json

    from sarsleuth.inputs.parsers import kinds
    root = PACKAGE.parent
    schema = json.loads((PACKAGE / "schema" / "analysis.schema.json").read_text("utf-8"))
    enum = schema["properties"]["sources"]["items"]["properties"]["kind"]["enum"]
    contract = (root / "CONTRACT.md").read_text("utf-8")
    readme = (root / "README.md").read_text("utf-8")
    for kind in kinds():
        assert kind in enum, f"{kind}: not in the schema's kind enum (run tools/input_kinds.py)"
        assert f"`{kind}`" in contract.split("<!-- input kinds")[1].split("-->", 2)[1], \
            f"{kind}: not in CONTRACT.md's kinds (run tools/input_kinds.py)"
        assert f"| `{kind}` |" in readme, f"{kind}: not in the README's table (run tools/input_kinds.py)"
    assert set(enum) == set(kinds())
    proc = subprocess.run([sys.executable, str(root / "tools" / "input_kinds.py"), "--check"], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stdout + proc.stderr


_USAGE_FORMATS = {"sarsleuth analyze PATH...": "case", "sarsleuth detectors": "table",
                  "sarsleuth compare REPORT...": "table", "sarsleuth parse PATH [": "rows", "sarsleuth sql DIR": "result"}


def test_the_readme_offers_the_formats_the_registry_has():
    """Each command's ``--format`` in the README's usage lists exactly the
    formats of the registry that write what the command shows."""
    import re

    from sarsleuth import render
    usage = (PACKAGE.parent / "README.md").read_text("utf-8")
    for command, shows in _USAGE_FORMATS.items():
        line = next(line for line in usage.splitlines() if line.strip().startswith(command))
        listed = re.search(r"--format ([a-z|]+)", line).group(1).split("|")
        assert sorted(listed) == sorted(render.names(shows)), (command, listed)

