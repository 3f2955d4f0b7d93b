"""The parser registry as sniffing sees it: every parser registered, and
nothing imported to sniff but the modules that hold parsers."""
from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import sarsleuth.inputs.parsers as parsers
from sarsleuth.inputs.parsers import registry
from sarsleuth.inputs.parsers.base import Parser
from sarsleuth.inputs.parsers.logs.lines import head_lines

SAMPLES = Path(__file__).resolve().parent.parent / "samples" / "nginx-proxy-oom"

#: Modules that read files, loaded only when a file is parsed.
READING_MODULES = ("sarsleuth.inputs.parsers.logs.scan", "sarsleuth.knowledge.signatures", "sarsleuth.model",
                   "sarsleuth.inputs.parsers.sa.layout", "sarsleuth.inputs.parsers.sa.reader", "sarsleuth.inputs.parsers.loadtest.ab",
                   "sarsleuth.inputs.parsers.loadtest.grammars", "sarsleuth.inputs.parsers.sadf.csv_reader",
                   "sarsleuth.inputs.parsers.sadf.assembly", "sarsleuth.inputs.parsers.sar_text.rows")


def _parser_kinds_of(module) -> set:
    return {obj.kind for obj in vars(module).values()
            if isinstance(obj, type) and issubclass(obj, Parser) and obj is not Parser and obj.kind
            and obj.__module__ == module.__name__}


def test_every_module_holding_a_parser_is_named_by_its_family():
    """A family's PARSER_MODULES is what the registry imports: a parser in a
    module left out of it would never be sniffed nor read."""
    found = {}
    for family in pkgutil.iter_modules(parsers.__path__, prefix="sarsleuth.inputs.parsers."):
        if not family.ispkg:
            continue
        package = importlib.import_module(family.name)
        named = getattr(package, "PARSER_MODULES", None)
        assert named is not None, f"{family.name} names no PARSER_MODULES"
        for info in pkgutil.walk_packages(package.__path__, prefix=f"{family.name}."):
            if info.ispkg:
                continue
            kinds = _parser_kinds_of(importlib.import_module(info.name))
            leaf = info.name.rsplit(".", 1)[-1]
            if kinds and info.name.count(".") == family.name.count(".") + 1:
                assert leaf in named, f"{info.name} holds {sorted(kinds)} but {family.name}.PARSER_MODULES omits it"
            elif kinds:
                raise AssertionError(f"{info.name} holds parsers below its family's top level")
            for kind in kinds:
                found[kind] = info.name
    for module in ("sarsleuth.inputs.parsers.ps", "sarsleuth.inputs.parsers.packages"):
        for kind in _parser_kinds_of(importlib.import_module(module)):
            found[kind] = module
    assert {kind: cls.__module__ for kind, cls in registry().items()} == found


def test_sniff_imports_no_reading_code():
    """Sniffing each kind of the sample case loads neither the log scanner
    (and its signatures) nor the sa reader, the model or the grammars."""
    names = ["sa06", "sar06.txt", "messages", "error.log"]
    code = ("import sys\n"
            "from sarsleuth.cli import run\n"
            f"code = run(['sniff', *{[str(SAMPLES / n) for n in names]!r}])\n"
            f"loaded = [m for m in {READING_MODULES!r} if m in sys.modules]\n"
            "print('loaded:' + ','.join(loaded))\n"
            "sys.exit(code)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert [ln.split("\t")[1] for ln in lines[:-1]] == ["sa", "sar-text", "syslog", "nginx-error"]
    assert lines[-1] == "loaded:"


def test_head_lines_of_one_head_split_once_each_caller_its_own_share():
    head = ("Feb 10 16:19:13 compute4 kernel: nginx invoked oom-killer: gfp_mask=0x100cca, order=0\n"
            "\n"
            "Feb 10 16:19:13 compute4 kernel: CPU: 3 PID: 4242 Comm: nginx Not tainted 5.4.0-97-generic\n"
            "Feb 10 16:19:13 compute4 kernel: Out of memory: Killed process 4242 (nginx) total-vm:41")
    first = head_lines(head)
    assert first == ["Feb 10 16:19:13 compute4 kernel: nginx invoked oom-killer: gfp_mask=0x100cca, order=0",
                     "Feb 10 16:19:13 compute4 kernel: CPU: 3 PID: 4242 Comm: nginx Not tainted 5.4.0-97-generic"]
    first.append("changed by its caller")
    assert head_lines(head, 1) == first[:1]
    assert len(head_lines(head)) == 2
    other = "2016/10/27 09:51:20 [notice] 30180#30180: start worker process 26726\n"
    assert head_lines(other) == [other.strip()]
