"""``kbench serve``: the judge service that ``eval``, ``run`` and ``audit`` hand their commands to
(docs/SERVICE.md); ``--status`` and ``--stop`` ask the running one."""
from __future__ import annotations

import argparse
import json


def add_parser(sub) -> None:
    from ..service.daemon import DEFAULT_IDLE_S

    p = sub.add_parser("serve", help="run the judge service that kbench run, eval and audit hand their commands to (docs/SERVICE.md)")
    p.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_S,
                   help=f"end after this many seconds without a command (default {DEFAULT_IDLE_S:g})")
    p.add_argument("--status", action="store_true", help="print the running service's pid, age and commands served")
    p.add_argument("--stop", action="store_true", help="stop the running service")
    p.add_argument("--key", default=None, help=argparse.SUPPRESS)  # the key of the command that started it
    p.set_defaults(fn=command)


def command(a) -> int:
    from ..service import client, daemon
    from ..service.key import service_key

    if a.status or a.stop:
        answer = client.request({"stop": True} if a.stop else {"status": True})
        if answer is None:
            print("kbench serve: no service runs for this environment")
            return 1
        print(("stopped: " if a.stop else "") + json.dumps(answer))
        return 0
    import kbench_lib.batch.runner  # noqa: F401 - what every command of the service needs, imported before the first
    import kbench_lib.workflows  # noqa: F401
    from . import main

    return daemon.serve(a.key or service_key(), lambda argv: main(argv, forward=False), a.idle_timeout, on_ready=_start_servers)


def _start_servers() -> None:
    """The service's fork servers for this machine's default device, started while it waits for its first command."""
    from ..batch import runner
    from ..judging.pipeline import JudgeOptions

    runner.start_servers(runner.batch_devices(JudgeOptions(), 1), wait=False)
