"""Which warm fork server (:mod:`kbench_lib.isolation.forkserver`) a judging thread forks its workers from.

Each thread has its own server (its conversation with the server is its own; one thread per GPU
judges at a time). Starting one costs the import of torch in a fresh interpreter, several seconds,
so a server is never started twice where one can be had:

- :func:`prestart` starts the calling thread's server in the background, so that its start
  overlaps with what the thread does before its first worker (preparing a reference, measuring
  the eager baseline);
- a server whose thread has ended (a batch's judging thread, once the batch is done) goes to the
  next thread that asks, if it was started with the same environment: the next batch of the same
  process (a notebook judging several models, a benchmark's passes) starts none. A server is only
  ever used with the environment it was started with (what its imports read at import).

Servers are not started as interpreters of their own but forked, each kept to its cores, by a
zygote (:func:`kbench_lib.isolation.forkserver.zygote`): one per environment (less the cores), warmed up
once, whatever the number of GPUs: servers started as interpreters at once slow each other down
(two: up to 12 s each, against 8-9 s for one alone).

A server never runs candidate code (each worker is a fresh fork of it), so handing one on shares
nothing between candidates that sharing it within one batch does not. Every zygote is
started from one long-lived thread of the judge (:class:`_Spawner`): a zygote gets SIGKILL when the
thread that started it ends (``process_setup.die_with_parent``), and its servers when it ends, so one
started by a batch's thread could not outlive that batch.
"""
from __future__ import annotations

import os
import queue
import subprocess
import sys
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .forkserver import Zygote


@dataclass
class _Entry:
    cuda: bool
    env: dict
    owner: int | None  # the thread ident that uses it; None: free for any thread
    started: Future = field(default_factory=Future)  # its ForkServer, or None where one cannot run

    def usable(self) -> bool:
        """Starting, or started and alive, or known not to start here (not retried)."""
        if not self.started.done():
            return True
        if self.started.exception() is not None:
            return False
        server = self.started.result()
        return server is None or server.alive()


_ENTRIES: list[_Entry] = []
_LOCK = threading.Lock()


