#!/usr/bin/env python3
"""An artifact server for the downloader's tests and benchmark (http, or https with a test CA).

    artifact_server.py --dir D --port-file F [--port P] [--tls-cert C --tls-key K] [--chunk BYTES]

GET /<anything>/<name>?<options> serves the file D/<name>. Each distinct path+query counts its
own requests (1-based), so one URL scripts a whole sequence of answers. Options, joined with '&':

  len=0          no Content-Length: the body ends when the connection closes
  chunked        Transfer-Encoding: chunked
  norange        ignore Range (always 200 with the whole file)
  wrong206       answer a Range with 206 from offset 0
  r416           answer a Range with 416
  redirect=URL   302 to URL (percent-encoded); `redirect=self` loops to the same URL
  stall=S        on request 1, send half of the body, then nothing for S seconds, then close
  cut=N,M,...    request i drops the connection after the i-th number of body bytes
  fail=N         the first N requests get 503
  fail_for=S     503 for S seconds from the first request of this path+query, then served
  hugelen        Content-Length: 10^15 (then the real body)
  drip=N         the first N body bytes one per second, then the rest
  change=K       from request K on, serve D/<name>.v2 (another ETag)
  rate=B         send the body at about B bytes per second (a slow edge link)
  noetag         neither ETag nor Last-Modified
  weak           a weak ETag (W/"...") and Last-Modified
  status=CODE    answer CODE with an empty body
  reason=TEXT    with status=: the reason phrase, percent-decoded as Latin-1 (so %A0 is one
                 byte 0xA0 on the wire, not UTF-8)

--stats FILE is rewritten (atomically) after every request with the same JSON as GET /_stats, for
https servers whose stats a plain client cannot ask for. GET /_stats answers JSON: {"bytes": body bytes sent, "requests": [{"path", "range", "if_range",
"authorization", "host", "t": the wall-clock time it arrived, seconds since the epoch}, ...]}. The chosen port is written to the port file once listening. --port binds that port
(a test's reserve_port(), for a server stopped and started again at the same URL) instead of any.
"""
import argparse
import hashlib
import json
import os
import socket
import ssl
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
COUNTS = {}
FIRST_SEEN = {}  # path+query -> time.monotonic() of its first request (fail_for)
STATS = {"bytes": 0, "active": 0, "requests": []}
ARGS = None
LAST_MODIFIED = "Tue, 01 Dec 2026 10:00:00 GMT"


