"""Which sysstat activity ("section") a table belongs to, shared by the sar
text and sadf parsers.

sar prints one table per activity; its header names the columns and those
names differ between sysstat generations (``%user``/``%usr``,
``rd_sec/s``/``rkB/s``, ``INTR intr/s``/``INTR all CPU0``...).  Nothing here
assumes one layout: a header is matched against every section's vocabulary
and the best match wins (:func:`identify`), and the columns are then read by
name (:func:`table_layout`).  ``sadf -j``/``-x`` name the same values
differently (``memused-percent`` for ``%memused``, ``rxpck`` for
``rxpck/s``); :data:`STRUCTURED_ACTIVITIES` and :func:`structured_metric`
translate those names back to the ``sadf -d`` heads, so every parser yields
the same section/device/metric triples.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache


@dataclass(frozen=True)
class SectionSpec:
    """Vocabulary of one sysstat activity as its table headers print it."""

    name: str
    metrics: tuple            # every column name any sysstat version printed
    device: tuple = ()        # header names of the column that names the item
    labels: tuple = ()        # text columns that are neither device nor value


def _spec(name, metrics, device=(), labels=()):
    return SectionSpec(name, tuple(metrics.split()), tuple(device), tuple(labels))


#: Every section, with the column names printed by sysstat 7 to 12.7.
SECTIONS: dict[str, SectionSpec] = {s.name: s for s in [
    _spec("cpu", "%user %usr %nice %system %sys %iowait %steal %irq %soft %guest %gnice %idle", ["CPU"]),
    _spec("tasks", "proc/s cswch/s"),
    _spec("swapping", "pswpin/s pswpout/s"),
    _spec("paging", "pgpgin/s pgpgout/s fault/s majflt/s pgfree/s pgscank/s pgscand/s pgsteal/s "
                    "%vmeff pgprom/s pgdem/s"),
    _spec("io", "tps rtps wtps dtps bread/s bwrtn/s bdscd/s"),
    _spec("memory", "kbmemfree kbavail kbmemused %memused kbbuffers kbcached kbcommit %commit "
                    "kbactive kbinact kbdirty kbshmem kbanonpg kbslab kbkstack kbpgtbl kbvmused "
                    "frmpg/s bufpg/s campg/s"),
    _spec("swap", "kbswpfree kbswpused %swpused kbswpcad %swpcad"),
    _spec("hugepages", "kbhugfree kbhugused %hugused kbhugrsvd kbhugsurp"),
    _spec("file", "dentunusd file-nr inode-nr pty-nr file-sz inode-sz super-sz %super-sz "
                  "dquot-sz %dquot-sz rtsig-sz %rtsig-sz"),
    _spec("queue", "runq-sz plist-sz ldavg-1 ldavg-5 ldavg-15 blocked"),
    _spec("disk", "tps rd_sec/s wr_sec/s dc_sec/s rkB/s wkB/s dkB/s avgrq-sz areq-sz avgqu-sz "
                  "aqu-sz await r_await w_await d_await svctm %util", ["DEV"]),
    _spec("net-dev", "rxpck/s txpck/s rxkB/s txkB/s rxbyt/s txbyt/s rxcmp/s txcmp/s rxmcst/s %ifutil",
          ["IFACE"]),
    _spec("net-edev", "rxerr/s txerr/s coll/s rxdrop/s txdrop/s txcarr/s rxfram/s rxfifo/s txfifo/s",
          ["IFACE"]),
    _spec("net-nfs", "call/s retrans/s read/s write/s access/s getatt/s"),
    _spec("net-nfsd", "scall/s badcall/s packet/s udp/s tcp/s hit/s miss/s sread/s swrite/s "
                      "saccess/s sgetatt/s"),
    _spec("net-sock", "totsck tcpsck udpsck rawsck ip-frag tcp-tw"),
    _spec("net-ip", "irec/s fwddgm/s idel/s orq/s asmrq/s asmok/s fragok/s fragcrt/s"),
    _spec("net-eip", "ihdrerr/s iadrerr/s iukwnpr/s idisc/s odisc/s onort/s asmf/s fragf/s"),
    _spec("net-icmp", "imsg/s omsg/s iech/s iechr/s oech/s oechr/s itm/s itmr/s otm/s otmr/s "
                      "iadrmk/s iadrmkr/s oadrmk/s oadrmkr/s"),
    _spec("net-eicmp", "ierr/s oerr/s idstunr/s odstunr/s itmex/s otmex/s iparmpb/s oparmpb/s "
                       "isrcq/s osrcq/s iredir/s oredir/s"),
    _spec("net-tcp", "active/s passive/s iseg/s oseg/s"),
    _spec("net-etcp", "atmptf/s estres/s retrans/s retrseg/s isegerr/s orsts/s"),
    _spec("net-udp", "idgm/s odgm/s noport/s idgmerr/s"),
    _spec("net-sock6", "tcp6sck udp6sck raw6sck ip6-frag"),
    _spec("net-ip6", "irec6/s fwddgm6/s idel6/s orq6/s asmrq6/s asmok6/s imcpck6/s omcpck6/s "
                     "fragok6/s fragcr6/s"),
    _spec("net-eip6", "ihdrer6/s iadrer6/s iukwnp6/s i2big6/s idisc6/s odisc6/s inort6/s onort6/s "
                      "asmf6/s fragf6/s itrpck6/s"),
    _spec("net-icmp6", "imsg6/s omsg6/s iech6/s iechr6/s oechr6/s igmbq6/s igmbr6/s ogmbr6/s "
                       "igmbrd6/s ogmbrd6/s irtsol6/s ortsol6/s irtad6/s inbsol6/s onbsol6/s "
                       "inbad6/s onbad6/s"),
    _spec("net-eicmp6", "ierr6/s idtunr6/s odtunr6/s itmex6/s otmex6/s iprmpb6/s oprmpb6/s "
                        "iredir6/s oredir6/s ipck2b6/s opck2b6/s"),
    _spec("net-udp6", "idgm6/s odgm6/s noport6/s idgmer6/s"),
    _spec("interrupts", "intr/s all", ["INTR"]),
    _spec("softnet", "total/s dropd/s squeezd/s rx_rps/s flw_lim/s blg_len", ["CPU"]),
    _spec("power-cpu", "MHz wghMHz", ["CPU"]),
    _spec("power-fan", "rpm drpm", ["FAN"], ["DEVICE"]),
    _spec("power-temp", "degC %temp", ["TEMP"], ["DEVICE"]),
    _spec("power-in", "inV %in", ["IN"], ["DEVICE"]),
    _spec("power-usb", "maxpower", ["BUS"], ["idvendor", "idprod", "manufact", "product"]),
    _spec("power-bat", "%cap cap/min", ["BAT"], ["status"]),
    _spec("filesystem", "MBfsfree MBfsused %fsused %ufsused Ifree Iused %Iused",
          ["FILESYSTEM", "MOUNTPOINT"]),
    _spec("fchost", "fch_rxf/s fch_txf/s fch_rxw/s fch_txw/s", ["FCHOST"]),
    _spec("psi-cpu", "%scpu-10 %scpu-60 %scpu-300 %scpu"),
    _spec("psi-io", "%sio-10 %sio-60 %sio-300 %sio %fio-10 %fio-60 %fio-300 %fio"),
    _spec("psi-mem", "%smem-10 %smem-60 %smem-300 %smem %fmem-10 %fmem-60 %fmem-300 %fmem"),
    _spec("serial", "rcvin/s xmtin/s txmtin/s framerr/s prtyerr/s brk/s ovrun/s", ["TTY"]),
]}

#: Columns ``sadf -d`` prints as whole numbers (sysstat's rndr_stats.c
#: renders them with ``PT_USEINT``); every other figure with two decimals.
SADF_INTEGERS = frozenset(
    [m for name in ("memory", "swap", "hugepages") for m in SECTIONS[name].metrics if m.startswith("kb")]
    + list(SECTIONS["file"].metrics[:4]) + ["file-sz", "inode-sz", "super-sz", "dquot-sz", "rtsig-sz"]
    + ["runq-sz", "plist-sz", "blocked"] + list(SECTIONS["net-sock"].metrics) + list(SECTIONS["net-sock6"].metrics)
    + ["blg_len", "MBfsfree", "MBfsused", "Ifree", "Iused", "maxpower", "%cap"])

#: Swap columns that sysstat 7 printed inside the ``-r`` memory table.
SWAP_COLUMNS = frozenset(SECTIONS["swap"].metrics)

#: Header of the all-CPU interrupt rate, whatever the version printed
#: (``intr/s`` before 12.7, ``all`` since, ``CPU*`` in ``sadf -d``).
INTERRUPT_RATE = "intr/s"

#: sysstat 7 per-CPU interrupt tables: ``CPU  i000/s  i001/s ...``.
_OLD_PER_CPU_IRQ = re.compile(r"^i(\d+)/s$")
#: Per-CPU interrupt columns of 12.x: ``CPU0``, ``CPU17``.
_PER_CPU_COLUMN = re.compile(r"^CPU\d+$")

_DEVICE_NAMES = frozenset(d for s in SECTIONS.values() for d in s.device)
_LABEL_NAMES = frozenset(l for s in SECTIONS.values() for l in s.labels)
#: Every column name a header can hold that is not a metric (devices, labels).
NAMED_COLUMNS = _DEVICE_NAMES | _LABEL_NAMES
#: A zone a locale's ``%X`` prints after the time (en_IN: ``01:42:28  IST``).
_ZONE_TOKEN = re.compile(r"^(?:[A-Z]{2,5}|[+-]\d\d:?\d\d)$")


def zone_before_columns(token: str, rest) -> bool:
    """Whether ``token``, after a header line's time, is a zone the locale
    printed there, ``rest`` being the header's columns: zone-shaped, no
    column name of sar's, and followed by the columns of a known table."""
    return bool(_ZONE_TOKEN.match(token)) and identify((token,)) is None and token not in NAMED_COLUMNS \
        and identify(tuple(rest)) is not None


