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


def exact(number, factor="1") -> float:
    """``number * factor`` computed in decimal, so 111.91 ms gives 0.11191."""
    return float(Decimal(str(number)) * Decimal(str(factor)))


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
    return int(str(text).strip())


def percentile_key(text: str) -> str:
    """``'99.900%'`` -> ``'99.9'``; ``'50%'`` -> ``'50'``."""
    value = Decimal(text.strip().rstrip("%")).normalize()
    return format(value, "f")


# --------------------------------------------------------------------------
# shell command lines pasted with a report
