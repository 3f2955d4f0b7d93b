"""CONTRIBUTING.md's worked examples are exact: each block of it that names
a file is applied to a copy of the tree, in the order of the page, and the
tests an example names pass there.

A block names its file after its language: ``new:PATH`` (a new file),
``append:PATH``, ``into:PATH:NAME`` (lines added after the first line of
``NAME = ...``, a literal that goes on) or ``replace:PATH:NAME`` (the line
``NAME = ...`` replaced).  An example's ``sh`` block says which tests to run
(``python -m pytest ...``), or runs a tool of the tree (``python tools/...``)
where it stands in the page.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT

PAGE = ROOT / "CONTRIBUTING.md"
FENCE = re.compile(r"^```(?P<info>[^\n]*)\n(?P<body>.*?)^```$", re.M | re.S)
TARGET = re.compile(r"^\w+ (?P<how>new|append|into|replace):(?P<path>[^:\s]+)(?::(?P<name>\w+))?$")
#: What a copy of the tree needs to run the tests
TREE = ("sarsleuth", "tests", "samples", "tools", "pyproject.toml", "README.md", "CONTRACT.md", "CONTRIBUTING.md")


def examples() -> list[tuple[str, list, list]]:
    """(title, blocks that name a file, test commands) of each section of
    the page, in order."""
    out = []
    for section in re.split(r"^## ", PAGE.read_text("utf-8"), flags=re.M)[1:]:
        title = section.splitlines()[0].strip()
        blocks, commands = [], []
        for m in FENCE.finditer(section):
            info, body = m["info"].strip(), m["body"]
            target = TARGET.match(info)
            if target:
                blocks.append((target["how"], target["path"], target["name"], body))
            elif info == "sh" and body.startswith("python -m pytest "):
                commands.append(shlex.split(body.strip())[3:])
            elif info == "sh" and body.startswith("python tools/"):
                blocks.append(("run", None, None, body.strip()))
        if blocks or commands:
            out.append((title, blocks, commands))
    return out


EXAMPLES = examples()


def apply(tree: Path, how: str, path: str | None, name: str | None, body: str) -> None:
    if how == "run":            # a tool of the tree that writes what the example changes
        proc = subprocess.run([sys.executable, *shlex.split(body)[1:]], cwd=tree, capture_output=True, text=True,
                              timeout=120, env={**os.environ, "PYTHONPATH": str(tree)})
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return
    target = tree / path
    if how == "new":
        assert not target.exists(), f"{path} exists already"
        target.write_text(body, "utf-8")
        return
    text = target.read_text("utf-8")
    if how == "append":
        target.write_text(text.rstrip("\n") + "\n\n" + body, "utf-8")
        return
    start = re.search(rf"^{name} = .*$", text, re.M)
    assert start, f"{path} has no line '{name} = ...'"
    if how == "into":
        target.write_text(text[:start.end() + 1] + body + text[start.end() + 1:], "utf-8")
    else:
        target.write_text(text[:start.start()] + body.rstrip("\n") + text[start.end():], "utf-8")


def test_the_page_has_an_example_of_each_addition():
    assert [title for title, _, _ in EXAMPLES] == ["A message definition", "A detector", "An input format",
                                                   "An output"]
    assert all(blocks and commands for _, blocks, commands in EXAMPLES)


@pytest.mark.parametrize("index", range(len(EXAMPLES)), ids=[title for title, _, _ in EXAMPLES])
def test_an_example_applied_to_a_copy_of_the_tree_passes_its_tests(index, tmp_path):
    tree = tmp_path / "tree"
    for part in TREE:
        source = ROOT / part
        if source.is_dir():
            # compiled modules come along: a file an example changes no
            # longer matches its compiled copy and is compiled again
            shutil.copytree(source, tree / part)
        else:
            tree.mkdir(exist_ok=True)
            shutil.copy(source, tree / part)
    for _, blocks, _ in EXAMPLES[:index + 1]:
        for block in blocks:
            apply(tree, *block)
    env = {**os.environ, "PYTHONPATH": str(tree)}
    for args in EXAMPLES[index][2]:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0", *args],
                              cwd=tree, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
