#!/usr/bin/env python3
"""Reference server for multi_protocol tasks: serves a file over HTTP (GET /result) and raw TCP.

Usage: serve.py FILE HTTP_PORT TCP_PORT
"""

import socketserver
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

path, http_port, tcp_port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
with open(path, "rb") as f:
    BODY = f.read()


class Http(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/result":
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        self.wfile.write(BODY)

    def log_message(self, *args):
        pass


class Tcp(socketserver.StreamRequestHandler):
    def handle(self):
        if self.rfile.readline().strip() == b"RESULT":
            self.wfile.write(BODY)


socketserver.ThreadingTCPServer.allow_reuse_address = True
tcp = socketserver.ThreadingTCPServer(("127.0.0.1", tcp_port), Tcp)
threading.Thread(target=tcp.serve_forever, daemon=True).start()
ThreadingHTTPServer(("127.0.0.1", http_port), Http).serve_forever()
