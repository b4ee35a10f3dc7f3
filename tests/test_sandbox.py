import json

from kbench_lib.isolation import process_setup, sandbox


def test_scrubbed_env_drops_secrets_and_keeps_the_allow_list():
    env = process_setup.scrubbed_env(base={
        "PATH": "/bin", "OPENAI_API_KEY": "sk-1", "HF_TOKEN": "t", "AWS_SECRET_ACCESS_KEY": "s", "MY_PASSWORD": "p",
        "AWS_ACCESS_KEY_ID": "a", "GOOGLE_APPLICATION_CREDENTIALS": "/c.json", "CUDA_VISIBLE_DEVICES": "0",
        "HOME": "/root", "RANDOM_VAR": "x", "CUDA_AUTH_TOKEN": "x",
    })
    assert env["PATH"] == "/bin" and env["CUDA_VISIBLE_DEVICES"] == "0"
    for name in ("OPENAI_API_KEY", "HF_TOKEN", "AWS_SECRET_ACCESS_KEY", "MY_PASSWORD", "AWS_ACCESS_KEY_ID",
                 "GOOGLE_APPLICATION_CREDENTIALS", "HOME", "RANDOM_VAR", "CUDA_AUTH_TOKEN"):
        assert name not in env


def test_bounded_log_keeps_head_and_tail():
    log = sandbox.BoundedLog(keep=10)
    log.feed(b"0123456789abcdef")
    log.feed(b"XYZ")
    assert log.total == 19
    text = log.text()
    assert text.startswith("0123456789") and text.endswith("defXYZ") and "dropped" not in text
    log.feed(b"-" * 100)
    assert "dropped" in log.text()


def _py(tmp_path, code):
    script = tmp_path / "s.py"
    script.write_text(code)
    return [str(script)]


def test_timeout_kills_the_whole_session(tmp_path):
    code = "import subprocess, time\nsubprocess.Popen(['sleep', '300'])\ntime.sleep(300)\n"
    res = sandbox.run_isolated(_py(tmp_path, code), workdir=str(tmp_path / "w"), timeout_s=2)
    assert res.timed_out and res.wall_s < 30


def test_messages_log_and_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("SERVICE_API_KEY", "sk-secret")
    code = (
        "import os, json, sys\n"
        "fd = int(os.environ['KBENCH_MSG_FD'])\n"
        "os.write(fd, (json.dumps({'event': 'env', 'names': sorted(os.environ), 'cwd': os.getcwd(), 'home': os.environ['HOME']}) + '\\n').encode())\n"
        "print('x' * 200000)\n"
    )
    res = sandbox.run_isolated(_py(tmp_path, code), workdir=str(tmp_path / "w"), timeout_s=60)
    assert res.returncode == 0 and not res.timed_out
    msg = res.messages[0]
    assert "SERVICE_API_KEY" not in msg["names"]
    assert msg["home"].startswith(str(tmp_path / "w"))
    assert "dropped" in res.log and len(res.log) < 100000


def test_network_namespace_when_available(tmp_path):
    if not sandbox.netns_prefix():
        import pytest

        pytest.skip("unshare --net is not permitted here")
    code = (
        "import socket\n"
        "s = socket.socket()\ns.settimeout(2)\n"
        "try:\n    s.connect(('1.1.1.1', 80)); print('CONNECTED')\nexcept OSError as e:\n    print('BLOCKED', e)\n"
    )
    res = sandbox.run_isolated(_py(tmp_path, code), workdir=str(tmp_path / "w"), timeout_s=30)
    assert res.network_isolated
    assert "BLOCKED" in res.log


def test_real_key_shaped_values_never_reach_the_candidate(tmp_path, monkeypatch):
    """Keys shaped like real OpenAI, Anthropic and Hugging Face keys, under their usual names and
    under names that do not look secret, are absent from the child's whole environment."""
    keys = {
        "OPENAI_API_KEY": "sk-proj-" + "Q2x7RtYu9IoP" * 4,
        "ANTHROPIC_API_KEY": "sk-ant-api03-" + "Mn8Bv6Cx4Za2" * 7 + "-AbCdEf",
        "HF_TOKEN": "hf_" + "LkJhGfDsAqWe" * 3,
        "DEEPSEEK": "sk-" + "0f9e8d7c6b5a" * 3,  # a name with no secret marker: dropped by the allow-list
        "LLM_ENDPOINT_CONFIG": "sk-ant-admin01-" + "Zz" * 40,
    }
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    code = "import os, json\nos.write(int(os.environ['KBENCH_MSG_FD']), (json.dumps(dict(os.environ)) + '\\n').encode())\n"
    res = sandbox.run_isolated(_py(tmp_path, code), workdir=str(tmp_path / "w"), timeout_s=60)
    assert res.returncode == 0 and res.messages
    child_env = json.dumps(res.messages[0])
    assert "PATH" in res.messages[0]
    for name, value in keys.items():
        assert value not in child_env and name not in res.messages[0]


