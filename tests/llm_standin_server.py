"""A stand-in language-model server for the generation tests: a real HTTP server on 127.0.0.1
that speaks OpenAI's chat-completions and Anthropic's messages wire formats, answering from canned
texts, with faults on demand. The clients under test are the official SDKs, unchanged.

    python tests/llm_standin_server.py CONFIG.json      # prints "PORT <n>", then serves until killed

CONFIG (JSON):
- ``answers``: ``[{"match": SUBSTRING, "texts": [TEXT, ...]}]``: a request whose last message
  contains SUBSTRING gets the next of its TEXTs (cycling); ``default``: the text otherwise.
- ``script``: actions used by successive requests, one each, before normal answering resumes;
  ``always``: an action for every request after the script. Actions: ``{"status": 429|500|...,
  "retry_after_ms": N}``, ``{"sleep": SECONDS}`` (then the normal answer), ``{"malformed": TEXT}``
  (status 200, a body that is not JSON), ``{"no_choices": true}`` (JSON without a completion),
  ``{"content": null}`` (a completion without content).
- ``require_key``: answer 401 unless the request carries this key (a Bearer token, or x-api-key).
- ``latency_s``: every request waits this long before it is answered (a model's thinking time).

``GET /stats`` returns the number of requests, the statuses sent, the request bodies, the most
requests ever in flight at once, the wall-clock times (``time.time()``) at which requests arrived
and answers were sent, and the client connections open now (``/stats``'s own excepted).
"""
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {"requests": 0, "statuses": [], "bodies": [], "counts": {}, "in_flight": 0, "max_in_flight": 0, "arrived": [], "answered": [],
         "open_connections": 0}


def load_config(path):
    with open(path) as f:
        return json.load(f)


CONFIG = load_config(sys.argv[1]) if len(sys.argv) > 1 else {}


def next_action():
    with LOCK:
        n = STATE["requests"]
        STATE["requests"] += 1
    script = CONFIG.get("script", [])
    return script[n] if n < len(script) else CONFIG.get("always")


def answer_text(last_message):
    for rule in CONFIG.get("answers", []):
        if rule["match"] in last_message:
            with LOCK:
                i = STATE["counts"].get(rule["match"], 0)
                STATE["counts"][rule["match"]] = i + 1
            return rule["texts"][i % len(rule["texts"])]
    return CONFIG.get("default", "")


def openai_body(req, text):
    prompt = sum(len(str(m.get("content", ""))) for m in req.get("messages", [])) // 4
    completion = len(text or "") // 4
    return {
        "id": "chatcmpl-standin", "object": "chat.completion", "created": int(time.time()), "model": req.get("model"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "completion_tokens_details": {"reasoning_tokens": 3}},
    }


def anthropic_body(req, text):
    prompt = (len(str(req.get("system", ""))) + sum(len(str(m.get("content", ""))) for m in req.get("messages", []))) // 4
    content = [] if text is None else [{"type": "thinking", "thinking": "hmm", "signature": "x"}, {"type": "text", "text": text}]
    return {
        "id": "msg_standin", "type": "message", "role": "assistant", "model": req.get("model"), "content": content,
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": prompt, "output_tokens": len(text or "") // 4},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        with LOCK:
            STATE["open_connections"] += 1

    def finish(self):
        with LOCK:
            STATE["open_connections"] -= 1
        super().finish()

    def _send(self, status, body, headers=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        with LOCK:
            STATE["statuses"].append(status)
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
            if self.command == "POST":
                with LOCK:
                    STATE["answered"].append(time.time())
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self):
        if self.path.rstrip("/").endswith("/stats"):
            with LOCK:
                snapshot = {"requests": STATE["requests"], "statuses": list(STATE["statuses"]), "bodies": list(STATE["bodies"]),
                            "max_in_flight": STATE["max_in_flight"], "arrived": list(STATE["arrived"]),
                            "answered": list(STATE["answered"]), "open_connections": STATE["open_connections"] - 1}
            self._send(200, snapshot)
        else:
            self._send(404, {"error": {"message": "not found"}})

    def _error(self, anthropic, status, message, headers=None):
        kind = {401: "authentication_error", 429: "rate_limit_error"}.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": message}} if anthropic else {"error": {"message": message, "type": kind}}
        self._send(status, body, headers)

    def do_POST(self):
        with LOCK:
            STATE["arrived"].append(time.time())
            STATE["in_flight"] += 1
            STATE["max_in_flight"] = max(STATE["max_in_flight"], STATE["in_flight"])
        try:
            self._post()
        finally:
            with LOCK:
                STATE["in_flight"] -= 1

    def _post(self):
        anthropic = self.path.rstrip("/").endswith("/messages")
        if not anthropic and not self.path.rstrip("/").endswith("/chat/completions"):
            return self._error(anthropic, 404, f"no route {self.path}")
        raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        try:
            req = json.loads(raw)
        except ValueError:
            return self._error(anthropic, 400, "the request body is not JSON")
        with LOCK:
            STATE["bodies"].append(req)
        key = CONFIG.get("require_key")
        # OpenAI: a Bearer token; Anthropic: x-api-key (older SDKs) or a Bearer token (recent ones)
        given = (self.headers.get("x-api-key") if anthropic else None) or (self.headers.get("Authorization") or "").removeprefix("Bearer ")
        if key and given != key:
            return self._error(anthropic, 401, "invalid api key")
        action = next_action() or {}
        if CONFIG.get("latency_s"):
            time.sleep(CONFIG["latency_s"])
        if "status" in action:
            headers = {"retry-after-ms": str(action["retry_after_ms"])} if "retry_after_ms" in action else {}
            return self._error(anthropic, action["status"], f"stand-in fault {action['status']}", headers)
        if "sleep" in action:
            time.sleep(action["sleep"])
        if "malformed" in action:
            return self._send(200, action["malformed"].encode())
        if action.get("no_choices"):
            return self._send(200, {"id": "x", "object": "chat.completion", "model": req.get("model")} if not anthropic else {"id": "x", "type": "message"})
        last = req["messages"][-1]["content"] if req.get("messages") else ""
        text = None if ("content" in action and action["content"] is None) else answer_text(str(last))
        self._send(200, anthropic_body(req, text) if anthropic else openai_body(req, text))


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
