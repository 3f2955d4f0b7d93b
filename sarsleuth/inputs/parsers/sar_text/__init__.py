"""``sar`` text output (``sar -A`` and hand-pasted sections) and the
section/column definitions shared with the sadf readers."""

#: The modules of this package that hold parser classes: the registry imports
#: only these to sniff a file; the row readers and their numpy code load when a file is read.
PARSER_MODULES = ("reader",)
