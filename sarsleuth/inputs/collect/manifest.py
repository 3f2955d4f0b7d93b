"""What a collection took, what it cut and what it could not read, and
why: written into the bundle (``sarsleuth_collect/manifest.json``) and
said on stderr."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field

from sarsleuth.errors import size_text

#: ``status`` of an item: taken whole, taken in part, or not taken.
KEPT, CUT, NOT_KEPT = "kept", "cut", "not kept"


@dataclass
class Item:
    what: str                   # what it is ("syslog", "kernel ring buffer, wall clock")
    source: str                 # the file on the host, or the command as run
    status: str                 # KEPT, CUT or NOT_KEPT
    to: str | None = None       # where it is in the bundle
    bytes: int = 0
    why: str = ""               # for CUT and NOT_KEPT


@dataclass
class Budget:
    """The bytes and seconds a collection has left."""

    total_bytes: int
    deadline: float             # time.monotonic() past which nothing more is gathered
    used: int = 0

    def room(self) -> int:
        return max(0, self.total_bytes - self.used)

    def seconds_left(self) -> float:
        return self.deadline - time.monotonic()

    def out_of_time(self) -> bool:
        return self.seconds_left() <= 0


@dataclass
class Manifest:
    items: list = field(default_factory=list)
    #: what was looked for and not found at all ("syslog: none of /var/log/messages*, ...")
    absent: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    #: path in the bundle -> how the host names what it holds (a file's
    #: path, ``<dmesg -T>`` for a command's output)
    names: dict = field(default_factory=dict)

    def add(self, what: str, source: str, status: str, to: str | None = None, size: int = 0,
            why: str = "") -> Item:
        item = Item(what, source, status, to, size, why)
        self.items.append(item)
        return item

    def taken(self) -> list:
        return [i for i in self.items if i.status != NOT_KEPT]

    def problems(self) -> list[str]:
        """One line for each thing not taken or taken in part, and each kind
        of input found nowhere: what the user may want to fetch by hand."""
        lines = [f"{i.source}: {'' if i.status == KEPT else 'cut: ' if i.status == CUT else 'not collected: '}{i.why}"
                 for i in self.items if i.why]
        return lines + list(self.absent)

    def summary(self) -> str:
        taken = self.taken()
        total = sum(i.bytes for i in taken)
        return (f"{len(taken)} file(s) and command outputs, {total:,} bytes; "
                f"{sum(1 for i in self.items if i.status == CUT)} cut, "
                f"{sum(1 for i in self.items if i.status == NOT_KEPT)} not collected")

    def document(self, **head) -> str:
        doc = dict(head)
        doc["items"] = [asdict(i) for i in self.items]
        doc["absent"] = list(self.absent)
        doc["notes"] = list(self.notes)
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def over_cap(size: int, cap: int) -> str:
    return f"{size:,} bytes, over the cap of {size_text(cap)}"
