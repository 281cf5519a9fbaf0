"""Engine: load the YAML diagnostic matrix, evaluate it over the facts, rank the findings."""
