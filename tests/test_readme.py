"""The README's promises: a newcomer's path in its first 120 lines, two
Quick start commands, and every code block run as a reader would run it,
in the page's order, from a folder of their own beside the checkout's
samples: each ``sh`` line (``pip install`` and ``python -m pytest`` are
this very run), each ``python`` block as a script, the ``toml`` block as
a ``--config``, and the ``text`` synopsis checked against each command's
``--help``."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text()
FENCE = re.compile(r"^```(?P<lang>[^\n]*)\n(?P<body>.*?)^```$", re.M | re.S)
BLOCKS = [(m["lang"].strip(), m["body"], README[:m.start()].count("\n") + 1) for m in FENCE.finditer(README)]
#: What this file knows how to run
LANGUAGES = {"sh", "python", "toml", "text"}


def _section(title: str) -> str:
    return README.split(f"## {title}", 1)[1].split("\n## ", 1)[0]


def test_quick_start_has_exactly_two_commands():
    block = re.search(r"```(?:sh|bash)?\n(.*?)```", _section("Quick start"), re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln.strip()]
    assert len(commands) == 2
    assert "sarsleuth analyze samples/" in commands[0]
    assert "pytest" in commands[1]


def test_the_first_120_lines_go_from_install_to_one_s_own_server():
    lines = README.splitlines()
    heads = [n for n, line in enumerate(lines, 1) if line.startswith("## ")]
    titles = [lines[n - 1] for n in heads]
    assert titles[:4] == ["## Quick start", "## Analyse files you have", "## Collect from a server",
                          "## Read the story"]
    assert heads[3] < 120                   # collecting (and analysing) one's own server is told by then
    assert "python3 -m venv" in _section("Quick start") and "field report 000" in _section("Quick start")
    assert "sarsleuth collect" in _section("Collect from a server")


def test_every_code_block_is_of_a_kind_this_file_runs():
    assert {lang for lang, _, _ in BLOCKS} <= LANGUAGES, [lang for lang, _, _ in BLOCKS]
    # an indented code block (four spaces after a blank line, outside a list) would not be run
    prose = FENCE.sub("", README)
    assert not re.search(r"\n\n {4}\S", prose)


# ------------------------------------------------------------------ running the page
def _run_line(line: str, cwd: Path, where: str, printed: dict) -> Path:
    """One shell line as a reader types it (what ``sarsleuth`` printed kept
    in ``printed`` by its arguments); returns the folder it leaves."""
    for command in line.split("&&"):
        words = shlex.split(command, comments=True)
        if not words:
            continue
        if words[0] == "sudo":
            words = words[1:]
        if words[:2] == ["pip", "install"] or words[:3] == ["python", "-m", "pytest"]:
            continue                        # what this run is: installed, and testing
        if words[0] == "cd":
            cwd = (cwd / words[1]).resolve()
        elif words[0] == "sarsleuth":
            ran = run_cli(*words[1:], cwd=cwd)
            assert ran.returncode == 0, f"{where}: {line}\n{ran.stderr[-3000:]}"
            printed[" ".join(words)] = ran.stdout
        elif words[0] == "python" and words[1].endswith(".py"):
            proc = subprocess.run([sys.executable, *words[1:]], cwd=cwd, capture_output=True, text=True, timeout=600,
                                  env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert proc.returncode == 0, f"{where}: {line}\n{proc.stderr[-3000:]}"
        else:
            pytest.fail(f"{where}: a README command this test cannot run: {command.strip()}")
    return cwd


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """Every block run in the page's order from a reader's own folder
    (holding a link to the checkout's samples); what each printed."""
    home = tmp_path_factory.mktemp("reader")
    (home / "samples").symlink_to(ROOT / "samples")
    printed = {}
    for n, (lang, body, line) in enumerate(BLOCKS):
        where = f"README.md:{line}"
        if lang == "sh":
            cwd = home
            for text in body.splitlines():
                cwd = _run_line(text, cwd, where, printed)
        elif lang == "python":
            script = home / f"block_{n}.py"
            script.write_text(body)
            proc = subprocess.run([sys.executable, script.name], cwd=home, capture_output=True, text=True,
                                  timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})
            assert proc.returncode == 0, f"{where}\n{proc.stderr[-3000:]}"
            printed[line] = proc.stdout
    return home, printed


def test_every_sh_and_python_block_runs(page):
    home, printed = page
    assert (home / "report.html").is_file() and (home / "web07.tar.gz").is_file()
    assert sum(1 for key in printed if isinstance(key, int)) == sum(1 for lang, _, _ in BLOCKS if lang == "python")


