"""The checkpoint models: how long a checkpoint stalls the GPUs (:mod:`.stall`) and what its
path can deliver (:mod:`.line_rate`). Pure computation, low in the tree: the facts import them."""
