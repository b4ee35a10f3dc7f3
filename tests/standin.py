"""Starting and stopping the stand-in language-model server (tests/llm_standin_server.py)."""
import json
import subprocess
import sys
import urllib.request
from pathlib import Path

SERVER = Path(__file__).with_name("llm_standin_server.py")


class StandinServer:
    """A server process on 127.0.0.1 with ``config`` (see the server's docstring)."""

    def __init__(self, config: dict, workdir: Path):
        path = Path(workdir) / f"standin-{id(self)}.json"
        path.write_text(json.dumps(config))
        self.proc = subprocess.Popen([sys.executable, str(SERVER), str(path)], stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        assert line.startswith("PORT "), f"stand-in server did not start: {line!r}"
        self.port = int(line.split()[1])
        self.root = f"http://127.0.0.1:{self.port}"
        self.openai_url = self.root + "/v1"

    def stats(self) -> dict:
        with urllib.request.urlopen(self.root + "/stats", timeout=10) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def free_port() -> int:
    """A port nothing listens on (bound, then released)."""
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
