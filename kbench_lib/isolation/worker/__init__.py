"""The candidate's process, stage by stage: what ``python -m kbench_lib.isolation.worker {build|run} JOBDIR``
runs (:mod:`.__main__` is its entry; the fork server imports it and calls its ``main``).

WARNING: this process imports and runs untrusted code. Everything these modules rely on after the
candidate is imported is bound before the import and checked afterwards (:mod:`.tamper`).

- :mod:`.report`: the message channel to the judge, tracebacks and failure categories
- :mod:`.start`: before the candidate exists: the job, the device, the gate, the out folder
- :mod:`.drawing`: the judge's input sets, drawn in this process (timed ones lazily, checked around each draw)
- :mod:`.results`: the result files, output checks, samples of timed outputs
- :mod:`.probes`: what the process looks like: threads, processes, global numerics settings
- :mod:`.tamper`: the harness's objects by identity, and what the candidate left behind
- :mod:`.checks`: the correctness calls, configuration by configuration
- :mod:`.timed`: the profile and the timed runs
- :mod:`.lazy_compile`: build mode, after ``built``: the warm-up call under fake tensors of a
  candidate that compiles its extension at its first call
- :mod:`.run`: the stages in order (``run``, ``main``)
- :mod:`.__main__`: the process's entry (``python -m kbench_lib.isolation.worker``), which calls ``run.main``

This ``__init__`` imports none of them: the judge imports :func:`.timed.timing_file` and
:func:`.timed.timing_groups` from their stage.
"""