def test_the_api_block_prints_what_sar_printed(page):
    _, printed = page
    api = next(out for key, out in printed.items() if isinstance(key, int) and "Memory exhaustion on" in out)
    assert api.splitlines()[-1] == "97.76"


def test_the_headline_quoted_is_the_one_printed(page):
    """The sentence the README quotes from ``analyze sa06 messages`` is the
    headline that command prints (its line breaks aside)."""
    _, printed = page
    quoted = re.search(r"and prints\s+`(Memory exhaustion on .*?)`", README, re.S).group(1)
    story = printed["sarsleuth analyze sa06 messages"]
    lines = [ln.strip("│ ").strip() for ln in story.splitlines()]
    assert " ".join(quoted.split()) in " ".join(" ".join(lines).split())


def test_the_fleet_s_sql_quotes_the_number_the_story_says(page):
    """The README's SQL keeps the CPU total ('all'): the host the story
    tells has the %iowait its headline quotes, not the busiest CPU's."""
    home, printed = page
    story = printed["sarsleuth analyze fleet/ --save case/"]
    headline = re.search(r"Disk I/O saturation on (web-\d+): I/O wait spiked to ([\d.]+) %", story)
    query = re.search(r'sarsleuth sql case/ "(.*)"', README).group(1)
    rows = run_cli("sql", home / "case", query, "--format", "json")
    assert rows.returncode == 0, rows.stderr
    quoted = {r["host"]: r["iowait"] for r in json.loads(rows.stdout)}
    assert f"{quoted[headline.group(1)]:.2f}" == headline.group(2)
    (script,) = [out for key, out in printed.items() if isinstance(key, int) and "sarsleuth.fleet" in
                 next(body for lang, body, line in BLOCKS if line == key)]
    assert script.splitlines()[0] == "['web-0000', 'web-0002']"     # make_fleet.py: "shared incident on web-0000, web-0002"
    assert "findings" in script.splitlines()[1]


def test_the_config_block_loads_and_finds_its_message(tmp_path):
    (block,) = [body for lang, body, _ in BLOCKS if lang == "toml"]
    cfg = tmp_path / "sarsleuth.toml"
    cfg.write_text(block)
    log = tmp_path / "messages"
    log.write_text("Mar  3 10:00:01 web1 myapp[2211]: panic: runtime error: index out of range [3] with length 3\n"
                   "Mar  3 10:00:02 web1 systemd[1]: myapp.service: Main process exited, code=exited, status=2/INVALIDARGUMENT\n")
    proc = run_cli("analyze", log, "--config", cfg, "--year", "2024", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    custom = [f for f in doc["findings"] if f["detector"] == "custom-signature"]
    assert custom and custom[0]["severity"] == "high"
    assert "myapp crashed" in (custom[0]["explanation"] or "")


def test_the_synopsis_names_only_options_the_commands_have():
    (synopsis,) = [body for lang, body, _ in BLOCKS if lang == "text"]
    helps: dict = {}
    for line in synopsis.splitlines():
        words = line.split()
        if words[0] == "sarsleuth" and not words[1].startswith("-"):
            command = words[1]
        elif words[0] == "sarsleuth":
            command = ""
        options = re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-o)\b", line)
        if command not in helps:
            helps[command] = run_cli(*([command] if command else []), "--help").stdout
        missing = [o for o in options if o not in helps[command]]
        assert not missing, (line, missing)


def test_the_readme_reads_straight_through():
    """No run of ten words said twice (a paragraph pasted again), and no
    paragraph whose parentheses do not close (a sentence cut in two)."""
    prose = re.sub(r"^```.*?^```", "", README, flags=re.M | re.S)
    paragraphs = [p for p in re.split(r"\n\s*\n", prose) if p.strip() and not p.lstrip().startswith(("|", "    "))]
    first_said: dict = {}
    repeated, unbalanced = set(), []
    for i, paragraph in enumerate(paragraphs):
        words = re.findall(r"[\w'%.-]+", paragraph.lower())
        for k in range(len(words) - 9):
            run = " ".join(words[k:k + 10])
            if first_said.setdefault(run, i) != i:
                repeated.add(run)
        plain = re.sub(r"`[^`]*`", "", paragraph)
        if plain.count("(") != plain.count(")"):
            unbalanced.append(paragraph[:80])
    assert sorted(repeated) == [] and unbalanced == []
