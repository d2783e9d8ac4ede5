"""One number, read with GET /value and replaced with POST /value."""
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

state = {"value": os.environ.get("KV_SEED", "0")}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        body = state["value"].encode()
        self.send_response(200 if self.path == "/value" else 404)
        self.end_headers()
        self.wfile.write(body if self.path == "/value" else b"")

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("Content-Length", 0))).decode().strip()
        if self.path == "/value" and data.lstrip("-").isdigit():
            state["value"] = data
            self.send_response(204)
        else:
            self.send_response(400)
        self.end_headers()


ThreadingHTTPServer(("0.0.0.0", 7000), Handler).serve_forever()
