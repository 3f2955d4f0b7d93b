"""Logs: syslog, journal, dmesg and nginx error.log, read as streams of
blocks with a multi-pattern prefilter, assembled into events."""