def etag_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        h.update(f.read(1 << 16))
    h.update(str(os.path.getsize(path)).encode())
    return '"' + h.hexdigest()[:16] + '"'


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def sent(self, n):
        with LOCK:
            STATS["bytes"] += n

    def head(self, status, headers, reason=None):
        self.send_response(status, reason)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def write_stats(self, active_change):
        with LOCK:
            STATS["active"] += active_change
            if ARGS.stats:
                tmp = ARGS.stats + ".tmp"
                with open(tmp, "w") as f:
                    json.dump(STATS, f)
                os.rename(tmp, ARGS.stats)

    def do_GET(self):
        # "active" counts answers still being sent, so a test can wait until every byte it may
        # count has been counted.
        self.active = True
        self.write_stats(1)
        try:
            self.serve()
        finally:
            self.done_sending()

    def done_sending(self):
        if self.active:
            self.active = False
            self.write_stats(-1)

    def serve(self):
        self.close_connection = True
        url = urllib.parse.urlsplit(self.path)
        if url.path == "/_stats":
            with LOCK:
                body = json.dumps(STATS).encode()
            self.head(200, [("Content-Type", "application/json"), ("Content-Length", len(body))])
            self.wfile.write(body)
            return
        opts = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        with LOCK:
            n = COUNTS.get(self.path, 0) + 1
            COUNTS[self.path] = n
            first = FIRST_SEEN.setdefault(self.path, time.monotonic())
            STATS["requests"].append({
                "path": self.path, "n": n,
                "range": self.headers.get("Range"), "if_range": self.headers.get("If-Range"),
                "authorization": self.headers.get("Authorization"),
                "host": self.headers.get("Host"), "t": time.time()})
        if "status" in opts:
            reason = dict(urllib.parse.parse_qsl(url.query, encoding="latin-1")).get("reason")
            self.head(int(opts["status"]), [("Content-Length", "0")], reason)
            return
        if "fail" in opts and n <= int(opts["fail"]):
            self.head(503, [("Content-Length", "0")])
            return
        if "fail_for" in opts and time.monotonic() - first < float(opts["fail_for"]):
            self.head(503, [("Content-Length", "0")])
            return
        if "redirect" in opts:
            target = opts["redirect"]
            if target == "self":
                target = self.path
            self.head(302, [("Location", target), ("Content-Length", "0")])
            return
        name = os.path.basename(url.path)
        path = os.path.join(ARGS.dir, name)
        if "change" in opts and n >= int(opts["change"]):
            path += ".v2"
        if not os.path.isfile(path):
            self.head(404, [("Content-Length", "0")])
            return
        size = os.path.getsize(path)
        tag = etag_of(path)
        validators = [] if "noetag" in opts else [("ETag", tag), ("Last-Modified", LAST_MODIFIED)]
        if "weak" in opts:
            validators = [("ETag", "W/" + tag), ("Last-Modified", LAST_MODIFIED)]
        start = 0
        status = 200
        rng = self.headers.get("Range")
        if rng and "norange" not in opts:
            if_range = self.headers.get("If-Range")
            if if_range is None or if_range in (tag, LAST_MODIFIED):
                if "r416" in opts:
                    self.head(416, [("Content-Range", "bytes */%d" % size), ("Content-Length", "0")])
                    return
                start = int(rng.split("=")[1].split("-")[0])
                if start >= size:
                    self.head(416, [("Content-Range", "bytes */%d" % size), ("Content-Length", "0")])
                    return
                status = 206
                if "wrong206" in opts:
                    start = 0
        length = size - start
        headers = list(validators)
        if status == 206:
            headers.append(("Content-Range", "bytes %d-%d/%d" % (start, size - 1, size)))
        chunked = "chunked" in opts
        if "hugelen" in opts:
            headers.append(("Content-Length", str(10 ** 15)))
        elif chunked:
            headers.append(("Transfer-Encoding", "chunked"))
        elif opts.get("len") != "0":
            headers.append(("Content-Length", str(length)))
        self.head(status, headers)

        limit = length
        cuts = [int(c) for c in opts.get("cut", "").split(",") if c]
        if n <= len(cuts):
            limit = min(limit, cuts[n - 1])
        stall_at = length // 2 if ("stall" in opts and n == 1) else -1
        drip = int(opts.get("drip", "0"))
        rate = int(opts.get("rate", "0"))
        began = time.monotonic()
        sent = 0
        with open(path, "rb") as f:
            f.seek(start)
            while sent < limit:
                step = ARGS.chunk
                if rate > 0:
                    # Paced against the start of the answer, so that a slow write is caught up.
                    step = min(step, max(1, rate // 20))
                    ahead = began + sent / rate - time.monotonic()
                    if ahead > 0:
                        time.sleep(ahead)
                if sent < drip:
                    step = 1
                if stall_at >= 0 and sent < stall_at:
                    step = min(step, stall_at - sent)
                data = f.read(min(step, limit - sent))
                if not data:
                    break
                if chunked:
                    self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")
                else:
                    self.wfile.write(data)
                self.wfile.flush()
                sent += len(data)
                self.sent(len(data))
                if sent <= drip:
                    time.sleep(1)
                if sent == stall_at:
                    self.done_sending()
                    time.sleep(float(opts["stall"]))
                    return
        if sent < length and limit < length:
            # Dropped mid-body: no TLS close_notify, no chunk terminator.
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if chunked:
            self.wfile.write(b"0\r\n\r\n")


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--dir", required=True)
    p.add_argument("--port-file", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--stats")
    p.add_argument("--chunk", type=int, default=64 << 10)
    ARGS = p.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    server.daemon_threads = True
    if ARGS.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(tmp, ARGS.port_file)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    sys.exit(0)


if __name__ == "__main__":
    main()
