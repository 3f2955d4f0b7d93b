"""Logs: syslog, the journal (journalctl's outputs, its export format and
its binary files), dmesg, nginx error.log and the logs PostgreSQL and
PHP-FPM write themselves, read as streams of blocks with a multi-pattern
prefilter, assembled into events."""

#: The modules of this package that hold parser classes: the registry imports
#: only these to sniff a file; the scanner, its prefilter engines and the signatures load when a file is read.
PARSER_MODULES = ("dmesg", "journal", "journal_binary", "journal_export", "nginx_error", "service_logs", "syslog")
