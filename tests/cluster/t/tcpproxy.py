#!/usr/bin/env python3
"""A TCP relay between a controller and the API server that can cut every connection on demand.

    tcpproxy.py LISTEN_PORT TARGET_PORT PORT_FILE

Listens on 127.0.0.1:LISTEN_PORT (0: any free port, written to PORT_FILE once listening) and
relays each connection, bytes unchanged, to 127.0.0.1:TARGET_PORT. TLS passes through untouched,
so the client still verifies the API server's own certificate. On SIGUSR1 every open connection
is closed at once in both directions: requests in flight fail and watches end without a clean
end of stream, as when a load balancer or the network drops them. New connections are relayed as
before. Counts of connections accepted and cut go to stderr. Exits on SIGTERM.
"""
import os
import selectors
import signal
import socket
import sys

cut_requested = False


def on_usr1(_signum, _frame):
    global cut_requested
    cut_requested = True


def main():
    listen_port, target_port, port_file = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", listen_port))
    server.listen(128)
    tmp = port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{server.getsockname()[1]}\n")
    os.replace(tmp, port_file)
    sel = selectors.DefaultSelector()
    sel.register(server, selectors.EVENT_READ)
    peers = {}  # socket -> the socket it relays to
    accepted = cut = 0

    def close_pair(s):
        other = peers.pop(s, None)
        for x in (s, other):
            if x is None:
                continue
            peers.pop(x, None)
            try:
                sel.unregister(x)
            except (KeyError, ValueError):
                pass
            x.close()

    global cut_requested
    while True:
        if cut_requested:
            cut_requested = False
            clients = {s for s in peers if s.getsockname()[1] == server.getsockname()[1]}
            for s in clients:
                # RST rather than FIN: the peer sees a broken connection, not an orderly close.
                s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
                close_pair(s)
            cut += len(clients)
            print(f"tcpproxy: cut {len(clients)} connections ({accepted} accepted, {cut} cut so far)",
                  file=sys.stderr, flush=True)
        try:
            events = sel.select(timeout=0.2)
        except InterruptedError:
            continue
        for key, _ in events:
            s = key.fileobj
            if s is server:
                client, _ = server.accept()
                upstream = socket.create_connection(("127.0.0.1", target_port))
                peers[client], peers[upstream] = upstream, client
                sel.register(client, selectors.EVENT_READ)
                sel.register(upstream, selectors.EVENT_READ)
                accepted += 1
                continue
            if s not in peers:
                continue
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                close_pair(s)
                continue
            try:
                peers[s].sendall(data)
            except OSError:
                close_pair(s)


if __name__ == "__main__":
    main()
