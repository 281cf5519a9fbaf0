"""The checkpoint models: how long a checkpoint stalls the GPUs (:mod:`.stall`), what its path
can deliver (:mod:`.line_rate`), and the write phases of a watched checkpoint (:mod:`.phases`,
what limited them: :mod:`.limiters`, the recording's records: :mod:`.records`). Pure computation, low in
the tree: the probes and the facts import them."""

DEFAULT_BUDGET = "5%"  # share of wall time a checkpoint may stall the job when none is given
