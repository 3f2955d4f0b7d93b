"""Documents are not logs: a bundle holding its own earlier reports, a README
and notes gives the same story as without them."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import sarsleuth
from sarsleuth.inputs.parsers import sniff

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"


def _story(case):
    return [(i.category, i.title, str(i.start), len(i.findings)) for i in case.incidents]


def test_a_bundle_with_its_own_reports_and_readme_tells_the_same_story(tmp_path):
    bundle = tmp_path / "nginx-proxy-oom"
    shutil.copytree(SAMPLES / "nginx-proxy-oom", bundle)
    before = sarsleuth.load(bundle)
    before.report(tmp_path / "report.html")
    shutil.move(tmp_path / "report.html", bundle / "report.html")
    (bundle / "analysis.json").write_text(json.dumps(before.to_json(), indent=2))
    from sarsleuth.render.formats.markdown import render_markdown
    (bundle / "summary.md").write_text(render_markdown(before))
    shutil.copy(ROOT / "README.md", bundle / "README.md")
    (bundle / "notes.txt").write_text(
        "Notes from the bridge call\n\n"
        "# What we saw\n\n"
        "- The proxy logged a page allocation failure in the NIC receive path around 15:04.\n"
        "- Upstream timed out while reading response header from upstream, many times.\n"
        "- Somebody mentioned a segfault at 0 ip 00000000 in an old ticket, probably unrelated.\n\n"
        "# Next steps\n\n"
        "- Reduce proxy_buffers, add swap alerts, and review the nginx memory settings with the team.\n")
    after = sarsleuth.load(bundle)
    assert _story(after) == _story(before)
    assert len(after.findings) == len(before.findings)
    reasons = {Path(s.path).name: s.reason for s in after.skipped}
    assert reasons["report.html"].startswith("sarsleuth's own report")
    assert reasons["analysis.json"].startswith("sarsleuth's own report")
    assert reasons["summary.md"].startswith("sarsleuth's own report")
    assert reasons["README.md"].startswith("a document")
    assert reasons["notes.txt"].startswith("a document")


def test_pasted_logs_are_not_documents(tmp_path):
    """A ticket with a fenced or quoted log excerpt is judged by the log
    readers, not refused as prose."""
    quoted = tmp_path / "ticket.txt"
    quoted.write_text("".join("> " + line for line in
                              (SAMPLES / "nginx-proxy-oom" / "error.log").read_text().splitlines(keepends=True)[:12]))
    assert "document" not in sniff(quoted)[1]
    plain = tmp_path / "kern.log"
    plain.write_text((SAMPLES / "nginx-proxy-oom" / "messages").read_text())
    assert sniff(plain)[0] == "syslog"
