"""Commands run on the host, each bounded: a time cap (the command and its
children are stopped), a cap on what it prints, no terminal, standard input
closed, the C locale (the parsers read every locale, but C is what they
read best), the host's own zone (a ``TZ`` of the user's shell is not the
zone the host's logs are written in)."""
from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import signal
import subprocess
import time
from pathlib import Path

from sarsleuth.errors import size_text
from sarsleuth.inputs.collect.host_files import Host
from sarsleuth.inputs.collect.manifest import CUT, KEPT, NOT_KEPT

#: What of a command's standard error is kept (to say why it failed).
_STDERR_BYTES = 4096
#: Where the tools live, beside the user's PATH (a user's PATH often lacks sbin).
_SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def environment() -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("TZ", "LANG", "LANGUAGE") and not k.startswith("LC_")}
    env["LC_ALL"] = "C"
    env["PATH"] = f"{env.get('PATH', '')}:{_SYSTEM_PATH}".lstrip(":")
    env["SYSTEMD_PAGER"] = ""
    env["SYSTEMD_COLORS"] = "0"
    return env


def shown(argv) -> str:
    return " ".join(argv)


def run_entry(host: Host, entry: dict, root_given: bool) -> None:
    """Run one ``[[command]]`` of the plan into the bundle."""
    since, until = host.window.epoch()
    argv = [a.format(since=f"@{since}", until=f"@{until}", root=host.root) for a in entry["argv"]]
    if root_given:
        if entry.get("root") == "skip":
            host.manifest.notes.append(f"{shown(argv)}: not run: it describes the running system, not --root")
            return
        argv += [a.format(root=host.root) for a in entry.get("root_argv", [])]
    capture(host, argv, entry["what"], entry["to"])


def capture(host: Host, argv: list, what: str, to: str) -> bool:
    """Run ``argv`` and keep what it prints at ``to`` in the bundle."""
    env = environment()
    if shutil.which(argv[0], path=env["PATH"]) is None and not os.path.isabs(argv[0]):
        host.manifest.add(what, shown(argv), NOT_KEPT, why=f"{argv[0]} is not installed (not on PATH)")
        return False
    seconds = min(host.caps.command_seconds, host.budget.seconds_left())
    cap = min(host.caps.output_bytes, host.budget.room())
    if seconds <= 0 or cap <= 0:
        host.manifest.add(what, shown(argv), NOT_KEPT, why="the collection's time or size cap was reached first")
        return False
    dest = host.stage / to
    dest.parent.mkdir(parents=True, exist_ok=True)
    try:
        result = _bounded(argv, env, dest, seconds, cap)
    except OSError as exc:
        host.manifest.add(what, shown(argv), NOT_KEPT, why=f"cannot run: {exc.strerror or exc}")
        return False
    size, code, stderr, stopped = result
    said = _first_line(stderr)
    if size == 0:
        dest.unlink()
        with contextlib.suppress(OSError):
            dest.parent.rmdir()           # no empty folder for what was not kept
        why = f"exit code {code}: {said}" if code else (f"printed nothing ({said})" if said else "printed nothing")
        host.manifest.add(what, shown(argv), NOT_KEPT, why=why)
        return False
    host.budget.used += size
    host.manifest.names[to] = f"<{os.path.basename(to).replace('_', ' ')}>"
    if stopped == "time":
        why = f"stopped after {seconds:g} s (the time cap of a command); kept what it printed until then"
    elif stopped == "size":
        why = f"stopped at {size_text(cap)} (the cap of a command's output)"
    else:
        why = f"exit code {code}: {said}" if code else said    # journalctl's hint that it saw part of the journal
    host.manifest.add(what, shown(argv), CUT if stopped else KEPT, to, size, why)
    return True


def _first_line(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace").strip()
    return text.splitlines()[0][:200] if text else ""


def _bounded(argv, env, dest: Path, seconds: float, cap: int):
    """(bytes kept, exit code, standard error, None or why it was stopped)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd="/", start_new_session=True, close_fds=True)
    deadline = time.monotonic() + seconds
    size, err, stopped = 0, bytearray(), None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    with open(dest, "wb") as out:
        try:
            while sel.get_map():
                left = deadline - time.monotonic()
                if left <= 0:
                    stopped = "time"
                    break
                for key, _ in sel.select(timeout=min(left, 1.0)):
                    block = os.read(key.fileobj.fileno(), 1 << 16)
                    if not block:
                        sel.unregister(key.fileobj)
                    elif key.data == "err":
                        err += block[:max(0, _STDERR_BYTES - len(err))]
                    else:
                        block = block[:cap - size]
                        out.write(block)
                        size += len(block)
                        if size >= cap:
                            stopped = "size"
                            break
                if stopped:
                    break
        finally:
            sel.close()
            if not stopped:
                # both streams closed: the command is ending, or went on without them
                try:
                    proc.wait(timeout=max(0.0, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    stopped = "time"
            if proc.poll() is None:
                _stop(proc)
            proc.stdout.close()
            proc.stderr.close()
    code = proc.wait()
    return size, (None if stopped else code), bytes(err), stopped


def _stop(proc) -> None:
    """The command and whatever it started."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except (ProcessLookupError, PermissionError):
            return
        try:
            proc.wait(timeout=2)
            return
        except subprocess.TimeoutExpired:
            continue
