#!/usr/bin/env python3
"""Hostile release archives for the installer's end-to-end tests, made at test time.

    make_archive.py OUT KIND BINARY

BINARY is a stand-in collector; the archive names it `otelcol-contrib` unless KIND says otherwise.
python's tarfile writes any member name and type as given, where GNU tar would strip a leading
`../` or `/` and so could not make the archives the installer must refuse.

The archive-memory kinds (zip-entries, zip64-count, zip-lzma-dict, xz-dict, zstd-window, gz-zeros,
deep-names) hold no binary: they are refused whatever else happens, and what their tests watch is
the memory reading them costs. The zips are written byte by byte (zipfile would take a minute for a million entries);
the xz dictionary is raised in the block header after compressing, because an encoder with a
768 MiB dictionary needs gigabytes.
"""
import io
import struct
import subprocess
import sys
import tarfile
import zipfile
import zlib

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


# The archive-memory kinds: archives that are valid and hashed, built to make a reader hold too much.

def zip_blob(entries, claimed=None):
    """A stored zip of (name, payload) pairs whose end records use zip64 (a count past 65,535 needs
    it); `claimed` replaces the entry count those records declare."""
    local, central, offset = [], [], 0
    for name, payload in entries:
        crc = zlib.crc32(payload)
        head = struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0x21, crc, len(payload),
                           len(payload), len(name), 0)
        local.append(head + name + payload)
        central.append(struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0x21, crc,
                                   len(payload), len(payload), len(name), 0, 0, 0, 0, 0, offset)
                       + name)
        offset += len(head) + len(name) + len(payload)
    cd = b''.join(central)
    count = len(entries) if claimed is None else claimed
    end64 = offset + len(cd)
    tail = (struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, count, count, len(cd), offset)
            + struct.pack('<IIQI', 0x07064b50, 0, end64, 1)
            + struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 0xFFFF, 0xFFFF, len(cd), offset, 0))
    return b''.join(local) + cd + tail


def make_zip_entries(path):
    # One million empty entries, about 91 MB: libarchive's seekable zip reader builds its table of
    # the whole central directory at the first header, before any member limit is consulted.
    names = [b'%07d' % i for i in range(1000000)]
    open(path, 'wb').write(zip_blob([(n, b'') for n in names]))


def make_zip64_count(path):
    # Three real entries under a zip64 directory that claims 2^40 of them.
    open(path, 'wb').write(zip_blob([(b'a', b'x'), (b'b', b'y'), (b'c', b'z')], claimed=1 << 40))


def tar_of_zeros(size):
    """A tar (GNU) holding one member `padding` of `size` zero bytes, as chunks."""
    info = tarfile.TarInfo('padding')
    info.size = size
    yield info.tobuf(tarfile.GNU_FORMAT)
    chunk = bytes(1 << 20)
    left = size
    while left > 0:
        yield chunk[:min(left, len(chunk))]
        left -= min(left, len(chunk))
    yield bytes((-size) % 512 + 1024)


def compress(path, argv, chunks):
    with open(path, 'wb') as f:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=f)
        for c in chunks:
            p.stdin.write(c)
        p.stdin.close()
        if p.wait() != 0:
            sys.exit(' '.join(argv) + ' failed')


def varint(buf, at):
    value, shift = 0, 0
    while True:
        b = buf[at]
        value |= (b & 0x7F) << shift
        at += 1
        shift += 7
        if not b & 0x80:
            return value, at


def make_xz_dict(path):
    # 784 MiB of zeros (the dictionary fills only as output is written), compressed with a small
    # dictionary; then the one block header's LZMA2 property is set to 768 MiB (byte 35:
    # 3 << 28) and the header's CRC32 recomputed. A larger dictionary decodes the same stream.
    compress(path, ['xz', '-T1', '--lzma2=preset=0', '-c'], tar_of_zeros(784 << 20))
    buf = bytearray(open(path, 'rb').read())
    at = 12  # after the stream header
    size = (buf[at] + 1) * 4
    flags = buf[at + 1]
    pos = at + 2
    if flags & 0x40:
        _, pos = varint(buf, pos)
    if flags & 0x80:
        _, pos = varint(buf, pos)
    fid, pos = varint(buf, pos)
    plen, pos = varint(buf, pos)
    if (flags & 3) != 0 or fid != 0x21 or plen != 1:
        sys.exit('xz-dict: unexpected block header')
    buf[pos] = 35
    struct.pack_into('<I', buf, at + size - 4, zlib.crc32(bytes(buf[at:at + size - 4])))
    open(path, 'wb').write(bytes(buf))


def make_zstd_window(path):
    # zstd --long=27 from a pipe: no content size in the frame, so its header declares the whole
    # 128 MiB window, and 160 MiB of zeros fill it.
    compress(path, ['zstd', '-q', '-1', '--long=27', '-c'], tar_of_zeros(160 << 20))
    buf = open(path, 'rb').read(6)
    if buf[4] & 0x20 or 10 + (buf[5] >> 3) != 27:
        sys.exit('zstd-window: the frame does not declare a 2^27 window')


def make_zip_lzma_dict(path):
    # A zip member compressed with LZMA (method 14), which libarchive's zip reader decodes through
    # liblzma with the dictionary its properties declare: 100 MiB of zeros, declared 768 MiB. It
    # is named like the binary, since only the binary is decoded (other members are skipped by
    # their compressed size), and a second member of that name has the archive refused.
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, 'w', zipfile.ZIP_LZMA) as z:
        with z.open('otelcol-contrib', 'w') as f:
            chunk = bytes(1 << 20)
            for _ in range(100):
                f.write(chunk)
        z.writestr(zipfile.ZipInfo('otelcol-contrib'), b'second', zipfile.ZIP_STORED)
    blob = bytearray(buf.getvalue())
    # Local header (30 bytes, the name, the extra field), then LZMA's own header: version (2),
    # properties size (2), properties (lc/lp/pb, then the dictionary size).
    at = 30 + struct.unpack_from('<H', blob, 26)[0] + struct.unpack_from('<H', blob, 28)[0]
    if struct.unpack_from('<HH', blob, 0)[0] != 0x4b50 or struct.unpack_from('<H', blob, 8)[0] != 14:
        sys.exit('zip-lzma-dict: unexpected local header')
    struct.pack_into('<I', blob, at + 5, 768 << 20)
    open(path, 'wb').write(bytes(blob))


def make_gz_zeros(path):
    # A long gzip stream (320 MiB of zeros, no binary): zlib's window is 32 KiB whatever it says.
    compress(path, ['gzip', '-1', '-c'], tar_of_zeros(320 << 20))


def make_deep_names(path):
    # 64 members whose GNU long names are 512 KiB each: 262,143 directory levels deep.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode='w:gz', format=tarfile.GNU_FORMAT, compresslevel=1) as t:
        for i in range(64):
            info = tarfile.TarInfo('d/' * 262143 + 'f%02d' % i)
            info.size = 0
            t.addfile(info, io.BytesIO(b''))
    open(path, 'wb').write(buf.getvalue())


HOSTILE = {
    'zip-entries': make_zip_entries,
    'zip64-count': make_zip64_count,
    'xz-dict': make_xz_dict,
    'zstd-window': make_zstd_window,
    'deep-names': make_deep_names,
    'zip-lzma-dict': make_zip_lzma_dict,
    'gz-zeros': make_gz_zeros,
}


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
elif kind in HOSTILE:
    HOSTILE[kind](out)
    sys.exit(0)
else:
    sys.exit('unknown kind ' + kind)
open(out, 'wb').write(blob)
