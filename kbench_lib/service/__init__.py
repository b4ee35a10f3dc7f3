"""The judge service: one long-lived process that ``kbench run``, ``kbench eval`` and ``kbench audit``
hand their command to, so that a batch finds torch imported, the fork servers warm and the
reference side's store in memory instead of paying for them at every command (docs/SERVICE.md).

- :mod:`.key`: which service a command may use (the code, interpreter, torch and environment it
  was started with) and where its socket and log live.
- :mod:`.wire`: the messages between a command and the service.
- :mod:`.daemon`: the service's side: one command at a time, each run as ``kbench`` would run it.
- :mod:`.client`: the command's side: finds (or starts) the service, hands it the command, relays
  its output and exit status, and passes Ctrl-C on.
"""
