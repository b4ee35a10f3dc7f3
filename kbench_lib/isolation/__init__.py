"""Running untrusted code: the sandbox, the warm fork servers and their pool, the process setup they
share (scrubbed environment, limits, namespaces). The worker process itself is :mod:`kbench_lib.worker`
(its module name is its command line); its stages are the modules of :mod:`kbench_lib.isolation.worker`.
"""
