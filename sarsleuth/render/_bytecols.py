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