class _Spawner:
    """Runs ``subprocess.Popen`` on one thread that lives as long as the judge's process."""

    def __init__(self):
        self._requests: queue.SimpleQueue = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def popen(self, *args, **kwargs) -> subprocess.Popen:
        done: Future = Future()
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._serve, name="kbench-forkserver-spawner", daemon=True)
                self._thread.start()
        self._requests.put((done, args, kwargs))
        return done.result()

    def _serve(self) -> None:
        from ..core.cpu_sets import keep_to

        keep_to(None)  # started by a pinned judging thread: the zygotes it starts have every core
        while True:
            done, args, kwargs = self._requests.get()
            try:
                done.set_result(subprocess.Popen(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - raised in the thread that asked
                done.set_exception(e)


_SPAWNER = _Spawner()


def spawn(*args, **kwargs) -> subprocess.Popen:
    """``subprocess.Popen(*args, **kwargs)`` from the spawner thread, with every core of the process:
    the child lives as long as this process (a zygote, a batch's lane process), not as long as the
    thread that asked for it."""
    return _SPAWNER.popen(*args, **kwargs)


_PINNED = threading.local()


def pin_thread(cpus) -> None:
    """The cores this thread, and the servers it starts (and their workers), run on (None: any):
    a batch's judging thread of one of several GPUs (:mod:`kbench_lib.core.cpu_sets`). The thread keeps
    to them too: the judge's own work for one GPU (preparing references, comparing outputs, its
    thread pools) then never runs on the cores where another GPU's candidate is being timed (judge work
    there can make an honest candidate's 59 us calls read 89 us, its device clock unchanged)."""
    from ..core.cpu_sets import keep_to

    _PINNED.cpus = tuple(sorted(cpus)) if cpus else None
    keep_to(_PINNED.cpus)


_THREADS = object()  # server_env's default: the cores the calling thread is pinned to


def server_env(cuda: bool, cpus=_THREADS) -> dict[str, str]:
    """The server's environment: what the modules it imports may read at import, with the values
    every worker gets (build.build_env), and the cores it is kept on (``cpus``; by default those
    the calling thread is pinned to)."""
    from ..core.cpu_sets import ENV, format_cpulist
    from ..core.paths import cache_root, with_package_importable
    from .process_setup import scrubbed_env

    env = with_package_importable(scrubbed_env({"TORCHINDUCTOR_COMPILE_THREADS": "1", "TRITON_CACHE_DIR": str(cache_root() / "triton")}))
    if not cuda:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["TRITON_INTERPRET"] = "1"
    if cpus is _THREADS:
        cpus = getattr(_PINNED, "cpus", None)
    if cpus:
        env[ENV] = format_cpulist(cpus)
    return env


def enabled() -> bool:
    return sys.platform == "linux" and os.environ.get("KBENCH_FORKSERVER", "1") != "0"


def server(cuda: bool):
    """This thread's warm fork server for ``cuda`` (started now if it has none and none can be
    handed on), or None where one cannot run (then workers start as fresh interpreters)."""
    if not enabled():
        return None
    entry, start = _claim(cuda)
    if start:
        _start(entry, cuda)
    return entry.started.result()


def started(cuda: bool) -> bool:
    """Whether this thread's server has started (or is known not to start): a worker started now
    would not wait for it. True where this thread has none under way."""
    me, env = threading.get_ident(), server_env(cuda)
    with _LOCK:
        mine = [e for e in _ENTRIES if e.cuda == cuda and e.owner == me and e.env == env]
    return all(e.started.done() for e in mine)


def prestart(cuda: bool) -> None:
    """Starts this thread's server in the background if it has none and none can be handed on."""
    if not enabled():
        return
    entry, start = _claim(cuda)
    if start:
        threading.Thread(target=_start, args=(entry, cuda), name="kbench-forkserver-start", daemon=True).start()


def start_unowned(cuda: bool, cpus=None) -> Future:
    """Starts a server that no thread owns yet, with the environment a thread pinned to ``cpus``
    would ask for (none: unpinned): the next such thread without one takes it. A batch about to
    start (:func:`kbench_lib.batch.runner.start_servers`) has its lanes' servers started so. Returns
    the future of its start (its ForkServer, or None where one cannot run)."""
    entry = _Entry(cuda, server_env(cuda, cpus), None)
    if not enabled():
        entry.started.set_result(None)
        return entry.started
    with _LOCK:
        _ENTRIES.append(entry)
    threading.Thread(target=_start, args=(entry, cuda), name="kbench-forkserver-start", daemon=True).start()
    return entry.started


def _claim(cuda: bool) -> tuple[_Entry, bool]:
    """(this thread's entry, whether the caller must start its server): its own if it was started
    with the environment a server would get now; else one whose thread has ended (or that was let
    go), started so; else a new one. Its own of another environment (a test's build cache) is let
    go, for whoever asks with that environment again."""
    me, env = threading.get_ident(), server_env(cuda)
    with _LOCK:
        _ENTRIES[:] = [e for e in _ENTRIES if e.usable()]
        mine = [e for e in _ENTRIES if e.cuda == cuda and e.owner == me]
        for e in mine:
            if e.env == env:
                return e, False
            e.owner = None
        alive = {t.ident for t in threading.enumerate()}
        for e in _ENTRIES:
            if e.cuda == cuda and e.env == env and (e.owner is None or e.owner not in alive):
                e.owner = me
                return e, False
        entry = _Entry(cuda, env, me)
        _ENTRIES.append(entry)
        return entry, True


_ZYGOTES: dict[tuple, Future] = {}  # (cuda, the environment less the cores) -> its Zygote, or None where none starts


def _zygote(cuda: bool, env: dict) -> "Zygote | None":
    """The zygote that forks servers of ``env`` (less their cores), started now if none lives:
    the servers of a batch's GPUs, asked for at once, wait for one warm-up between them."""
    from .forkserver import Zygote

    key = (cuda, tuple(sorted(env.items())))
    with _LOCK:
        fut = _ZYGOTES.get(key)
        if fut is not None and fut.done() and (fut.exception() is not None or (fut.result() is not None and not fut.result().alive())):
            fut = None  # it died (or failed to start for a reason worth a second try): a new one
        start = fut is None
        if start:
            fut = _ZYGOTES[key] = Future()
    if start:
        try:
            fut.set_result(Zygote(cuda, env, popen=_SPAWNER.popen))
        except (OSError, RuntimeError):
            fut.set_result(None)
        except BaseException as e:  # noqa: BLE001 - whoever waits for it sees what went wrong
            fut.set_exception(e)
            raise
    return fut.result()


def _start(entry: _Entry, cuda: bool) -> None:
    """Starts ``entry``'s server: forked by the zygote of its environment, kept to its cores."""
    from ..core.cpu_sets import ENV
    from .forkserver import ForkServer

    try:
        zygote = _zygote(cuda, {k: v for k, v in entry.env.items() if k != ENV})
        entry.started.set_result(None if zygote is None else ForkServer(cuda, zygote=zygote, cpus=entry.env.get(ENV)))
    except (OSError, RuntimeError):
        entry.started.set_result(None)
    except BaseException as e:  # noqa: BLE001 - whoever waits for it sees what went wrong
        entry.started.set_exception(e)
        raise


def started_servers() -> list:
    """The servers of this process that have started and live (for reports: when each became ready)."""
    with _LOCK:
        entries = list(_ENTRIES)
    out = []
    for e in entries:
        if e.started.done() and e.started.exception() is None and e.started.result() is not None and e.started.result().alive():
            out.append(e.started.result())
    return out


def close_all() -> None:
    """Stops every server and zygote (started ones; one still starting is stopped once it has started)."""
    with _LOCK:
        futures = [e.started for e in _ENTRIES] + list(_ZYGOTES.values())
        _ENTRIES.clear()
        _ZYGOTES.clear()
    for f in futures:
        f.add_done_callback(_close)


def _close(started: Future) -> None:
    if started.exception() is None and started.result() is not None:
        started.result().close()
