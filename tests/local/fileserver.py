#!/usr/bin/env python3
"""A small static file server for the local tier's initializer tests.

The initializers resume downloads with Range requests and may send HEAD
first, which the standard library's http.server does not answer correctly
for ranges, so this serves both itself. It binds a port the kernel picks
and writes the number to --port-file only once it is listening, so the test
never races the start. Optional TLS (--cert/--key) for https:// URIs. Every
request is logged as one line "METHOD PATH RANGE STATUS" to --log, so a test
can check what the client asked for.

It also answers the two Hugging Face hub routes the hf:// initializer uses, so
hf:// can be tested with HF_ENDPOINT pointing here: a repository is a
directory (ROOT/ORG/REPO for models, ROOT/datasets/ORG/REPO for data sets);
GET /api/models/ORG/REPO (or /api/datasets/...) lists its files as the hub
does (siblings[].rfilename, with lfs.sha256 and size), and
/ORG/REPO/resolve/main/FILE (or /datasets/...) serves a file. The log line
then ends with "auth" when the request carried an Authorization header.
Every log line also ends with "amz" when the request carried an x-amz-*
header (S3's signature, date and session token).

--redirect FROM=TO (repeatable) answers a request whose path starts with FROM
with "307 Temporary Redirect" to TO plus the rest of the path: TO may be a
path on this server or an absolute URL (another server), so a test can see
which headers follow a redirect where.

--error PREFIX=STATUS (repeatable) answers a request whose path starts with
PREFIX with that status and an S3-style XML error document as the body.

S3's ListObjectsV2 (GET /BUCKET?list-type=2&prefix=P, path-style, as an S3 endpoint
override sends it) lists the files under ROOT/BUCKET, --s3-page-size keys a reply.

A directory holding an index.html is served as that file (a PEP 503 "simple"
package index is such directories). Only files under --root are served; paths
that would escape it are 404.
--rate N sends every reply at about N bytes a second (a slow server).
"""
import argparse
import contextlib
import hashlib
import json
import http.server
import os
import re
import signal
import socketserver
import shutil
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.parse
import xml.sax.saxutils

CHUNK = 64 * 1024


