"""The ``sa`` kind as the parser registry sees it: sniffing needs only the
first bytes and the standard library, so this module imports neither numpy
nor the reader; :meth:`SaBinaryParser.parse` loads the reader when a file is
read."""
from __future__ import annotations

from sarsleuth.errors import InputError
from sarsleuth.inputs.parsers.base import ParseOptions, Parser
from sarsleuth.inputs.parsers.sa import header_2169
from sarsleuth.inputs.parsers.sa.magic import FORMAT_MAGICS, sniff_magic


class SaBinaryParser(Parser):
    kind = "sa"
    priority = 10
    binary = True           # sniffed on raw bytes, NUL bytes included
    description = ("sysstat binary activity files (sa01..sa31) of every release since 6.1: 0x2169 (sysstat "
                   "6.1-7.0, RHEL 5), 0x2170 (9.0-9.1.5, RHEL 6.0-6.4), 0x1170 (Red Hat's 9.0.4 of RHEL 6.5-6.10), "
                   "0x2171, 0x2173, 0x2175; either byte order, 32- or 64-bit writers")
    shape = "records"

    @classmethod
    def hosts_in(cls, path, head: bytes) -> tuple[tuple, dict]:
        """The header's nodename, kernel and CPUs."""
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.sa.layout import read_layout
        try:
            layout = read_layout(path, head)
        except InputError:
            # the header did not fit the head, or is damaged: the parser says
            # which byte when the host's pipeline reads it
            return (), {}
        return ((layout.host,) if layout.host else ()), {"kernel": layout.kernel, "ncpu": layout.ncpu}

    @classmethod
    def sniff(cls, head: bytes, text: str) -> float:
        found = sniff_magic(head)
        if found is None:
            return 1.0 if header_2169.sniff(head) is not None else 0.0
        return 1.0 if found[1] in FORMAT_MAGICS else 0.6

    @classmethod
    def parse(cls, path, options: ParseOptions):
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.sa.reader import read_file
        return read_file(path, options)

    @classmethod
    def stream(cls, path, options: ParseOptions):
        """(Source whose ``metrics`` holds the first slice of records, an
        iterator of the frames of the other slices or None when the Source
        is whole): the long table a slice at a time, for writers that need
        never hold all of it."""
        # here, not at the top: sniff loads this module
        from sarsleuth.inputs.parsers.sa.stream import stream_file
        return stream_file(path, options)
