"""The candidate's process: ``python -m kbench_lib.isolation.worker {build|run} JOBDIR``.

WARNING: this process imports and runs untrusted code. It is started by :mod:`kbench_lib.isolation.sandbox`
(scrubbed environment, private directory, limits, no network) and holds nothing worth stealing:
no expected output, no comparison. It receives a job (``job.json`` and one ``case_<i>.pt`` per
configuration and seed, written by the judge), runs ``ModelNew`` on each case's inputs, writes the
raw outputs (and the inputs as they are after the call) to ``out/``, times the default configuration
over a rotation of input sets (then each variant with timed sets in the job, ``time_variants``),
and reports events as JSON lines on the message pipe. The judge decides everything else.

Everything the worker relies on after the candidate is imported is bound before the import
(torch functions, timers) and checked afterwards (:mod:`.tamper`).

This module is only the process's entry. Its name is the command line: the sandbox routes
``-m kbench_lib.isolation.worker run`` to a warm fork server, whose child imports this module and
calls its ``main`` (:mod:`kbench_lib.isolation.forkserver`). The stages are the other modules of
this package, each the home of its own names (:mod:`.run` holds ``main`` and ``run``).
"""
from __future__ import annotations

from .run import main

if __name__ == "__main__":
    main()
