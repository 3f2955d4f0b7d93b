"""nginx's configuration and error logs, found read only.

``nginx -T`` prints the configuration, but it also creates the error and
access logs, the pid file and the temporary folders its configuration
names when they are missing: a collection that must not write on the host
reads the configuration files itself instead, from the ``-c`` (and ``-p``)
of each running master (through ``/proc/PID/root``: a container's files are
its own), following ``include`` as nginx does (globs sorted, relative paths
from the main file's folder), and writes them as ``nginx -T`` lays them out
(``# configuration file PATH:`` then the file).  Each ``error_log`` it names
(and the build's default, ``nginx -V``'s ``--error-log-path``, when the
main context names none) is gathered with its rotated copies.
"""
from __future__ import annotations

import dataclasses
import glob
import os
import re
import subprocess
from dataclasses import dataclass, field

from sarsleuth.inputs.collect.commands import environment
from sarsleuth.inputs.collect.host_files import Host, rotated
from sarsleuth.inputs.collect.manifest import KEPT, NOT_KEPT
from sarsleuth.inputs.collect.plan import knowledge

#: How long ``nginx -V`` (which only prints how it was built) may take.
_VERSION_SECONDS = 10
_MAX_CONF_BYTES = 8 << 20
#: error_log targets that are not files
_NOT_FILES = re.compile(r"^(stderr|syslog:|memory:|/dev/)")


@dataclass
class Nginx:
    """One nginx: its main configuration file as it names it, its prefix,
    and where its paths are read (``/``, ``--root``, ``/proc/PID/root``)."""

    conf: str
    through: str
    prefix: str | None = None
    default_error_log: str | None = None
    pid: int | None = None


@dataclass
class Read:
    """A configuration as read: its files in nginx -T's order, its error logs."""

    files: list = field(default_factory=list)          # (path, text)
    error_logs: list = field(default_factory=list)     # paths, as nginx names them
    main_has_error_log: bool = False
    trouble: list = field(default_factory=list)


def _option(argv, flag: str) -> str | None:
    for k, a in enumerate(argv):
        if a == flag and k + 1 < len(argv):
            return argv[k + 1]
        if a.startswith(flag) and len(a) > 2:
            return a[2:]
    return None


