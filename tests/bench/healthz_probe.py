#!/usr/bin/env python3
"""healthz_probe.py PORT STOP_FILE: GET /healthz on 127.0.0.1:PORT on a new connection every
20 ms (as a kubelet would, only more often) until STOP_FILE exists; prints
`healthz: N requests, p50 X ms, p99 Y ms, max Z ms, F failed`."""
import socket
import sys
import time
import os

port, stop = int(sys.argv[1]), sys.argv[2]
lat, failed = [], 0
while not os.path.exists(stop):
    t0 = time.monotonic()
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                data += chunk
        if not data.startswith(b"HTTP/1.1 200"):
            failed += 1
        else:
            lat.append((time.monotonic() - t0) * 1000)
    except OSError:
        failed += 1
    time.sleep(0.02)
lat.sort()
pick = lambda q: lat[min(len(lat) - 1, int(len(lat) * q))] if lat else float("nan")
print("healthz: %d requests, p50 %.2f ms, p99 %.2f ms, max %.2f ms, %d failed"
      % (len(lat), pick(0.5), pick(0.99), lat[-1] if lat else float("nan"), failed))
