"""Which imports, done in a parent before fork, leave a forked child unable to use CUDA? (The fork
server must import only those that do not.) Prints one line per import tried."""
import importlib
import os
import sys

import torch

names = sys.argv[1:] or ["torch._dynamo", "torch._inductor.config", "torch.distributed", "torch.onnx", "torch.testing",
                         "torch.utils.cpp_extension", "sympy"]


def child_ok() -> str:
    pid = os.fork()
    if pid == 0:
        try:
            torch.zeros(1, device="cuda").add_(1).item()
            os._exit(0)
        except BaseException as e:  # noqa: BLE001
            sys.stderr.write(f"  child: {type(e).__name__}: {str(e)[:200]}\n")
            os._exit(1)
    _, st = os.waitpid(pid, 0)
    return "ok" if os.WIFEXITED(st) and os.WEXITSTATUS(st) == 0 else "FAILS"


print("after import torch:", child_ok(), flush=True)
import kbench_lib.worker  # noqa: E402,F401

print("after kbench_lib.worker:", child_ok(), flush=True)
for n in names:
    importlib.import_module(n)
    print(f"after {n}:", child_ok(), flush=True)