@lru_cache(maxsize=None)
def _vocabulary() -> dict[str, tuple[str, ...]]:
    """Column name -> sections whose tables print it."""
    vocab: dict[str, list[str]] = {}
    for spec in SECTIONS.values():
        for word in spec.metrics + spec.device + spec.labels:
            vocab.setdefault(word, []).append(spec.name)
    return {k: tuple(v) for k, v in vocab.items()}


def identify(columns) -> str | None:
    """The section a header's column names belong to, or None.

    Each column votes for every section whose vocabulary holds it; a
    distinctive metric (held by one section) outweighs a shared one (``tps``
    is both ``io`` and ``disk``; ``CPU`` heads four tables), and the device
    column breaks ties.  Old per-CPU interrupt tables (``i000/s``) are
    interrupts.
    """
    vocab = _vocabulary()
    scores: dict[str, float] = {}
    for col in columns:
        if _OLD_PER_CPU_IRQ.match(col):
            scores["interrupts"] = scores.get("interrupts", 0) + 1.0
            continue
        if _PER_CPU_COLUMN.match(col):
            continue
        owners = vocab.get(col, ())
        for name in owners:
            scores[name] = scores.get(name, 0) + 1.0 / len(owners)
    if not scores:
        return None
    best = max(scores.values())
    tied = [n for n, s in scores.items() if s == best]
    if len(tied) > 1:
        with_device = [n for n in tied if set(SECTIONS[n].device) & set(columns)]
        tied = with_device or tied
    return tied[0]


