"""Load-test reports (ab, wrk, wrk2, httperf, tsar), read with lark grammars."""

#: The modules of this package that hold parser classes: the registry imports
#: only these to sniff a file; each tool's reader and the grammars load when
#: a file is read.
PARSER_MODULES = ("parser",)
