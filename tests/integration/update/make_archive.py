#!/usr/bin/env python3
"""Hostile release archives for the installer's end-to-end tests, made at test time.

    make_archive.py OUT KIND BINARY

BINARY is a stand-in collector; the archive names it `otelcol-contrib` unless KIND says otherwise.
python's tarfile writes any member name and type as given, where GNU tar would strip a leading
`../` or `/` and so could not make the archives the installer must refuse.
"""
import gzip
import io
import sys
import tarfile
import zipfile

out, kind, binary = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(binary, 'rb').read()


def member(name, payload=None, type_=tarfile.REGTYPE, link=''):
    info = tarfile.TarInfo(name)
    info.type = type_
    info.mode = 0o755
    info.linkname = link
    if payload is not None:
        info.size = len(payload)
    return info, (io.BytesIO(payload) if payload is not None else None)


def tar_gz(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz') as t:
        for info, f in members:
            t.addfile(info, f)
    return buf.getvalue()


if kind == 'symlink':
    blob = tar_gz([member('otelcol-contrib', type_=tarfile.SYMTYPE, link='/bin/sh')])
elif kind == 'hardlink':
    blob = tar_gz([member('real', data), member('otelcol-contrib', type_=tarfile.LNKTYPE, link='real')])
elif kind == 'dotdot':
    blob = tar_gz([member('otelcol-contrib', data), member('../escape', b'x')])
elif kind == 'absolute':
    blob = tar_gz([member('otelcol-contrib', data), member('/tmp/escape', b'x')])
elif kind == 'device':
    blob = tar_gz([member('otelcol-contrib', type_=tarfile.CHRTYPE)])
elif kind == 'two':
    blob = tar_gz([member('otelcol-contrib', data), member('otelcol-contrib', data)])
elif kind == 'wrong-name':
    blob = tar_gz([member('otelcol', data)])
elif kind == 'bomb':
    # 256 MiB of zeros after the binary: a few hundred KiB compressed.
    class Zeros(io.RawIOBase):
        def __init__(self, n):
            self.n = n

        def readable(self):
            return True

        def readinto(self, b):
            k = min(len(b), self.n)
            b[:k] = bytes(k)
            self.n -= k
            return k
    size = 256 << 20
    info = tarfile.TarInfo('padding')
    info.size = size
    blob = tar_gz([member('otelcol-contrib', data), (info, io.BufferedReader(Zeros(size)))])
elif kind == 'truncated':
    whole = tar_gz([member('otelcol-contrib', data)])
    blob = whole[:len(whole) // 2]
elif kind == 'zip':
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo('otelcol-contrib'), data)
    blob = buf.getvalue()
else:
    sys.exit('unknown kind ' + kind)
open(out, 'wb').write(blob)
