"""Stand-in servers and a real tollgate for the tests.

Every server listens on 127.0.0.1, on a free port, and is stopped by the
test that started it.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
TESTDATA = os.path.join(REPO, "clients", "testdata")

# What no error message may ever hold.
ALICE = "alice@example.com"
ALICE_IP = "203.0.113.7"
ALICE_SMS = "+44 7400 123456"
TEST_TOKEN = "test-bearer-token-not-for-logs"
SECRETS = (ALICE, ALICE_IP, ALICE_SMS, TEST_TOKEN, "7400")


def closed_port_url() -> str:
    """A base URL where nothing listens: a port bound, then released."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return "http://127.0.0.1:%d" % port


class Recorded:
    """One request as a stand-in server got it."""

    def __init__(self, method: str, path: str, headers: Mapping[str, str], body: bytes) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body


class StandIn:
    """A ThreadingHTTPServer on 127.0.0.1:0 answering each request with
    answer(request) -> (status, headers, body), after delay seconds."""

    def __init__(self, answer: Callable[[Recorded], Tuple[int, Mapping[str, str], bytes]], delay: float = 0.0) -> None:
        self.requests: List[Recorded] = []
        self.connections = 0
        self._lock = threading.Lock()
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                with stand_in._lock:
                    stand_in.connections += 1

            def _serve(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n) if n else b""
                rec = Recorded(self.command, self.path, dict(self.headers.items()), body)
                with stand_in._lock:
                    stand_in.requests.append(rec)
                if delay:
                    time.sleep(min(delay, 5.0))
                status, headers, out = answer(rec)
                try:
                    self.send_response_only(status)
                    for k, v in headers.items():
                        self.send_header(k, v)
                    if not any(k.lower() == "content-length" for k in headers):
                        self.send_header("Content-Length", str(len(out)))
                    self.end_headers()
                    self.wfile.write(out)
                except OSError:
                    self.close_connection = True

            do_GET = _serve
            do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 128

            def handle_error(self, request: Any, client_address: Any) -> None:
                pass

        self.server = Server(("127.0.0.1", 0), Handler)
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def last(self) -> Optional[Recorded]:
        with self._lock:
            return self.requests[-1] if self.requests else None

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


_BUILD_LOCK = threading.Lock()
_BUILT: Dict[str, str] = {}


def tollgate_binary() -> Optional[str]:
    """TOLLGATE_BIN, or a tollgate built with go build into a temporary
    directory (once per run); None when neither is possible."""
    env = os.environ.get("TOLLGATE_BIN")
    if env:
        return env
    with _BUILD_LOCK:
        if "bin" in _BUILT:
            return _BUILT["bin"] or None
        go = shutil.which("go")
        if go is None:
            _BUILT["bin"] = ""
            return None
        tmp = tempfile.mkdtemp(prefix="tollgate-python-tests-")
        atexit.register(shutil.rmtree, tmp, True)
        out = os.path.join(tmp, "tollgate")
        res = subprocess.run([go, "build", "-o", out, "./cmd/tollgate"], cwd=REPO,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=600)
        if res.returncode != 0:
            raise RuntimeError("go build failed:\n" + res.stdout.decode(errors="replace"))
        _BUILT["bin"] = out
        return out


class Tollgate:
    """A real tollgate process on 127.0.0.1 (memory store, built-in
    policy, or the configuration file config names), killed by stop()."""

    def __init__(self, binary: str, config: Optional[str] = None) -> None:
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("TOLLGATE_") or k == "TOLLGATE_BIN"}
        env.pop("TOLLGATE_BIN", None)
        env["TOLLGATE_LISTEN"] = "127.0.0.1:0"
        if config is not None:
            env["TOLLGATE_CONFIG"] = config
        self.proc = subprocess.Popen([binary, "serve"], env=env, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.log: List[Dict[str, Any]] = []
        addr = self._wait_listening(deadline=time.monotonic() + 30)
        self.url = "http://" + addr
        # Keep reading stderr so that the process never blocks on it.
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _wait_listening(self, deadline: float) -> str:
        assert self.proc.stderr is not None
        for _ in range(1000):  # bounded: a few log lines come first
            if time.monotonic() > deadline:
                break
            line = self.proc.stderr.readline()
            if not line:
                break
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            self.log.append(entry)
            if entry.get("msg") == "listening" and entry.get("addr"):
                return str(entry["addr"])
        self.stop()
        raise RuntimeError("tollgate did not say it was listening: %r" % (self.log,))

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        try:
            for line in self.proc.stderr:
                try:
                    self.log.append(json.loads(line))
                except ValueError:
                    pass
        except (OSError, ValueError):
            pass

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # this process, by its own handle
        self.proc.wait(timeout=10)
        reader = getattr(self, "_reader", None)
        if reader is not None:
            reader.join(timeout=5)
        if self.proc.stderr is not None:
            self.proc.stderr.close()
