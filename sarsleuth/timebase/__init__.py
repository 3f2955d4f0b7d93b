"""Putting every source of a case on one clock: years of syslog lines,
zones per host, dmesg uptime anchors."""
