"""Text made by numpy a column at a time: each field of a chunk of rows is a
fixed-width block of bytes (numbers written digit by digit by place value,
labels gathered from a small table of their texts), the blocks laid side
by side, and the padding byte squeezed out, so that no Python call is made
per row or value.  A text never holds the padding byte (NUL), which is
dropped from labels.
"""
from __future__ import annotations

import numpy as np

PAD = 0                 # filler byte of the fixed-width blocks, squeezed out
ZERO, MINUS, DOT = ord("0"), ord("-"), ord(".")
#: Python's repr writes a float positionally from 1e-4 up to 1e16; below
#: 1e15 a value of at most 15 digits is found here, digit by digit.
POSITIONAL = (1e-4, 1e15)
#: Most decimals tried; a value that needs more is left to repr.
MOST_DECIMALS = 15


def squeezed(parts) -> bytes:
    """The rows of the blocks side by side, padding left out."""
    rows = np.hstack(parts) if len(parts) > 1 else parts[0]
    return rows[rows != PAD].tobytes()


def column(byte: int, n: int):
    """A one-byte block (a separator, a line end)."""
    return np.full((n, 1), byte, dtype=np.uint8)


def constant(text: bytes, n: int):
    return np.tile(np.frombuffer(text, dtype=np.uint8), (n, 1))


def text_table(texts: list):
    """Texts (bytes) as the rows of one block, padded; NULs dropped."""
    width = max((len(t) for t in texts), default=0)
    out = np.zeros((len(texts), max(width, 1)), dtype=np.uint8)
    for i, t in enumerate(texts):
        t = t.replace(b"\0", b"")
        out[i, :len(t)] = np.frombuffer(t, dtype=np.uint8)
    return out


def digits(a, width: int):
    """Decimal digits of non-negative int64s, right-aligned in ``width``
    columns, the leading zeros padding (one digit at least); and the column
    of each first digit."""
    out = np.empty((len(a), width), dtype=np.uint8)
    x = a.copy()
    for j in range(width - 1, -1, -1):
        out[:, j] = ZERO + x % 10
        x //= 10
    lead = np.argmax(out != ZERO, axis=1)
    lead = np.where(a == 0, width - 1, lead)
    out[np.arange(width) < lead[:, None]] = PAD
    return out, lead


def width_of(a) -> int:
    top = int(a.max()) if len(a) else 0
    return max(len(str(top)), 1)


def signed(mag, neg, missing):
    """Integers (magnitudes and signs) as a block with a column for the
    sign; nothing where missing."""
    found, lead = digits(mag, width_of(mag))
    out = np.hstack([np.full((len(mag), 1), PAD, dtype=np.uint8), found])
    rows = np.flatnonzero(neg)
    out[rows, lead[rows]] = MINUS
    out[missing] = PAD
    return out


def place(block, rows, texts):
    """Rows of a block replaced by texts of their own (rare values a
    caller formats in Python), the block widened as they need."""
    if not len(rows):
        return block
    encoded = [t.encode() for t in texts]
    width = max(block.shape[1], max(len(t) for t in encoded))
    if width > block.shape[1]:
        block = np.hstack([np.full((len(block), width - block.shape[1]), PAD, dtype=np.uint8), block])
    for i, text in zip(rows, encoded):
        block[i] = PAD
        block[i, width - len(text):] = np.frombuffer(text, dtype=np.uint8)
    return block


def floats(v):
    """Float64s as Python's ``repr`` writes them (``12.5``, ``3.0``,
    ``-0.0``), as a block, for every value written positionally with at
    most 15 digits: the fewest decimals ``d`` (one at least) for which
    ``round(|v| * 10**d) / 10**d`` is ``|v|`` again; that decimal then
    reads back as ``v``, and no shorter one does, which is ``repr``'s
    rule.  (The product is off by less than a quarter of a unit below
    1e15, so the rounding finds the digits.)  Returns (block, the rows
    left to the caller: NaN, infinities, exponent notation, more digits),
    those rows padding in the block.  A third of the time of ``repr``
    value by value."""
    n = len(v)
    a = np.abs(v)
    with np.errstate(invalid="ignore"):
        todo = np.flatnonzero(((a >= POSITIONAL[0]) & (a < POSITIONAL[1])) | (v == 0))
    decimals = np.ones(n, dtype=np.int64)
    number = np.zeros(n, dtype=np.int64)
    found = np.zeros(n, dtype=bool)
    for d in range(1, MOST_DECIMALS + 1):
        if not len(todo):
            break
        scale = 10.0 ** d
        r = np.rint(a[todo] * scale)
        small = r < 1e15
        ok = small & (r / scale == a[todo])
        done = todo[ok]
        decimals[done], number[done], found[done] = d, r[ok].astype(np.int64), True
        todo = todo[~ok & small]
    decimals[~found] = 1
    whole, fraction = np.divmod(number, 10 ** decimals)
    before, _lead = digits(whole, width_of(whole))
    # the fraction's digits, zeros before them kept, left-aligned
    most = int(decimals.max()) if n else 1
    f = fraction * 10 ** (most - decimals)
    after = np.empty((n, most), dtype=np.uint8)
    for j in range(most - 1, -1, -1):
        after[:, j] = ZERO + f % 10
        f //= 10
    after[np.arange(most)[None, :] >= decimals[:, None]] = PAD
    sign = np.where(found & np.signbit(v), MINUS, PAD).astype(np.uint8)[:, None]
    block = np.hstack([sign, before, column(DOT, n), after])
    block[~found] = PAD
    return block, np.flatnonzero(~found)
