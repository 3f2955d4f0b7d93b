"""sysstat binary ``sa`` files: layout of every format version, record
walking, per-activity decoding and the rates sar computes, plus a writer
used to build test files."""

#: The modules of this package that hold parser classes: the registry imports
#: only these to sniff a file; the reader and its numpy code load when a file
#: is read.
PARSER_MODULES = ("parser",)
