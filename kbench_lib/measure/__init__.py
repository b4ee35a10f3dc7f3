"""Measuring inside the candidate's process and the judge's: output comparison and fingerprints, tensors
and their transfer (tensor files, the device arena), timing and its head start, profiling, Nsight Compute.
"""
