"""Live checks for http-kv-service.

Starts the agent's service with `bash /app/start.sh` (with an empty /app/data), waits up
to 10 s for 127.0.0.1:8080, exercises the API, kill -9s the server, starts it again and
checks persistence. All checks must pass (exit 0); the server is always stopped at the end.

The service is the agent's code: it runs as SUSPECT, an unprivileged uid that owns /app but cannot
read /tests or write /logs/verifier, and every process of that uid is killed before we return.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

HOST, PORT = "127.0.0.1", 8080
SUSPECT = "65532"
AS_SUSPECT = ["setpriv", f"--reuid={SUSPECT}", f"--regid={SUSPECT}", "--clear-groups", "--inh-caps=-all"]
failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)
    return cond


def request(method, path, body=None):
    conn = http.client.HTTPConnection(HOST, PORT, timeout=10)
    try:
        headers = {}
        if body is not None:
            headers["Content-Length"] = str(len(body))
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        return resp.status, resp.read()
    finally:
        conn.close()


def port_open():
    try:
        socket.create_connection((HOST, PORT), timeout=0.5).close()
        return True
    except OSError:
        return False


def start():
    subprocess.run(["chown", "-R", "-h", f"{SUSPECT}:{SUSPECT}", "/app"], check=False)
    subprocess.Popen(AS_SUSPECT + ["env", "HOME=/tmp", "bash", "/app/start.sh"], stdin=subprocess.DEVNULL,
                     stdout=open("/tmp/start.log", "ab"), stderr=subprocess.STDOUT, start_new_session=True, cwd="/app")
    deadline = time.time() + 10
    while time.time() < deadline:
        if port_open():
            return True
        time.sleep(0.2)
    return False


def stop():
    """kill -9 the service: every process of the suspect uid (the server and anything it started)."""
    for _ in range(3):
        subprocess.run(["pkill", "-9", "-U", SUSPECT], check=False)
    deadline = time.time() + 5
    while time.time() < deadline and port_open():
        time.sleep(0.1)


def api_checks():
    st, body = request("GET", "/kv")
    check(st == 200 and json.loads(body or b"null") == [], "GET /kv on empty store -> 200 []")
    check(request("GET", "/kv/missing")[0] == 404, "GET missing key -> 404")
    check(request("PUT", "/kv/alpha", b"hello")[0] == 201, "PUT new key -> 201")
    check(request("GET", "/kv/alpha") == (200, b"hello"), "GET returns stored value")
    check(request("PUT", "/kv/alpha", b"world")[0] == 200, "PUT existing key -> 200")
    check(request("GET", "/kv/alpha") == (200, b"world"), "GET returns replaced value")
    binary = bytes(range(256)) * 3 + b"\r\n\n{\"not\": \"json\"}\x00"
    check(request("PUT", "/kv/bin.data-1_X", binary)[0] == 201, "PUT binary value -> 201")
    check(request("GET", "/kv/bin.data-1_X") == (200, binary), "binary value round-trips exactly")
    check(request("PUT", "/kv/empty", b"")[0] == 201, "PUT empty value -> 201")
    check(request("GET", "/kv/empty") == (200, b""), "empty value round-trips")
    big = (b"0123456789abcdef" * 65536)[: 1 << 20]
    check(request("PUT", "/kv/big", big)[0] == 201, "PUT 1 MiB value -> 201")
    check(request("GET", "/kv/big") == (200, big), "1 MiB value round-trips")
    for bad in ("/kv/", "/kv/bad%20key", "/kv/a/b", "/kv/" + "k" * 129, "/kv/caf%C3%A9", "/kv/semi;colon"):
        check(request("PUT", bad, b"x")[0] == 400, "PUT %s -> 400" % bad[:24])
    check(request("GET", "/kv/" + "k" * 129)[0] == 400, "GET too-long key -> 400")
    check(request("PUT", "/kv/" + "K" * 128, b"max")[0] == 201, "PUT 128-char key -> 201")
    check(request("DELETE", "/kv/" + "K" * 128)[0] == 204, "DELETE existing key -> 204")
    check(request("DELETE", "/kv/alpha")[0] == 204, "DELETE alpha -> 204")
    check(request("GET", "/kv/alpha")[0] == 404, "GET deleted key -> 404")
    check(request("DELETE", "/kv/alpha")[0] == 404, "DELETE missing key -> 404")
    check(request("PUT", "/kv/Beta", b"B")[0] == 201, "PUT Beta -> 201")
    st, body = request("GET", "/kv")
    check(st == 200 and json.loads(body) == ["Beta", "big", "bin.data-1_X", "empty"], "GET /kv lists keys sorted")
    st, body = request("GET", "/kv?prefix=bi")
    check(st == 200 and json.loads(body) == ["big", "bin.data-1_X"], "GET /kv?prefix=bi filters")

    errors = []

    def worker(t):
        try:
            for i in range(8):
                key, val = "c-%d-%d" % (t, i), ("value %d/%d " % (t, i)).encode() * (t + 1)
                if request("PUT", "/kv/" + key, val)[0] != 201 or request("GET", "/kv/" + key) != (200, val):
                    errors.append(key)
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))

    threads = [threading.Thread(target=worker, args=(t,)) for t in range(12)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(60)
    check(not errors, "12 concurrent clients x 8 keys (errors: %s)" % errors[:3])
    return binary, big


def main():
    if not check(os.path.isfile("/app/start.sh"), "/app/start.sh exists"):
        return 1
    stop()
    shutil.rmtree("/app/data", ignore_errors=True)
    os.makedirs("/app/data")
    try:
        if not check(start(), "service answers on 127.0.0.1:8080 within 10 s"):
            return 1
        binary, big = api_checks()
        stop()
        check(not port_open(), "server stopped with kill -9")
        if not check(start(), "service restarts within 10 s"):
            return 1
        st, body = request("GET", "/kv")
        keys = json.loads(body) if st == 200 else None
        want = sorted(["Beta", "big", "bin.data-1_X", "empty"] + ["c-%d-%d" % (t, i) for t in range(12) for i in range(8)])
        check(keys == want, "all keys survive kill -9 + restart")
        check(request("GET", "/kv/bin.data-1_X") == (200, binary), "binary value survives restart")
        check(request("GET", "/kv/big") == (200, big), "1 MiB value survives restart")
        check(request("GET", "/kv/alpha")[0] == 404, "deleted key stays deleted after restart")
    except Exception as e:  # noqa: BLE001
        check(False, "unexpected error: %r" % e)
    finally:
        stop()  # everything the service started, daemons included
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