class Handler(http.server.BaseHTTPRequestHandler):
    root = "."
    log_file = None
    rate = 0
    s3_page = 1000
    redirects = []
    errors = []
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # silence the default stderr log
        pass

    def record(self, status):
        if self.log_file:
            rng = self.headers.get("Range", "-")
            auth = " auth" if self.headers.get("Authorization") else ""
            if any(k.lower().startswith("x-amz-") for k in self.headers.keys()):
                auth += " amz"
            self.log_file.write(f"{self.command} {self.path} {rng} {status}{auth}\n")
            self.log_file.flush()

    def inside(self, path):
        """The real path of PATH (relative to the root) when it stays inside the root."""
        full = os.path.realpath(os.path.join(self.root, path.lstrip("/")))
        root = os.path.realpath(self.root)
        if full != root and not full.startswith(root + os.sep):
            return None
        return full

    def url_path(self):
        return urllib.parse.unquote(urllib.parse.urlsplit(self.path).path)

    def resolve(self):
        path = self.url_path()
        # The hub's download route: REPO/resolve/main/FILE is REPO/FILE here.
        m = re.fullmatch(r"(/(?:datasets/)?[^/]+/[^/]+)/resolve/main/(.+)", path)
        if m:
            path = m.group(1) + "/" + m.group(2)
        full = self.inside(path)
        if full and os.path.isdir(full):  # a directory's index.html (a pip "simple" index)
            full = os.path.join(full, "index.html")
        return full if full and os.path.isfile(full) else None

    def hub_listing(self):
        """The hub's repository info for /api/{models,datasets}/ORG/REPO, or None."""
        m = re.fullmatch(r"/api/(models|datasets)/([^/]+/[^/]+)", self.url_path())
        if not m:
            return None
        repo = self.inside(("datasets/" if m.group(1) == "datasets" else "") + m.group(2))
        if not repo or not os.path.isdir(repo):
            return None
        siblings = []
        for base, dirs, files in os.walk(repo):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(base, name)
                with open(full, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
                siblings.append({"rfilename": os.path.relpath(full, repo),
                                 "size": os.path.getsize(full),
                                 "lfs": {"sha256": digest, "size": os.path.getsize(full)}})
        return json.dumps({"id": m.group(2), "siblings": siblings}).encode()

    def s3_listing(self):
        """S3's ListObjectsV2 for /BUCKET?list-type=2&prefix=P (path-style), or None: the files
        under ROOT/BUCKET whose key starts with P, in key order, --s3-page-size at a time
        (continuation-token: the last key of the page before)."""
        parts = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(parts.query)
        if query.get("list-type") != ["2"]:
            return None
        bucket = self.inside(parts.path.strip("/"))
        if not bucket or not os.path.isdir(bucket):
            return None
        prefix = query.get("prefix", [""])[0]
        after = query.get("continuation-token", [""])[0]
        keys = []
        for base, dirs, files in os.walk(bucket):
            for name in files:
                key = os.path.relpath(os.path.join(base, name), bucket)
                if key.startswith(prefix) and key > after:
                    keys.append(key)
        keys.sort()
        page, more = keys[: Handler.s3_page], len(keys) > Handler.s3_page
        esc = xml.sax.saxutils.escape
        body = ['<?xml version="1.0" encoding="UTF-8"?>',
                '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
                f"<Name>{esc(os.path.basename(bucket))}</Name><Prefix>{esc(prefix)}</Prefix>",
                f"<KeyCount>{len(page)}</KeyCount><IsTruncated>{str(more).lower()}</IsTruncated>"]
        if more:
            body.append(f"<NextContinuationToken>{esc(page[-1])}</NextContinuationToken>")
        for key in page:
            size = os.path.getsize(os.path.join(bucket, key))
            body.append(f"<Contents><Key>{esc(key)}</Key><Size>{size}</Size></Contents>")
        body.append("</ListBucketResult>")
        return "".join(body).encode()

    def parse_range(self, size):
        """(start, end) inclusive, None for no range, or "bad" when unsatisfiable."""
        value = self.headers.get("Range")
        if not value:
            return None
        m = re.fullmatch(r"bytes=(\d*)-(\d*)", value.strip())
        if not m or (m.group(1) == "" and m.group(2) == ""):
            return None
        if m.group(1) == "":
            n = int(m.group(2))
            return (max(size - n, 0), size - 1) if n > 0 else "bad"
        start = int(m.group(1))
        end = int(m.group(2)) if m.group(2) else size - 1
        if start >= size:
            return "bad"
        return (start, min(end, size - 1))

    def redirect(self):
        """Answers 307 when a --redirect prefix matches; True when it did."""
        for src, dst in Handler.redirects:
            if self.path.startswith(src):
                self.send_response(307)
                self.send_header("Location", dst + self.path[len(src):])
                self.send_header("Content-Length", "0")
                self.end_headers()
                self.record(307)
                return True
        return False

    def error(self, body):
        """Answers an error with a body when an --error prefix matches; True when it did."""
        for prefix, status in Handler.errors:
            if self.path.startswith(prefix):
                doc = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
                       b'<Message>Access Denied</Message></Error>\n')
                self.send_response(int(status))
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(doc)))
                self.end_headers()
                self.record(int(status))
                if body:
                    self.wfile.write(doc)
                return True
        return False

    def answer(self, body):
        if self.redirect() or self.error(body):
            return
        listing, kind = self.hub_listing(), "application/json"
        if listing is None:
            listing, kind = self.s3_listing(), "application/xml"
        if listing is not None:
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(listing)))
            self.end_headers()
            self.record(200)
            if body:
                self.wfile.write(listing)
            return
        full = self.resolve()
        if full is None:
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.record(404)
            return
        size = os.path.getsize(full)
        rng = self.parse_range(size)
        if rng == "bad":
            self.send_response(416)
            self.send_header("Content-Range", f"bytes */{size}")
            self.send_header("Content-Length", "0")
            self.end_headers()
            self.record(416)
            return
        start, end = rng if rng else (0, size - 1)
        status = 206 if rng else 200
        self.send_response(status)
        html = full.endswith(".html")
        self.send_header("Content-Type", "text/html" if html else "application/octet-stream")
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(max(end - start + 1, 0)))
        if rng:
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.end_headers()
        self.record(status)
        if not body:
            return
        with open(full, "rb") as f:
            f.seek(start)
            left = end - start + 1
            while left > 0:
                data = f.read(min(CHUNK, left))
                if not data:
                    break
                self.wfile.write(data)
                left -= len(data)
                if Handler.rate:
                    # --rate: a slow server, so a download lasts long enough to
                    # show the initializers' progress lines
                    time.sleep(len(data) / Handler.rate)

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--root", required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log")
    ap.add_argument("--cert")
    ap.add_argument("--key")
    ap.add_argument("--rate", type=int, default=0, help="bytes per second per reply (0: no limit)")
    ap.add_argument("--redirect", action="append", default=[], metavar="FROM=TO",
                    help="answer paths starting with FROM with a 307 to TO + the rest")
    ap.add_argument("--error", action="append", default=[], metavar="PREFIX=STATUS",
                    help="answer paths starting with PREFIX with STATUS and an XML body")
    ap.add_argument("--s3-page-size", type=int, default=1000,
                    help="keys per ListObjectsV2 reply (S3's is 1000)")
    a = ap.parse_args()
    Handler.s3_page = a.s3_page_size
    Handler.redirects = [tuple(r.split("=", 1)) for r in a.redirect]
    Handler.errors = [tuple(r.split("=", 1)) for r in a.error]
    Handler.rate = a.rate
    Handler.root = a.root
    Handler.log_file = open(a.log, "a") if a.log else None
    srv = Server(("127.0.0.1", 0), Handler)
    if a.cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
        ctx.load_cert_chain(a.cert, a.key)
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    # SIGTERM ends serve_forever cleanly, so the socket is closed before exit.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(tmp, a.port_file)
    try:
        srv.serve_forever()
    finally:
        srv.server_close()


@contextlib.contextmanager
def running(root, *options):
    """For Python tests and benches: this server over directory root as a child process
    (further command-line options in options); yields its base URL once it listens, stops it
    on leaving. Fails when it does not start within 10 s."""
    scratch = tempfile.mkdtemp(prefix="kft-fileserver-")
    port_file = os.path.join(scratch, "port")
    proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--root", str(root),
                             "--port-file", port_file, *options])
    try:
        deadline = time.monotonic() + 10
        while not os.path.exists(port_file):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fileserver over {root} did not start")
            time.sleep(0.05)
        with open(port_file) as f:
            yield f"http://127.0.0.1:{f.read().strip()}"
    finally:
        proc.terminate()
        proc.wait()
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
