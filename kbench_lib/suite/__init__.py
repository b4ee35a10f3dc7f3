"""The benchmark suite: problem files and their configurations, the reference side of a problem,
derived variants, the problem checks and lint, roofline estimates, stored baselines.

Importing the package imports :mod:`.variants`, which gives :meth:`.problems.Problem.configs` its derived
variants (problems sits below variants and does not import it).
"""
from . import variants  # noqa: F401 - registers the derived variants of Problem.configs