@dataclass(frozen=True)
class TableLayout:
    """How to read the rows under one header.

    ``value_columns`` are ``(position, section, metric)`` triples; position
    counts the row's tokens after the time.  ``device_parts`` are the
    positions whose tokens, joined by ``:``, name the item (usually one
    column; ``BUS idvendor idprod`` for USB devices); empty when the table
    has no device column.  ``device_last`` says the device is the tail of the
    line (``sar -h``/``--pretty``, ``sar -F``), where a name with spaces
    takes several tokens.  ``fixed`` is how many leading tokens are read by
    position; the text columns after it are ignored.  ``transpose_irq``
    marks sysstat 7 per-CPU interrupt tables, whose columns are interrupts
    and rows CPUs.
    """

    section: str
    columns: tuple
    value_columns: tuple
    device_parts: tuple
    device_last: bool
    fixed: int
    transpose_irq: bool = False


@lru_cache(maxsize=4096)
def table_layout(columns: tuple) -> TableLayout | None:
    """Read a header's column names into a :class:`TableLayout` (None when the
    header matches no known section)."""
    section = identify(columns)
    if section is None:
        return None
    spec = SECTIONS[section]
    transpose = section == "interrupts" and any(_OLD_PER_CPU_IRQ.match(c) for c in columns)
    device_names = ("CPU",) if transpose else spec.device
    if section == "power-usb":
        device_names = ("BUS", "idvendor", "idprod")
    parts = tuple(i for i, c in enumerate(columns) if c in device_names)
    n = len(columns)
    device_last = parts == (n - 1,) and n > 1
    fixed = n
    while fixed > 0 and (columns[fixed - 1] in _LABEL_NAMES or (device_last and fixed == n)):
        fixed -= 1
    values = []
    for i, col in enumerate(columns[:fixed]):
        if i in parts or col in _DEVICE_NAMES or col in _LABEL_NAMES:
            continue
        values.append((i, _column_section(section, col), metric_name(section, col)))
    return TableLayout(section, columns, tuple(values), parts, device_last, fixed, transpose)


