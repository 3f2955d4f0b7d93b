"""Runs of numbers written compactly for the HTML report's explorer: whole
numbers (times in seconds, values in the hundredths sar prints), each the
difference from the one before, in the variable-length ASCII code of map
polylines (five bits a character, characters ``?`` to ``~``: no ``<``,
``&`` or quote, so the text sits in the page's JSON as it is).  A value
is sent in the decimals sar prints it with, rounded as its ``%.2f`` rounds,
so the explorer shows the number sar printed; a missing value is one
character.  ``templates/explorer.js`` reads them back (``decode``)."""
from __future__ import annotations

import numpy as np

#: Largest whole number a browser's numbers hold exactly (2^53), with room
#: for the sign and the missing-value bit: larger values lose decimals.
LARGEST = 2 ** 50
#: Five bits of a number in each character, the sixth says more follow.
_CHUNKS = 12


def _characters(tokens: np.ndarray) -> str:
    """Non-negative whole numbers (uint64) as characters."""
    if not len(tokens):
        return ""
    t = tokens.astype(np.uint64)
    chunks = np.empty((len(t), _CHUNKS), dtype=np.uint8)
    for i in range(_CHUNKS):
        chunks[:, i] = ((t >> np.uint64(5 * i)) & np.uint64(31)).astype(np.uint8)
    nonzero = chunks != 0
    count = np.where(nonzero.any(axis=1), _CHUNKS - np.argmax(nonzero[:, ::-1], axis=1), 1)
    column = np.arange(_CHUNKS)[None, :]
    codes = 63 + chunks + 32 * (column < (count[:, None] - 1))
    return codes[column < count[:, None]].astype(np.uint8).tobytes().decode("ascii")


def _zigzag(d: np.ndarray) -> np.ndarray:
    return np.where(d >= 0, 2 * d, -2 * d - 1).astype(np.uint64)


def encode_times(seconds) -> str:
    """Ascending whole numbers (seconds or milliseconds) as differences."""
    v = np.asarray(seconds, dtype=np.int64)
    return _characters(_zigzag(np.diff(v, prepend=np.int64(0))))


def decimals_that_fit(values, decimals: int) -> int:
    """``decimals``, or fewer where the values are too large to be sent
    whole in that many (a counter gone wild: 7.6e14 %)."""
    finite = np.abs(values[np.isfinite(values)])
    top = float(finite.max()) if len(finite) else 0.0
    while decimals > -15 and top * 10.0 ** decimals >= LARGEST:
        decimals -= 1
    return decimals


def scaled(values, decimals: int) -> np.ndarray:
    """Values as whole numbers of 10^-decimals, rounded half to even on the
    exact binary value as C's ``%.2f`` rounds (float64; NaN kept)."""
    v = np.asarray(values, dtype=np.float64)
    out = np.rint(v * 10.0 ** decimals)
    if decimals > 0:
        s = v * 10.0 ** decimals
        near = np.isfinite(s) & (np.abs(np.abs(s - np.trunc(s)) - 0.5) < 1e-6)
        for i in np.flatnonzero(near):
            out[i] = round(float(f"{v[i]:.{decimals}f}") * 10 ** decimals)
    return out


def encode_values(values, decimals: int) -> str:
    """Values (NaN: none at that time) in ``decimals`` decimals, as
    differences; a missing value is the odd code 1."""
    whole = scaled(values, decimals)
    missing = ~np.isfinite(whole)
    present = np.where(missing, 0, whole).astype(np.int64)
    # the difference is from the last value present before (0 for the first)
    last = np.maximum.accumulate(np.where(missing, -1, np.arange(len(present))))
    previous = np.concatenate(([-1], last[:-1]))
    before = np.where(previous >= 0, present[np.maximum(previous, 0)], 0)
    tokens = np.where(missing, np.uint64(1), _zigzag(present - before) * np.uint64(2))
    return _characters(tokens.astype(np.uint64))
