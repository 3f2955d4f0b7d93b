"""sysstat binary ``sa`` files: layout of every format version, record
walking, per-activity decoding and the rates sar computes, plus a writer
used to build test files."""
