"""The README's promises: two Quick start commands, and the config example
does what it says."""
from __future__ import annotations

import json
import re

from .conftest import ROOT, run_cli

README = (ROOT / "README.md").read_text()


def test_quick_start_has_exactly_two_commands():
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```(?:sh|bash)?\n(.*?)```", section, re.S).group(1)
    commands = [ln for ln in block.splitlines() if ln.strip()]
    assert len(commands) == 2
    assert "sarsleuth analyze samples/" in commands[0]
    assert "pytest" in commands[1]


def test_config_example_works(tmp_path):
    block = re.search(r"```toml\n(.*?)```", README, re.S).group(1)
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