def _built_with(binary: str) -> dict:
    """``--prefix``, ``--conf-path`` and ``--error-log-path`` from ``nginx -V``."""
    try:
        proc = subprocess.run([binary, "-V"], capture_output=True, timeout=_VERSION_SECONDS, env=environment(),
                              stdin=subprocess.DEVNULL, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return {}
    text = (proc.stderr + proc.stdout).decode("utf-8", "replace")
    return dict(re.findall(r"--(prefix|conf-path|error-log-path)=(\S+)", text))


def _under(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def find(host: Host, processes: list, root_given: bool) -> list:
    """The nginx instances of the host: its running masters (with ``--root``,
    those whose configuration or root lies under it), else the first usual
    configuration file that exists."""
    names = tuple(knowledge()["nginx"]["masters"])
    found = []
    for p in processes:
        if not (p.comm.startswith(names) and p.argv and "master process" in p.argv[0]):
            continue
        argv = " ".join(p.argv).split("master process", 1)[1].split()
        built = _built_with(f"/proc/{p.pid}/exe")
        conf = _option(argv, "-c") or built.get("conf-path")
        if conf is None:
            continue
        through = p.root if os.access(p.root + "/", os.R_OK) else "/"
        prefix = _option(argv, "-p") or built.get("prefix")
        if root_given and not (_under(through + "/" + conf, host.root) or _under(through, host.root)):
            continue
        found.append(Nginx(conf, through, prefix, built.get("error-log-path"), p.pid))
    if found:
        return found
    for conf in knowledge()["nginx"]["configurations"]:
        if os.path.isfile(host.on_host(conf)):
            built = _built_with("nginx") if not root_given else {}
            return [Nginx(conf, host.root, built.get("prefix"), built.get("error-log-path"))]
    return []


def _tokens(text: str):
    """nginx's tokens: words (quotes and escapes undone), ``;``, ``{``, ``}``."""
    word, k, n = None, 0, len(text)
    while k < n:
        c = text[k]
        if c in " \t\r\n;{}#\"'":
            if word is not None:
                yield word
                word = None
            if c in ";{}":
                yield c
            elif c == "#":
                end = text.find("\n", k)
                k = n if end < 0 else end
                continue
            elif c in "\"'":
                end = k + 1
                while end < n and text[end] != c:
                    end += 2 if text[end] == "\\" else 1
                yield text[k + 1:end].replace("\\" + c, c)
                k = end + 1
                continue
        elif c == "\\" and k + 1 < n:
            word = (word or "") + text[k + 1]
            k += 2
            continue
        else:
            word = (word or "") + c
        k += 1
    if word is not None:
        yield word


def read_configuration(nginx: Nginx, most: int) -> Read:
    out = Read()
    seen: set = set()
    conf_dir = os.path.dirname(nginx.conf)

    def on_host(path: str) -> str:
        return path if nginx.through == "/" else os.path.join(nginx.through, path.lstrip("/"))

    def visit(path: str, depth: int) -> None:
        if path in seen or len(out.files) >= most:
            return
        seen.add(path)
        try:
            with open(on_host(path), "rb") as fh:
                text = fh.read(_MAX_CONF_BYTES).decode("utf-8", "replace")
        except OSError as exc:
            out.trouble.append(f"{path}: {exc.strerror or exc}")
            return
        out.files.append((path, text))
        words: list = []
        for tok in _tokens(text):
            if tok in (";", "{", "}"):
                if words and words[0] == "include" and len(words) > 1 and tok == ";":
                    pattern = words[1] if words[1].startswith("/") else os.path.join(conf_dir, words[1])
                    for inc in sorted(glob.glob(on_host(pattern))):
                        visit(inc if nginx.through == "/" else "/" + os.path.relpath(inc, nginx.through), depth)
                elif words and words[0] == "error_log" and len(words) > 1 and tok == ";":
                    out.error_logs.append(words[1])
                    out.main_has_error_log |= depth == 0
                depth += tok == "{"
                depth -= tok == "}"
                words = []
            else:
                words.append(tok)

    visit(nginx.conf, 0)
    return out


def dump(files) -> str:
    """The files as ``nginx -T`` prints them."""
    return "".join(f"# configuration file {path}:\n{text}\n" for path, text in files)


def gather(host: Host, processes: list, root_given: bool) -> None:
    """The configuration (as nginx -T lays it out) and the error logs of
    every nginx of the host."""
    spec = knowledge()["nginx"]
    files, logs = [], []
    for nginx in find(host, processes, root_given):
        conf = read_configuration(nginx, int(spec["most_files"]))
        for trouble in conf.trouble:
            host.manifest.add("nginx configuration", trouble.split(": ", 1)[0], NOT_KEPT,
                              why=trouble.split(": ", 1)[1])
        files += [f for f in conf.files if f not in files]
        named = list(conf.error_logs)
        if not conf.main_has_error_log:
            usual = spec["default_error_logs"]
            named.append(nginx.default_error_log or next((p for p in usual if os.path.exists(host.on_host(p))), usual[0]))
        for log in named:
            if _NOT_FILES.match(log):
                continue
            if not log.startswith("/"):
                if nginx.prefix is None:
                    host.manifest.notes.append(f"nginx error_log {log}: relative, and nginx's prefix is unknown")
                    continue
                log = os.path.join(nginx.prefix, log)
            if (nginx.through, log) not in logs:
                logs.append((nginx.through, log))
    if files:
        text = dump(files).encode("utf-8")
        dest = host.stage / spec["to"]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(text)
        host.budget.used += len(text)
        host.manifest.add("nginx configuration", files[0][0], KEPT, spec["to"], len(text))
        host.manifest.names[spec["to"]] = "<nginx configuration>"
    for through, log in logs:
        reader = host if through == host.root else dataclasses.replace(host, root=through)
        rotated(reader, {"what": "nginx error log"}, patterns=[log + "*"])
