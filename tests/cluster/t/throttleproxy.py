#!/usr/bin/env python3
"""An HTTPS proxy in front of the API server that answers 429 Too Many Requests on demand.

    throttleproxy.py CERT_DIR TARGET_PORT PORT_FILE

Listens on a free port of 127.0.0.1 (written to PORT_FILE once listening) with the API server's
own serving certificate (CERT_DIR/apiserver.{crt,key}), so a client that trusts the cluster CA
cannot tell it apart, and offers only HTTP/1.1. Each request is read whole and, unless throttling
is on, sent to 127.0.0.1:TARGET_PORT over a new TLS connection authenticated with the tier's
admin certificate (CERT_DIR/admin.{crt,key}); the answer, a watch stream included, is relayed
byte for byte until the server closes (the request is sent with "Connection: close").

SIGUSR2 turns throttling on or off. While it is on, every other request that is not a watch is
answered here with what the API server's priority and fairness sends when it rejects a request:
status 429, "Retry-After: 1" and a v1 Status with reason TooManyRequests. Counts go to stderr.
Bounded: request heads up to 64 KiB, bodies up to 16 MiB. Exits on SIGTERM.
"""
import json
import os
import signal
import socket
import ssl
import sys
import threading

MAX_HEAD = 64 * 1024
MAX_BODY = 16 * 1024 * 1024
state = {"throttle": False, "seen": 0, "rejected": 0, "forwarded": 0}
lock = threading.Lock()


def report(what):
    print(f"throttleproxy: {what} (forwarded {state['forwarded']}, rejected {state['rejected']})",
          file=sys.stderr, flush=True)


def toggle(_signum, _frame):
    state["throttle"] = not state["throttle"]
    report("throttling " + ("on" if state["throttle"] else "off"))


def read_exact(conn, buf, n):
    while len(buf) < n:
        chunk = conn.recv(min(65536, n - len(buf)))
        if not chunk:
            raise ConnectionError("client closed mid-body")
        buf += chunk
    return buf


def read_request(conn, pending):
    """One request: (method, target, header lines, body, bytes after it), or None at EOF."""
    while b"\r\n\r\n" not in pending:
        if len(pending) > MAX_HEAD:
            raise ValueError("request head too large")
        chunk = conn.recv(65536)
        if not chunk:
            return None
        pending += chunk
    head, rest = pending.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    headers = lines[1:]
    length = 0
    chunked = False
    for h in headers:
        name, _, value = h.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
        elif name.strip().lower() == "transfer-encoding" and "chunked" in value.lower():
            chunked = True
    if length > MAX_BODY:
        raise ValueError("request body too large")
    body = b""
    if chunked:
        while True:
            while b"\r\n" not in rest:
                rest = read_exact(conn, rest, len(rest) + 1)
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line.split(b";")[0], 16)
            rest = read_exact(conn, rest, size + 2)
            body, rest = body + rest[:size], rest[size + 2:]
            if len(body) > MAX_BODY:
                raise ValueError("request body too large")
            if size == 0:
                break
        headers = [h for h in headers if not h.lower().startswith("transfer-encoding")]
        headers.append(f"Content-Length: {len(body)}")
    else:
        rest = read_exact(conn, rest, length)
        body, rest = rest[:length], rest[length:]
    return method, target, headers, body, rest


def too_many(conn):
    status = json.dumps({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                         "message": "Too many requests, please try again later.",
                         "reason": "TooManyRequests", "details": {"retryAfterSeconds": 1},
                         "code": 429}).encode()
    conn.sendall(b"HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\n"
                 b"Retry-After: 1\r\nContent-Length: " + str(len(status)).encode() + b"\r\n\r\n" + status)


def forward(conn, upstream_ctx, target_port, method, target, headers, body):
    keep = [h for h in headers if h.split(":", 1)[0].strip().lower() not in ("connection", "keep-alive")]
    raw = socket.create_connection(("127.0.0.1", target_port))
    up = upstream_ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    try:
        up.sendall(f"{method} {target} HTTP/1.1\r\n".encode("latin-1") +
                   "\r\n".join(keep + ["Connection: close"]).encode("latin-1") + b"\r\n\r\n" + body)
        while True:
            data = up.recv(65536)
            if not data:
                break
            conn.sendall(data)
    finally:
        up.close()


def serve(conn, upstream_ctx, target_port):
    pending = b""
    try:
        while True:
            req = read_request(conn, pending)
            if req is None:
                return
            method, target, headers, body, pending = req
            watch = "watch=true" in target or "watch=1" in target
            with lock:
                state["seen"] += 1
                reject = state["throttle"] and not watch and state["seen"] % 2 == 0
                state["rejected" if reject else "forwarded"] += 1
            if reject:
                too_many(conn)
                continue
            forward(conn, upstream_ctx, target_port, method, target, headers, body)
            return  # the answer ended with the server closing: close ours too
    except (OSError, ValueError, ConnectionError):
        return
    finally:
        conn.close()


def handshake_and_serve(server_ctx, client, upstream_ctx, target_port):
    try:
        tls = server_ctx.wrap_socket(client, server_side=True)
    except (ssl.SSLError, OSError):
        client.close()
        return
    serve(tls, upstream_ctx, target_port)


def main():
    cert_dir, target_port, port_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    signal.signal(signal.SIGUSR2, toggle)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(f"{cert_dir}/apiserver.crt", f"{cert_dir}/apiserver.key")
    server_ctx.set_alpn_protocols(["http/1.1"])
    upstream_ctx = ssl.create_default_context(cafile=f"{cert_dir}/ca.crt")
    upstream_ctx.load_cert_chain(f"{cert_dir}/admin.crt", f"{cert_dir}/admin.key")
    upstream_ctx.set_alpn_protocols(["http/1.1"])
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(128)
    with open(port_file + ".tmp", "w") as f:
        f.write(f"{listener.getsockname()[1]}\n")
    os.replace(port_file + ".tmp", port_file)
    while True:
        try:
            client, _ = listener.accept()
        except InterruptedError:
            continue
        threading.Thread(target=handshake_and_serve, args=(server_ctx, client, upstream_ctx, target_port),
                         daemon=True).start()


if __name__ == "__main__":
    main()
