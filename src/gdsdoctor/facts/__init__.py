"""Facts: one JSON-like document per host, one section per source, plus derived facts."""
