"""``sar`` text output (``sar -A`` and hand-pasted sections) and the
section/column definitions shared with the sadf readers."""
