"""A headless Chromium driven over the DevTools protocol through a pipe
(``--remote-debugging-pipe``: JSON messages ended by NUL on fds 3 and 4, no
port, no extra library), and the page checks the HTML report tests run in
it: text that overlaps other text or is cut off, and charts and timelines
without time labels."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

#: Run in the page: every problem a reader would see, as a list of strings.
#: Every <details> is opened first, so folded parts are laid out too.
LAYOUT_CHECK = r"""
(() => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const vw = document.documentElement.clientWidth, problems = [];
  if (document.documentElement.scrollWidth > vw + 1)
    problems.push(`page wider than the window: ${document.documentElement.scrollWidth} > ${vw}`);
  const boxes = [];
  const clipping = el => {
    const out = [];
    for (let a = el; a && a !== document.body; a = a.parentElement) {
      const s = getComputedStyle(a);
      if (s.overflowX !== 'visible' || s.overflowY !== 'visible') out.push(a);
    }
    return out;
  };
  const inside = (r, c) => r.left >= c.left - 1 && r.right <= c.right + 1 && r.top >= c.top - 1 && r.bottom <= c.bottom + 1;
  const name = n => (n.textContent || '').trim().slice(0, 40);
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (!n.textContent.trim() || n.parentElement.closest('svg, style, title')) continue;
    const range = document.createRange(); range.selectNodeContents(n);
    for (const r of range.getClientRects()) {
      if (r.width < 1 || r.height < 1) continue;
      boxes.push({r, id: n, text: name(n), clip: n.parentElement});
    }
  }
  document.querySelectorAll('svg text').forEach(t => {
    const r = t.getBoundingClientRect();
    if (r.width >= 1 && r.height >= 1) boxes.push({r, id: t, text: name(t), clip: t.closest('svg'), svg: true});
  });
  for (const b of boxes) {
    if (b.r.left < -1 || b.r.right > vw + 1) { problems.push(`cut at the window's edge: "${b.text}"`); continue; }
    const clips = b.svg ? [b.clip] : clipping(b.clip);
    for (const c of clips) if (!inside(b.r, c.getBoundingClientRect())) { problems.push(`cut by its box: "${b.text}"`); break; }
  }
  // overlaps: boxes bucketed on a 100 px grid, each pair compared once
  const grid = new Map();
  boxes.forEach((b, i) => {
    for (let gx = Math.floor(b.r.left / 100); gx <= Math.floor(b.r.right / 100); gx++)
      for (let gy = Math.floor((b.r.top + scrollY) / 100); gy <= Math.floor((b.r.bottom + scrollY) / 100); gy++) {
        const k = gx + ',' + gy; if (!grid.has(k)) grid.set(k, []); grid.get(k).push(i);
      }
  });
  const seen = new Set();
  for (const ids of grid.values()) for (let x = 0; x < ids.length; x++) for (let y = x + 1; y < ids.length; y++) {
    const a = boxes[ids[x]], b = boxes[ids[y]];
    if (a.id === b.id) continue;
    const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left);
    const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top);
    if (w > 1 && h > 1) {
      const key = ids[x] + '-' + ids[y];
      if (!seen.has(key)) { seen.add(key); problems.push(`"${a.text}" overlaps "${b.text}"`); }
    }
  }
  // time labels: every chart says its times, every timeline its axis
  const time = /^(\d\d:\d\d(:\d\d)?|\d\d-\d\d|\d{4}-\d\d-\d\d)$/;
  document.querySelectorAll('svg.chart').forEach((svg, i) => {
    const labels = [...svg.querySelectorAll('text')].filter(t => time.test(t.textContent.trim()));
    if (labels.length < 2) problems.push(`chart ${i} (${(svg.querySelector('title') || {}).textContent}) has ${labels.length} time label(s)`);
  });
  document.querySelectorAll('.tl').forEach((tl, i) => {
    const shown = [...tl.querySelectorAll('.tick')].filter(t => t.getClientRects().length && time.test(t.textContent.trim()));
    if (shown.length < 2) problems.push(`timeline ${i} shows ${shown.length} time label(s)`);
  });
  return {problems: problems.slice(0, 50), count: problems.length, texts: boxes.length,
          charts: document.querySelectorAll('svg.chart').length, timelines: document.querySelectorAll('.tl').length};
})()
"""


def _as_fds_3_and_4(read_end: int, write_end: int):
    """In the child: the pipe ends as fds 3 and 4, where Chromium looks for
    them (moved out of the way first, in case either already is 3 or 4);
    every other descriptor of ours is close-on-exec."""
    def arrange():
        import fcntl
        r, w = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10), fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
        os.dup2(r, 3)
        os.dup2(w, 4)
    return arrange


class Browser:
    """One headless Chromium for a test session; ``check(path, width)``
    loads a page at that width and runs :data:`LAYOUT_CHECK`."""

    def __init__(self, exe: str):
        self.profile = tempfile.mkdtemp(prefix="sarsleuth-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        self.proc = subprocess.Popen(
            [exe, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe", "--no-first-run",
             "--hide-scrollbars", f"--user-data-dir={self.profile}", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            close_fds=False, preexec_fn=_as_fds_3_and_4(to_browser_r, from_browser_w))
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._id = 0
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable", session=True)

    def call(self, method: str, session: bool = False, timeout: float = 180.0, **params):
        self._id += 1
        message = {"id": self._id, "method": method, "params": params}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read(deadline)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            if reply.get("method") == "Page.loadEventFired":
                self._loaded = True

    def _read(self, deadline: float) -> dict:
        import select
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._from_browser], [], [], left)[0]:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium went away")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def check(self, path, width: int) -> dict:
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=900,
                  deviceScaleFactor=1, mobile=False)
        self._loaded = False
        self.call("Page.navigate", session=True, url=f"file://{os.path.abspath(path)}")
        deadline = time.monotonic() + 180
        while not self._loaded:
            reply = self._read(deadline)
            if reply.get("method") == "Page.loadEventFired":
                self._loaded = True
        result = self.call("Runtime.evaluate", session=True, expression=LAYOUT_CHECK, returnByValue=True)
        return result["result"]["value"]

    def screenshot(self, path, width: int, out) -> None:
        self.check(path, width)
        import base64
        data = self.call("Page.captureScreenshot", session=True, format="png")["data"]
        with open(out, "wb") as fh:
            fh.write(base64.b64decode(data))

    def close(self) -> None:
        try:
            self.call("Browser.close", timeout=5)
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self._to_browser, self._from_browser):
            os.close(fd)
        shutil.rmtree(self.profile, ignore_errors=True)
