"""Old home of :mod:`kbench_lib.isolation.forkserver`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.forkserver``, ``from kbench_lib.forkserver import X`` and patching ``kbench_lib.forkserver.X`` reach the module itself."""
if __name__ == "__main__":  # python -m kbench_lib.forkserver: run the module itself as __main__
    import runpy

    runpy.run_module("kbench_lib.isolation.forkserver", run_name="__main__", alter_sys=True)
else:
    import sys

    from .isolation import forkserver as _moved

    sys.modules[__name__] = _moved
