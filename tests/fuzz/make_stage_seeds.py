#!/usr/bin/env python3
"""Writes the seed corpus of fuzz_stage_archive (tests/fuzz/corpus/stage_archive/): inputs in the
target's layout (fuzz_stage_archive.cpp's header comment), one per shape worth starting from.

    make_stage_seeds.py [DIR]
"""
import os
import struct
import sys

out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), 'corpus',
                                                         'stage_archive')
RAW, TAR, TAR_GZ, TAR_XZ, TAR_ZST, ZIP_STORED, ZIP_DEFLATED = range(7)
FILE, DIR, SYMLINK, HARDLINK, CHARDEV, FIFO = range(6)
# Name choices: the target's fixed names, then "deep" (a level count / 64) and "custom".
BIN, DOT_BIN, TOP_BIN, OTHER_BIN, NESTED_BIN, TOP_DIR, DOTDOT, ABSOLUTE, README, DEEP, CUSTOM = \
    range(11)
USTAR, PAX_RESTRICTED, PAX, GNU = range(4)
SET_KNOB, CUT, FLIP = 1, 2, 4


def data(payload):
    return bytes([0, len(payload)]) + payload


def zeros(mib):
    return bytes([0xff]) + struct.pack('<H', mib * 1024 * 1024 // 2048)


def member(kind, name, body=b'', extra=b''):
    head = bytes([kind, name]) + extra
    return head + (body if body else bytes([0, 0]))


def seed(mode, members, flavour=USTAR, edits=0, knob=0, level=0, tail=b''):
    return bytes([mode, flavour, edits, knob, level, len(members)]) + b''.join(members) + tail


BINARY = b'\x7fELF stand-in collector'


def filled(mode, knob, mib):
    """`mib` MiB of zeros, then the binary, under a header declaring `knob` as its xz dictionary
    property or zstd window descriptor."""
    return seed(mode, [member(FILE, README, zeros(mib)), member(FILE, BIN, data(BINARY))],
                edits=SET_KNOB, knob=knob)


seeds = {
    'tar-binary': seed(TAR, [member(FILE, BIN, data(BINARY))]),
    'tar.gz-folder': seed(TAR_GZ, [member(DIR, TOP_DIR), member(FILE, TOP_BIN, data(BINARY))],
                          flavour=PAX, level=5),
    'tar.xz-binary': seed(TAR_XZ, [member(FILE, BIN, data(BINARY))], flavour=GNU, level=3),
    'tar.zst-binary': seed(TAR_ZST, [member(FILE, DOT_BIN, data(BINARY))], level=2),
    'zip-stored': seed(ZIP_STORED, [member(FILE, TOP_BIN, data(BINARY))]),
    'zip-deflated-dotdot': seed(ZIP_DEFLATED, [member(FILE, BIN, data(BINARY)),
                                               member(FILE, DOTDOT, data(b'x'))]),
    'tar-links': seed(TAR, [member(SYMLINK, BIN), member(HARDLINK, OTHER_BIN),
                            member(CHARDEV, README), member(FIFO, NESTED_BIN)], flavour=PAX),
    'tar-absolute-duplicate': seed(TAR, [member(FILE, ABSOLUTE, data(b'x')),
                                         member(FILE, BIN, data(BINARY)),
                                         member(FILE, DOT_BIN, data(BINARY))]),
    'tar-deep-custom': seed(TAR, [member(FILE, DEEP, data(b''), extra=bytes([255])),
                                  member(FILE, CUSTOM, data(BINARY), extra=b'\x05a\x00b/c')],
                            flavour=GNU),
    # 80 MiB of zeros under a block header declaring a 768 MiB dictionary (property byte 35).
    'tar.xz-dict-768MiB': filled(TAR_XZ, 35, 80),
    # 96 MiB of zeros in a frame declaring a 128 MiB window (descriptor 0x88: 2^(10+17)).
    'tar.zst-window-128MiB': filled(TAR_ZST, 0x88, 96),
    # The largest dictionary and window the stage decodes with (64 MiB: property byte 28,
    # descriptor 0x80), filled by 96 MiB of zeros: extracted, within the budget.
    'tar.xz-dict-64MiB': filled(TAR_XZ, 28, 96),
    'tar.zst-window-64MiB': filled(TAR_ZST, 0x80, 96),
    # 64 MiB of zeros in a tar.gz cut short at byte 40,000.
    'tar.gz-zeros-cut': seed(TAR_GZ, [member(FILE, README, zeros(64)),
                                      member(FILE, BIN, data(BINARY))],
                             edits=CUT, level=9, tail=struct.pack('<H', 40000)),
    'zip-flipped': seed(ZIP_DEFLATED, [member(FILE, BIN, data(BINARY))], edits=FLIP,
                        tail=struct.pack('<H', 31)),
}
os.makedirs(out, exist_ok=True)
for name, blob in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(blob)
# Raw mode: a zip64 directory claiming 2^40 entries over three real ones.
local, central, offset = [], [], 0
for name in (b'a', b'b', b'c'):
    local.append(struct.pack('<IHHHHHIIIHH', 0x04034b50, 20, 0, 0, 0, 0x21, 0, 0, 0, 1, 0) + name)
    central.append(struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 20, 20, 0, 0, 0, 0x21, 0, 0, 0,
                               1, 0, 0, 0, 0, 0, offset) + name)
    offset += 31
cd = b''.join(central)
tail = (struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, 1 << 40, 1 << 40, len(cd),
                    offset)
        + struct.pack('<IIQI', 0x07064b50, 0, offset + len(cd), 1)
        + struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, 0xFFFF, 0xFFFF, len(cd), offset, 0))
with open(os.path.join(out, 'raw-zip64-count'), 'wb') as f:
    f.write(bytes([RAW]) + b''.join(local) + cd + tail)
