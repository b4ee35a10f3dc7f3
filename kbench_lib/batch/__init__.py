"""Batches: the runner, its lanes and lane processes' host side, held references, overlap, and what
is done with one sample (:mod:`.verdicts`). The lane's own process is :mod:`kbench_lib.batch.lane_process`.
"""
