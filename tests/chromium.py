"""A headless Chromium driven over the DevTools protocol through a pipe
(``--remote-debugging-pipe``: JSON messages ended by NUL on fds 3 and 4, no
port, no extra library), and the page checks the HTML report tests run in
it (tests/report_checks.py); ``drag`` and ``mouse`` move the mouse as a
reader does."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time

from .report_checks import LAYOUT_CHECK


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
             "--hide-scrollbars", "--window-size=1920,1080", f"--user-data-dir={self.profile}", "about:blank"],
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
        """Load a page at ``width`` pixels and run :data:`LAYOUT_CHECK`."""
        self.open(path, width)
        return self.evaluate(LAYOUT_CHECK)

    def open(self, path, width: int) -> None:
        """Load a page at ``width`` pixels, nothing checked."""
        self.call("Emulation.setDeviceMetricsOverride", session=True, width=width, height=900,
                  deviceScaleFactor=1, mobile=False)
        self._loaded = False
        self.call("Page.navigate", session=True, url=f"file://{os.path.abspath(path)}")
        deadline = time.monotonic() + 180
        while not self._loaded:
            reply = self._read(deadline)
            if reply.get("method") == "Page.loadEventFired":
                self._loaded = True

    def evaluate(self, expression: str):
        """The value of a JavaScript expression in the page (a promise awaited)."""
        result = self.call("Runtime.evaluate", session=True, expression=expression, returnByValue=True,
                           awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"the page threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    def mouse(self, kind: str, x: float, y: float, pressed: bool = False) -> None:
        """One mouse event at (x, y) in the window: ``mousePressed``,
        ``mouseMoved`` or ``mouseReleased`` (left button), and the frames
        after it drawn (Chromium hands moves to the page once a frame, and
        the page may answer in the next)."""
        held = pressed or kind != "mouseMoved"
        self.call("Input.dispatchMouseEvent", session=True, type=kind, x=x, y=y, button="left" if held else "none",
                  buttons=1 if pressed or kind == "mousePressed" else 0, clickCount=1 if held else 0)
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def drag(self, x1: float, y: float, x2: float, steps: int = 8) -> None:
        """Press at (x1, y), move to (x2, y) in steps, release."""
        self.mouse("mouseMoved", x1, y)
        self.mouse("mousePressed", x1, y)
        for i in range(1, steps + 1):
            self.mouse("mouseMoved", x1 + (x2 - x1) * i / steps, y, pressed=True)
        self.mouse("mouseReleased", x2, y)

    def screenshot(self, path, width: int, out) -> None:
        self.check(path, width)
        self.capture(out)

    def capture(self, out) -> None:
        """A PNG of the page as it is now (after a :meth:`check`: with its
        folded parts opened)."""
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
