#!/usr/bin/env python3
"""flood.py HOST:PORT HELD [--hold]: another local user crowding a server.

Opens TCP connections to HOST:PORT as fast as it can and sends nothing on them, holding at most
HELD open (the oldest is closed to make room for each new one), until it is killed. It prints
"ready" once HELD connections are open, so a test can start its own request then: from that
moment every connection the server accepts is pushed by a stream of newer ones. With --hold it
opens HELD and then only holds them (idle sockets). Run it as another user to be one."""
import collections
import errno
import signal
import socket
import sys


def main() -> int:
    host, port = sys.argv[1].rsplit(":", 1)
    held = int(sys.argv[2])
    hold = sys.argv[3:] == ["--hold"]
    open_: collections.deque[socket.socket] = collections.deque()
    marked = False
    while not (hold and marked):
        # non-blocking: the kernel completes a loopback handshake by itself, so the next
        # connection need not wait for this one
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(hold)
        if s.connect_ex((host, int(port))) not in (0, errno.EINPROGRESS):
            s.close()
            continue
        open_.append(s)
        if len(open_) > held:
            open_.popleft().close()
        if not marked and len(open_) >= held:
            print("ready", flush=True)
            marked = True
    while True:
        signal.pause()


if __name__ == "__main__":
    sys.exit(main())
