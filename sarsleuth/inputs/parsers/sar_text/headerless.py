"""sar rows pasted without their header line: which table they are, told
by what their values must satisfy, never by their count alone.

* CPU rows (``sar -u``, ``-u ALL``, ``-P ALL``): the CPU (``all`` or a
  number), then percentages that sum to 100 (sar prints each rounded to two
  decimals: the sum is 100 within half a hundredth per column);
* queue rows (``sar -q``): two whole counts (runq-sz never above plist-sz),
  three load averages, and on sysstat 10+ a whole ``blocked``;
* swap rows (``sar -S``): kbswpfree, kbswpused, %swpused (used / (free +
  used)), kbswpcad, %swpcad (cached / used), as sar computes them.

The columns are sysstat's own names for the release whose layout the row
has (``sar -u`` of 5.x printed no %steal)."""
from __future__ import annotations

#: sar -u by the number of values after the CPU (sysstat 5.x, 6.x and later; -u ALL of 9.x, 10.1+)
CPU_COLUMNS = {
    5: ("%user", "%nice", "%system", "%iowait", "%idle"),
    6: ("%user", "%nice", "%system", "%iowait", "%steal", "%idle"),
    9: ("%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%idle"),
    10: ("%usr", "%nice", "%sys", "%iowait", "%steal", "%irq", "%soft", "%guest", "%gnice", "%idle"),
}
QUEUE_COLUMNS = {5: ("runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15"),
                 6: ("runq-sz", "plist-sz", "ldavg-1", "ldavg-5", "ldavg-15", "blocked")}
SWAP_COLUMNS = ("kbswpfree", "kbswpused", "%swpused", "kbswpcad", "%swpcad")
#: what each table is called in the warning
TABLES = {"%user": "sar -u", "%usr": "sar -u ALL", "runq-sz": "sar -q", "kbswpfree": "sar -S"}


def _numbers(tokens: list) -> list | None:
    try:
        return [float(t.replace(",", ".")) for t in tokens]
    except ValueError:
        return None


def _whole(token: str) -> bool:
    return token.isdigit()


def guess_columns(rest: list) -> tuple | None:
    """The header a headerless row's table has (the CPU column first for
    CPU rows), or None when its values fit no table."""
    if rest and (rest[0] == "all" or _whole(rest[0])) and len(rest) - 1 in CPU_COLUMNS:
        values = _numbers(rest[1:])
        if values is not None and all(0 <= v <= 100 for v in values) and \
                abs(sum(values) - 100.0) <= 0.005 * len(values) + 1e-9:
            return ("CPU",) + CPU_COLUMNS[len(values)]
    values = _numbers(rest)
    if values is None:
        return None
    if len(rest) in QUEUE_COLUMNS and _whole(rest[0]) and _whole(rest[1]) and values[0] <= values[1] and \
            all("." in t or "," in t for t in rest[2:5]) and (len(rest) == 5 or _whole(rest[5])):
        return QUEUE_COLUMNS[len(rest)]
    if len(rest) == 5 and _whole(rest[0]) and _whole(rest[1]) and _whole(rest[3]):
        free, used, pct, cad, pct_cad = values
        if free + used > 0 and abs(pct - used / (free + used) * 100) <= 0.005 + 1e-9 and \
                abs(pct_cad - (cad / used * 100 if used else 0.0)) <= 0.005 + 1e-9:
            return SWAP_COLUMNS
    return None
