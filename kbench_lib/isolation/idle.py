"""Telling a worker that hangs idle from one that works, by the CPU time its processes use.

A candidate that sleeps, waits on a lock or a pipe nobody writes, or stops itself uses no CPU: such
a hang is visible long before the run's time limit (180 s by default), which it would otherwise
use up in full. A worker that computes uses CPU, and so does one waiting on the GPU: CUDA's
default wait (``cudaDeviceScheduleAuto`` with fewer contexts than cores) spins or yields on a
core, and Triton's and the C++ compilers run as processes of the worker's session. So "idle" here
is: the worker's session (the worker and every process it started that stayed in its session)
used less than :data:`IDLE_CPU_S` of CPU time over the whole idle limit.

This can only end a candidate sooner, as a ``timeout``; it never lets anything pass. A hang that
spins (a busy loop, a kernel that never ends while the host spins on it) still runs into the run's
time limit. A candidate that leaves its session to look idle only ends itself earlier.

Read from ``/proc`` (Linux); where that cannot be read, nothing is ever called idle.
"""
from __future__ import annotations

import os

IDLE_CPU_S = 0.05  # CPU seconds over the whole idle limit under which a session counts as idle
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def session_cpu_s(sid: int) -> float | None:
    """CPU seconds (user and system, with those of reaped children) of every process in session
    ``sid``, or None when no such process can be read."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    ticks, found = 0, False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:  # ended meanwhile, or not ours to read
            continue
        fields = stat[stat.rfind(b")") + 2:].split()  # after "pid (comm) ": state, ppid, pgrp, session, ...
        try:
            if int(fields[3]) != sid:
                continue
            ticks += sum(int(x) for x in fields[11:15])  # utime, stime, cutime, cstime
        except (IndexError, ValueError):
            continue
        found = True
    return ticks / _TICK if found else None


class IdleWatch:
    """How long session ``sid`` has been idle: seconds since its CPU time last grew by
    :data:`IDLE_CPU_S`. Call :meth:`idle_s` now and then; it reads ``/proc`` each time."""

    def __init__(self, sid: int, now: float):
        self.sid = sid
        self._since, self._cpu = now, session_cpu_s(sid)

    def idle_s(self, now: float) -> float:
        cpu = session_cpu_s(self.sid)
        # a fall: a process of the session ended unreaped by another of it; a change all the same
        if cpu is None or self._cpu is None or cpu < self._cpu or cpu - self._cpu >= IDLE_CPU_S:
            self._since, self._cpu = now, cpu
        return now - self._since
