"""Running untrusted code: the sandbox, the warm fork servers and their pool, the process setup they
share (scrubbed environment, limits, namespaces), and the worker process itself
(:mod:`kbench_lib.isolation.worker`: its stages, and its entry ``__main__``, whose package name is
the process's command line, ``python -m kbench_lib.isolation.worker``).
"""
