import json

from kbench_lib import sandbox


def test_scrubbed_env_drops_secrets_and_keeps_the_allow_list():
    env = sandbox.scrubbed_env(base={
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

    code = ("import ctypes, os, kbench_lib.sandbox as s\n"
            "def boom(*a, **k): raise AssertionError('dlopen after import')\n"
            "ctypes.CDLL = boom\n"
            "s.die_with_parent(os.getppid())\n"
            "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
