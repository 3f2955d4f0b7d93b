"""Numbers the load-test tools print, converted exactly (Decimal keeps the
printed digits), with their units."""
from __future__ import annotations

import re
from decimal import Decimal

_TIME_FACTORS = {"us": "0.000001", "usec": "0.000001", "ms": "0.001", "msec": "0.001",
                 "s": "1", "sec": "1", "m": "60", "min": "60", "h": "3600"}
_SIZE_FACTORS = {"": 1, "B": 1, "K": 1024, "KB": 1024, "M": 1024**2, "MB": 1024**2,
                 "G": 1024**3, "GB": 1024**3, "T": 1024**4, "TB": 1024**4}
_METRIC_FACTORS = {"": 1, "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3}
_NUMBER_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


#: The largest count a tool's 64-bit counter can print: more is no count
#: but a damaged or forged line (a value outside its range is no evidence).
MAX_COUNT = 2**63 - 1


def exact(number, factor="1") -> float:
    """``number * factor`` computed in decimal, so 111.91 ms gives 0.11191;
    a value no double holds (hundreds of digits) is refused."""
    value = float(Decimal(str(number)) * Decimal(str(factor)))
    if value != value or value in (float("inf"), float("-inf")) or abs(value) > MAX_COUNT:
        raise ValueError(f"{_digits(number)} is out of any measured range")
    return value


def split_unit(text: str) -> tuple[str, str]:
    m = _NUMBER_UNIT.match(text)
    if not m:
        raise ValueError(f"not a number with a unit: {text!r}")
    return m.group(1), m.group(2)


def seconds(text: str, default_unit: str = "s") -> float:
    """``'2.53m'`` -> 151.8 (wrk's ``m`` is minutes), ``'17.00us'`` -> 1.7e-05."""
    number, unit = split_unit(text)
    return exact(number, _TIME_FACTORS[unit or default_unit])


def size_bytes(text: str) -> float:
    """``'3.55MB'`` -> 3722444.8 (1024-based, as wrk and tsar print sizes)."""
    number, unit = split_unit(text)
    return exact(number, _SIZE_FACTORS[unit])


def metric_count(text: str) -> float:
    """``'5.73k'`` -> 5730.0 (wrk's Req/Sec uses metric prefixes)."""
    number, unit = split_unit(text)
    return exact(number, _METRIC_FACTORS[unit])


def integer(text) -> int:
    """A count as printed; more than a 64-bit counter holds is refused."""
    value = int(str(text).strip())
    if abs(value) > MAX_COUNT:
        raise ValueError(f"{_digits(text)} is more than a 64-bit counter holds")
    return value


def _digits(text) -> str:
    text = str(text).strip()
    return text if len(text) <= 24 else f"a number of {len(text):,} digits"


def percentile_key(text: str) -> str:
    """``'99.900%'`` -> ``'99.9'``; ``'50%'`` -> ``'50'``."""
    value = Decimal(text.strip().rstrip("%")).normalize()
    return format(value, "f")


# --------------------------------------------------------------------------
# shell command lines pasted with a report
