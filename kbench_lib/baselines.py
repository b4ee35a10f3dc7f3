"""Old home of :mod:`kbench_lib.judging.baselines`: this name is the same module object (``sys.modules``), so that
``import kbench_lib.baselines``, ``from kbench_lib.baselines import X`` and patching ``kbench_lib.baselines.X`` reach the module itself."""
if __name__ == "__main__":  # python -m kbench_lib.baselines: run the module itself as __main__
    import runpy

    runpy.run_module("kbench_lib.judging.baselines", run_name="__main__", alter_sys=True)
else:
    import sys

    from .judging import baselines as _moved

    sys.modules[__name__] = _moved
