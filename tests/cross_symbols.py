#!/usr/bin/env python3
"""cross_symbols.py - a board's dump symbolized on the desktop (scripts/cross.sh).

    cross_symbols.py MSGPACK2GECKO DUMP SYSROOT WORKDIR

DUMP was recorded by tests/board_app, cross-built for the board and run
under qemu-user with the target's libc from SYSROOT. The host's converter
must resolve the program's own functions either way, and the board's libc
only from --sysroot SYSROOT: without it, the host's /lib/.../libc.so.6 is
found at the recorded path but its build id differs, so those frames must
stay addresses rather than take the host's names.
"""
import json
import os
import subprocess
import sys

M2G, DUMP, SYSROOT, WORK = sys.argv[1:5]


def names(extra, out):
    r = subprocess.run([M2G, "-q", *extra, DUMP, "-o", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"cross_symbols: msgpack2gecko {extra}: {r.returncode} "
                 f"{r.stderr}")
    with open(out) as f:
        prof = json.load(f)
    got = set()
    for th in prof["threads"]:
        got.update(th.get("stringArray") or th["stringTable"])
    return got


os.makedirs(WORK, exist_ok=True)
plain = names([], os.path.join(WORK, "plain.json"))
board = names(["--sysroot", SYSROOT], os.path.join(WORK, "sysroot.json"))
for got, how in ((plain, "without --sysroot"), (board, "with --sysroot")):
    if not any(s.startswith("board_compute") and "(in board_app)" in s
               for s in got):
        sys.exit(f"cross_symbols: board_compute not resolved {how}")
libc = sorted(s for s in board if s.endswith("(in libc.so.6)"))
if not libc:
    sys.exit("cross_symbols: no libc frame resolved with --sysroot")
wrong = sorted(s for s in plain if s.endswith("(in libc.so.6)"))
if wrong:
    sys.exit("cross_symbols: the host's libc named the board's frames: "
             + ", ".join(wrong[:5]))
print(f"cross_symbols: ok ({len(libc)} libc functions from the sysroot, "
      "none from the host's libc without it)")
