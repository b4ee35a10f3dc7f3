"""The judge: the pipeline (:mod:`.pipeline`) and its stages in the judge's
process: the prepared reference, builds, configuration checks, guards, baselines, TF32 checks.
"""
