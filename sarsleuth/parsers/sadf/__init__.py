"""``sadf -d`` (CSV), ``sadf -j`` (JSON) and ``sadf -x`` (XML) output."""