def test_die_with_parent_loads_no_library_after_fork():
    """It runs between fork and exec in a judge with threads: prctl is resolved at import, so no
    dlopen happens there (one could wait forever on a loader lock another thread held)."""
    import subprocess
    import sys

    code = ("import ctypes, os, kbench_lib.isolation.process_setup as s\n"
            "def boom(*a, **k): raise AssertionError('dlopen after import')\n"
            "ctypes.CDLL = boom\n"
            "s.die_with_parent(os.getppid())\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]


# A fresh interpreter that lays its descriptors out so that start_isolated's message pipe gets
# the write end TARGET (the pipe takes the two lowest free numbers), then runs a child that writes
# the number it was given to it. A judge with threads opening and closing files hands out every
# number this way; the pipe landing on 9 is what once lost 7-17 of 44 builds of a batch.
_MSG_FD_AT = r"""
import json, os, sys
from kbench_lib.isolation import sandbox

child = sys.argv[2]
with open(child, "w") as f:
    f.write("import json, os\nfd = os.environ['KBENCH_MSG_FD']\n"
            "os.write(int(fd), (json.dumps({'fd': int(fd), 'ro': os.environ.get('KBENCH_FS_READONLY')}) + '\\n').encode())\n")
sandbox.isolation_prefix(False)  # probed once, before the descriptors are laid out
base = sys.argv[1]
out = {}
for target in range(4, 13):
    held = []
    while True:  # every number below target - 1 taken
        fd = os.open(os.devnull, os.O_RDONLY)
        if fd >= target - 1:
            os.close(fd)
            break
        held.append(fd)
    res = sandbox.run_isolated([child], workdir=os.path.join(base, str(target)), timeout_s=60)
    for fd in held:
        os.close(fd)
    out[target] = [res.returncode, [m.get("fd") for m in res.messages], [m.get("ro") for m in res.messages], res.log[-300:]]
print(json.dumps({"pid_isolated": "--pid" in sandbox.isolation_prefix(False), "runs": out}))
"""


def _shm_or_tmp(tmp_path):
    import os
    import tempfile

    if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        return tempfile.mkdtemp(prefix="kbench-test-fd-", dir="/dev/shm")
    return str(tmp_path / "shm")


def test_the_message_pipe_reaches_the_child_whatever_its_number(tmp_path):
    """The namespace's init script (INIT_SCRIPT) once used descriptor 9 for itself (to bind the job's
    /dev/shm folder back in), closing whatever the child had been passed there: a worker whose
    message pipe was 9 died at start (EBADF) and an honest build was judged a crash. Every number
    must reach the child open, for a job folder under /dev/shm (builds' and runs') and elsewhere."""
    import os
    import shutil
    import subprocess
    import sys

    from kbench_lib.core.paths import with_package_importable

    shm = _shm_or_tmp(tmp_path)
    try:
        for base in (shm, str(tmp_path / "jobs")):
            env = with_package_importable(dict(os.environ))
            proc = subprocess.run([sys.executable, "-c", _MSG_FD_AT, base, str(tmp_path / "child.py")], capture_output=True, text=True, timeout=240, env=env)
            assert proc.returncode == 0, proc.stderr[-3000:]
            got = json.loads(proc.stdout.strip().splitlines()[-1])
            for target, (code, fds, ro, log) in got["runs"].items():
                assert code == 0 and fds == [int(target)], (base, target, code, fds, log, got["pid_isolated"])
                if got["pid_isolated"]:  # and the init script still made its mounts read-only, /dev/shm its own
                    assert ro == ["1"], (base, target, ro)
    finally:
        shutil.rmtree(shm, ignore_errors=True)