def _column_section(section: str, column: str) -> str:
    # sysstat 7 printed kbswpfree & co. inside the -r memory table
    if section == "memory" and column in SWAP_COLUMNS:
        return "swap"
    return section


def metric_name(section: str, column: str) -> str:
    """The metric name a header column stands for.  Only the interrupts
    all-CPU rate is renamed (its header is a CPU label, not a metric name);
    every other column keeps its printed name."""
    if section == "interrupts" and column in ("all", "CPU*", INTERRUPT_RATE):
        return INTERRUPT_RATE
    return column


def old_irq_number(column: str) -> str | None:
    """``i009/s`` -> ``9`` (the interrupt a sysstat 7 per-CPU column is for)."""
    m = _OLD_PER_CPU_IRQ.match(column)
    return str(int(m.group(1))) if m else None


def normalize_device(section: str, device: str) -> str:
    """Device names as the contract spells them: sadf's CPU ``-1`` is
    ``all``."""
    if device == "-1" and section in ("cpu", "softnet", "power-cpu"):
        return "all"
    return device


# --------------------------------------------------------------------------
# sadf -j / -x: activity names and field names

@dataclass(frozen=True)
class StructuredActivity:
    """One activity of ``sadf -j``/``-x`` output.

    ``device_key`` is the field naming the item (``iface``, ``disk-device``
    ...), ``renames`` maps field names to ``sadf -d`` heads where the generic
    rule (:func:`structured_metric`) does not find them.
    """

    section: str
    device_key: str | None = None
    renames: dict = field(default_factory=dict)
    skip: tuple = ()


_PSI = {
    "psi-cpu": "cpu", "psi-io": "io", "psi-mem": "mem",
}


def _psi_renames(kind: str) -> dict:
    out = {}
    for prefix, letter in (("some", "s"), ("full", "f")):
        for window in ("10", "60", "300"):
            out[f"{prefix}_avg{window}"] = f"%{letter}{kind}-{window}"
        out[f"{prefix}_avg"] = f"%{letter}{kind}"
    return out


