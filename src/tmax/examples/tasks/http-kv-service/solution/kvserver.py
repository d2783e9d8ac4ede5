#!/usr/bin/env python3
"""Persistent key-value HTTP service (reference solution for http-kv-service).

One file per key under /app/data/, named "k_<key>" (the prefix keeps keys such as "."
and ".." safe), written to a temp file and renamed into place before the response is
sent, so a kill -9 never loses or tears an acknowledged write.
"""
import json
import os
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlsplit

DATA = os.environ.get("KV_DATA", "/app/data")
KEY_RE = re.compile(r"[A-Za-z0-9._-]{1,128}")
MAX_VALUE = 1 << 20
lock = threading.Lock()


def path_for(key):
    return os.path.join(DATA, "k_" + key)


def all_keys():
    keys = []
    for name in os.listdir(DATA):
        if name.startswith("k_"):
            keys.append(name[2:])
    return sorted(keys)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, code, body=b"", ctype="application/octet-stream"):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)

    def key(self):
        """Return (key, None) for /kv/<key>, (None, None) for /kv, or (None, code) on error."""
        parts = urlsplit(self.path)
        if parts.path == "/kv":
            return None, None
        if not parts.path.startswith("/kv/"):
            return None, 404
        key = unquote(parts.path[4:])
        if not KEY_RE.fullmatch(key):
            return None, 400
        return key, None

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def do_GET(self):
        key, err = self.key()
        if err:
            return self.reply(err)
        if key is None:
            prefix = parse_qs(urlsplit(self.path).query).get("prefix", [""])[0]
            with lock:
                keys = [k for k in all_keys() if k.startswith(prefix)]
            return self.reply(200, json.dumps(keys).encode(), "application/json")
        try:
            with open(path_for(key), "rb") as f:
                value = f.read()
        except FileNotFoundError:
            return self.reply(404)
        self.reply(200, value)

    def do_PUT(self):
        key, err = self.key()
        value = self.body()
        if err or key is None:
            return self.reply(err or 405)
        if len(value) > MAX_VALUE:
            return self.reply(413)
        path = path_for(key)
        tmp = os.path.join(DATA, ".tmp.%d.%d" % (os.getpid(), threading.get_ident()))
        with open(tmp, "wb") as f:
            f.write(value)
        with lock:
            existed = os.path.exists(path)
            os.replace(tmp, path)
        self.reply(200 if existed else 201)

    def do_DELETE(self):
        key, err = self.key()
        if err or key is None:
            return self.reply(err or 405)
        with lock:
            try:
                os.remove(path_for(key))
            except FileNotFoundError:
                return self.reply(404)
        self.reply(204)


def main():
    os.makedirs(DATA, exist_ok=True)
    for name in os.listdir(DATA):
        if name.startswith(".tmp."):
            os.remove(os.path.join(DATA, name))
    ThreadingHTTPServer.allow_reuse_address = True
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()


if __name__ == "__main__":
    main()
