"""A minimal AWS Lambda Runtime API: hands out the given event files one invocation each,
prints each function response on stdout (one JSON line), then stops, which ends the function.

usage: runtime_api.py PORT EVENT_FILE...
"""

import json
import sys
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

events = [open(p, "rb").read() for p in sys.argv[2:]]
pending = list(events)
done = threading.Event()
answered = 0


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        if not self.path.endswith("/runtime/invocation/next") or not pending:
            self.send_response(410)
            self.end_headers()
            return
        body = pending.pop(0)
        self.send_response(200)
        self.send_header("Lambda-Runtime-Aws-Request-Id", str(uuid.uuid4()))
        self.send_header("Lambda-Runtime-Deadline-Ms", "9999999999999")
        self.send_header(
            "Lambda-Runtime-Invoked-Function-Arn",
            "arn:aws:lambda:us-east-1:123456789012:function:longrun",
        )
        self.send_header("Lambda-Runtime-Trace-Id", "Root=1-00000000-000000000000000000000000")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        global answered
        length = int(self.headers.get("Content-Length", 0))
        payload = self.rfile.read(length)
        self.send_response(202)
        self.end_headers()
        kind = "error" if self.path.endswith("/error") else "response"
        print(json.dumps({kind: json.loads(payload or b"null")}), flush=True)
        answered += 1
        if answered == len(events):
            done.set()


server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
done.wait(timeout=120)
server.shutdown()