#: JSON key / XML element of an activity -> how to read it.
STRUCTURED_ACTIVITIES: dict[str, StructuredActivity] = {
    "cpu-load": StructuredActivity("cpu", "cpu"),
    "cpu-load-all": StructuredActivity("cpu", "cpu"),
    "process-and-context-switch": StructuredActivity("tasks"),
    "swap-pages": StructuredActivity("swapping"),
    "paging": StructuredActivity("paging"),
    "io": StructuredActivity("io"),
    "memory": StructuredActivity("memory", renames={"inactive": "kbinact", "shared": "kbshmem"}),
    "hugepages": StructuredActivity("hugepages"),
    "kernel": StructuredActivity("file"),
    "queue": StructuredActivity("queue"),
    "serial": StructuredActivity("serial", "line"),
    "disk": StructuredActivity("disk", "disk-device"),
    "net-dev": StructuredActivity("net-dev", "iface"),
    "net-edev": StructuredActivity("net-edev", "iface"),
    "net-nfs": StructuredActivity("net-nfs"),
    "net-nfsd": StructuredActivity("net-nfsd"),
    "net-sock": StructuredActivity("net-sock"),
    "net-ip": StructuredActivity("net-ip"),
    "net-eip": StructuredActivity("net-eip"),
    "net-icmp": StructuredActivity("net-icmp"),
    "net-eicmp": StructuredActivity("net-eicmp"),
    "net-tcp": StructuredActivity("net-tcp"),
    "net-etcp": StructuredActivity("net-etcp"),
    "net-udp": StructuredActivity("net-udp"),
    "net-sock6": StructuredActivity("net-sock6"),
    "net-ip6": StructuredActivity("net-ip6"),
    "net-eip6": StructuredActivity("net-eip6"),
    "net-icmp6": StructuredActivity("net-icmp6"),
    "net-eicmp6": StructuredActivity("net-eicmp6"),
    "net-udp6": StructuredActivity("net-udp6"),
    "fchosts": StructuredActivity("fchost", "fchost"),
    "fchost": StructuredActivity("fchost", "fchost"),
    "softnet": StructuredActivity("softnet", "cpu"),
    "interrupts": StructuredActivity("interrupts", "intr"),
    "cpu-frequency": StructuredActivity("power-cpu", "number", {"frequency": "MHz"}),
    "cpu-weighted-frequency": StructuredActivity("power-cpu", "number", {"weighted-frequency": "wghMHz"}),
    "fan-speed": StructuredActivity("power-fan", "number", skip=("device",)),
    "temperature": StructuredActivity("power-temp", "number", {"percent-temp": "%temp"}, ("device",)),
    "voltage-input": StructuredActivity("power-in", "number", {"percent-in": "%in"}, ("device",)),
    "usb-devices": StructuredActivity("power-usb", "bus_number",
                                      skip=("idvendor", "idprod", "manufact", "product")),
    "battery": StructuredActivity("power-bat", "number",
                                  {"percent-capacity": "%cap", "variation": "cap/min"}, ("status",)),
    "filesystems": StructuredActivity("filesystem", "filesystem"),
    "psi-cpu": StructuredActivity("psi-cpu", renames=_psi_renames("cpu")),
    "psi-io": StructuredActivity("psi-io", renames=_psi_renames("io")),
    "psi-mem": StructuredActivity("psi-mem", renames=_psi_renames("mem")),
}

#: Fields that name the item in XML elements (XML uses other attribute names
#: than JSON for a few of them).
XML_DEVICE_KEYS = ("number", "cpu", "dev", "iface", "intr", "line", "name", "fsname",
                   "mountpoint", "bus_number", "fchost", "filesystem", "disk-device")

#: XML container elements: they hold activity elements, no values.
XML_CONTAINERS = frozenset({"network", "power-management", "psi", "io-reads", "io-writes", "io-discard"})


@lru_cache(maxsize=4096)
def structured_metric(section: str, key: str, activity: str | None = None) -> str:
    """``sadf -j``/``-x`` field name -> the ``sadf -d`` head of the same value.

    Explicit renames win; otherwise the first of ``key``, ``key/s``,
    ``%key`` (from ``key-percent``), ``kbkey`` that the section's vocabulary
    knows; memory's swap fields belong to ``swap`` (see
    :func:`structured_section`).  Unknown fields keep their own name.
    """
    act = STRUCTURED_ACTIVITIES.get(activity or "")
    if act and key in act.renames:
        return act.renames[key]
    if section == "interrupts" and key in ("all", "value"):
        return INTERRUPT_RATE
    base = key
    percent = False
    if base.endswith("-percent"):
        base, percent = base[: -len("-percent")], True
    elif base.startswith("percent-"):
        base, percent = base[len("percent-"):], True
    known = set(SECTIONS[section].metrics)
    if section == "memory":
        known |= SWAP_COLUMNS
    if percent:
        candidates = [f"%{base}"]
    else:
        candidates = [base, f"{base}/s", f"kb{base}", f"%{base}"]
    for cand in candidates:
        if cand in known:
            return cand
    if not percent and section in ("disk",) and base.endswith("_sec"):
        return f"{base}/s"
    return f"%{base}" if percent else base


def structured_section(section: str, metric: str) -> str:
    """Section a translated metric belongs to (``sadf -j`` keeps swap figures
    inside ``memory``)."""
    return _column_section(section, metric)


def owners(column: str) -> set:
    """Sections whose tables print a column of this name."""
    if _OLD_PER_CPU_IRQ.match(column) or column == "CPU*":
        return {"interrupts"}
    return set(_vocabulary().get(column, ()))


def is_device_column(name: str) -> bool:
    return name in _DEVICE_NAMES


def is_label_column(name: str) -> bool:
    return name in _LABEL_NAMES
