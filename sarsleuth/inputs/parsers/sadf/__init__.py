"""``sadf -d`` (CSV), ``sadf -j`` (JSON) and ``sadf -x`` (XML) output."""

#: The modules of this package that hold parser classes: the registry imports
#: only these to sniff a file; the readers load when a file is read.
PARSER_MODULES = ("parser",)
