"""`gdsdoctor watch`: sample the checkpoint path while a checkpoint is written, find its write
phases and what limited them, and judge the timeline with the same rules engine.

``devices`` resolves the path to block devices; ``sampler`` reads the counters (rooted, each file
parsed by a pure function); ``events`` follows the kernel log and udev; ``phases`` finds write
phases and their limiters (pure); ``timeline`` is the recorded form and its probe; ``view``
draws the live view; ``session`` runs the loop.
"""
