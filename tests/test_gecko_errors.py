#!/usr/bin/env python3
"""test_gecko_errors.py - msgpack2gecko on edited dumps, bad outputs and a
terminal (run by test_gecko.sh, see tests/CMakeLists.txt).

    python3 tests/test_gecko_errors.py MSGPACK2GECKO TESTS_DIR WORKDIR
    python3 tests/test_gecko_errors.py flip DUMP OUT

The first form runs after test_gecko.sh left WORKDIR/rec.rtprof (gecko_rec,
recorded with the sampler off), WORKDIR/rec.json (its conversion) and
WORKDIR/demo.rtprof (rtprof-demo, a profile of some MB); it
also reads the fuzz corpus's sampler-one.rtprof (fixed bytes: every time
in it is known). It edits dumps frame by frame (docs/wire-format.md: a
24-byte header ending in the CRC-32C of its first 20 bytes, the payload,
the payload's CRC-32C), recomputing the CRCs so that each copy has exactly
the fault it is meant to have, and asserts:
  - the first frame's version byte set to 2: exit 2, one stderr line
    "NAME: offset 0: dump format version 2 is newer than this reader's 1",
    no output; a later frame of version 2: skipped and logged (exit 1);
  - outputs that cannot be written: a missing directory, /dev/full (plain,
    gzip, stdout): exit 2, one line naming the output and the cause; an
    output that is not a regular file is never removed;
  - a DATA frame given twice: exit 1, logged as repeated, the profile's
    threads as without the copy; two adjacent DATA frames swapped: exit 1,
    logged as a sequence gap and a repeated frame, and the later-sent frame
    is lost (the reader delivers frames in seq order only), exactly as if
    it had been cut out: every other marker is there;
  - --info on a damaged dump with drops at the source: the time span, the
    drops and the damage, with their values; the sample interval, or that
    the sampler was off;
  - the progress bar: a "\\r" line on stderr under a pseudo-terminal, none
    with --quiet, none when stderr is not a terminal.
The second form writes a copy of DUMP with 4 bytes of the payload of its
middle DATA frame inverted and prints that frame's offset.
Standard library only. Context: single-threaded script.
"""
import array
import errno
import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time

from gecko_testlib import check, fail, load, markers

SYNC = b"\xd4RTP"
HDR = 24
KIND_HEADER, KIND_DATA = 1, 7
DESCRIPTORS = (1, 2, 3, 4, 5, 6)        # HEADER .. STRING
PROG = "msgpack2gecko"


def _crc_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


CRC_TABLE = _crc_table()


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC_TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def le32(b, o):
    return int.from_bytes(b[o:o + 4], "little")


def frames(data):
    """The frames of an undamaged dump: dicts with off, end, kind, version,
    session, seq, len."""
    out, o = [], 0
    while o < len(data):
        check(data[o:o + 4] == SYNC, f"no frame at offset {o}")
        check(crc32c(data[o:o + 20]) == le32(data, o + 20),
              f"header CRC at offset {o}")
        n = le32(data, o + 16)
        end = o + HDR + n + 4
        check(crc32c(data[o + HDR:o + HDR + n]) == le32(data, end - 4),
              f"payload CRC at offset {o}")
        out.append({"off": o, "end": end, "kind": data[o + 4],
                    "version": data[o + 5], "session": le32(data, o + 8),
                    "seq": le32(data, o + 12), "len": n})
        o = end
    return out


def reseal(frame):
    """@frame (bytearray, one whole frame) with both CRCs recomputed."""
    n = le32(frame, 16)
    frame[20:24] = crc32c(frame[0:20]).to_bytes(4, "little")
    frame[HDR + n:HDR + n + 4] = \
        crc32c(frame[HDR:HDR + n]).to_bytes(4, "little")
    return frame


def mp_ints(p, o, count):
    """The first @count msgpack integers of the array at p[o]: a list of
    (value, offset, width) where width is the encoding's (0: fixint)."""
    if p[o] & 0xF0 == 0x90:
        o += 1
    elif p[o] == 0xDC:
        o += 3
    else:
        fail(f"no array at payload offset {o}")
    out = []
    widths = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8,
              0xD0: 1, 0xD1: 2, 0xD2: 4, 0xD3: 8}
    for _ in range(count):
        b = p[o]
        if b < 0x80:
            out.append((b, o, 0))
            o += 1
        elif b >= 0xE0:
            out.append((b - 256, o, 0))
            o += 1
        else:
            check(b in widths, f"not an integer: 0x{b:02x}")
            w = widths[b]
            out.append((int.from_bytes(p[o + 1:o + 1 + w], "big",
                                       signed=b >= 0xD0), o, w))
            o += 1 + w
    return out


def data_header(data, f):
    """The 10 integers of DATA frame @f's data header."""
    return mp_ints(data, f["off"] + HDR, 10)


def set_drops(data, f, full, nested):
    """DATA frame @f of @data (bytearray) with dropped_full/_nested set,
    each in the width it had; CRCs recomputed."""
    for (v, o, w), new in zip(data_header(data, f)[8:10], (full, nested)):
        if w == 0:
            check(new < 0x80, "drops too large for a fixint")
            data[o] = new
        else:
            data[o + 1:o + 1 + w] = new.to_bytes(w, "big")
    data[f["off"]:f["end"]] = reseal(bytearray(data[f["off"]:f["end"]]))


def flip_payload(data, f):
    """DATA frame @f of @data (bytearray) with 4 payload bytes inverted
    (header and CRCs untouched: only the payload CRC fails)."""
    mid = f["off"] + HDR + f["len"] // 2
    check(f["len"] >= 8, "payload too short to flip")
    for i in range(mid - 2, mid + 2):
        data[i] ^= 0xFF


def run(argv, want_rc, stdout=subprocess.DEVNULL):
    """Run @argv; its exit status must be @want_rc (None: any but a
    signal's). Return: the result and its stderr."""
    r = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE,
                       timeout=60)
    err = r.stderr.decode("utf-8", "replace")
    if r.returncode != want_rc and (want_rc is not None or
                                    r.returncode < 0):
        fail(f"{' '.join(argv)}: exit {r.returncode}, want {want_rc}:\n"
             f"{err}")
    return r, err


def one_line(err, what):
    check(err.endswith("\n") and err.count("\n") == 1,
          f"{what}: want one line on stderr, got {err!r}")
    return err[:-1]


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


def log_of(profile):
    return profile["profileGatheringLog"]


def newer_version(m2g, dir, rec):
    """A dump whose first frame is of format version 2."""
    data = bytearray(rec)
    f0 = frames(data)[0]
    check(f0["off"] == 0 and f0["version"] == 1, "first frame")
    data[5] = 2
    data[0:f0["end"]] = reseal(bytearray(data[0:f0["end"]]))
    dump = write(os.path.join(dir, "newer.rtprof"), data)
    out = os.path.join(dir, "newer.json")
    _, err = run([m2g, dump, "-o", out], 2)
    line = one_line(err, "newer version")
    check(line == f"{PROG}: {dump}: offset 0: dump format version 2 is "
          "newer than this reader's 1", f"newer version: {line!r}")
    check(not os.path.exists(out), "newer version: output left behind")
    # The same frame with its header CRC left stale is not a version
    # error: the frame is garbage (so the CRC above was what made the
    # version the only fault).
    data[20] ^= 1
    stale = write(os.path.join(dir, "newer-stale.rtprof"), data)
    _, err = run([m2g, stale, "-o", out], None)
    check("version" not in err, f"stale CRC read as a version: {err!r}")

    # A frame of version 2 after version-1 frames: skipped and logged.
    data = bytearray(rec)
    fd = [f for f in frames(data) if f["kind"] == KIND_DATA][-1]
    data[fd["off"] + 5] = 2
    data[fd["off"]:fd["end"]] = reseal(bytearray(data[fd["off"]:fd["end"]]))
    dump = write(os.path.join(dir, "newer-later.rtprof"), data)
    out = os.path.join(dir, "newer-later.json")
    _, err = run([m2g, dump, "-o", out], 1)
    check(f"{PROG}: {dump}: offset {fd['off']}: damaged: frame of a newer "
          "format version skipped" in err, f"later newer frame: {err!r}")
    log = log_of(load(out))
    d = log["damage"][0]
    check(log["newerVersionFrames"] == 1 and
          (d["kind"], d["offset"], d["count"]) ==
          ("newer-version", fd["off"], 2), f"later newer frame: {log}")


def outputs(m2g, dir, rec_dump, big_dump):
    """Outputs that cannot be written. @big_dump's profile is larger than
    zlib's buffers (gzwrite fails), @rec_dump's is not (gzclose fails)."""
    enospc = os.strerror(errno.ENOSPC)
    missing = os.path.join(dir, "missing-dir", "x.json")
    _, err = run([m2g, rec_dump, "-o", missing], 2)
    line = one_line(err, "missing directory")
    check(line == f"{PROG}: {missing}: cannot create: "
          f"{os.strerror(errno.ENOENT)}", f"missing directory: {line!r}")
    check(not os.path.exists(os.path.dirname(missing)),
          "missing directory created")
    # /dev/full through a symbolic link: the same device, but when the
    # converter removes an output it did not create as a regular file, it
    # removes the link and the test sees it (with /dev/full itself, a test
    # run as root would delete the device node).
    for dump in (rec_dump, big_dump):
        for name in ("full.json", "full.json.gz"):
            link = os.path.join(dir, name)
            os.symlink("/dev/full", link)
            _, err = run([m2g, dump, "-o", link], 2)
            line = one_line(err, link)
            check(line == f"{PROG}: {link}: writing: {enospc}",
                  f"{dump} to {name}: {line!r}")
            check(os.path.islink(link), f"{name}: the output link was "
                  "removed")
            os.unlink(link)
    with open("/dev/full", "wb") as full:
        _, err = run([m2g, rec_dump, "-o", "-"], 2, stdout=full)
    line = one_line(err, "stdout")
    check(line == f"{PROG}: <stdout>: writing: {enospc}", f"stdout: {line!r}")


def same_threads(a, b, what):
    """Two conversions' threads, counters and pauses are the same."""
    for k in ("threads", "counters", "pausedRanges"):
        if a[k] != b[k]:
            fail(f"{what}: {k} differ")


def duplicated(m2g, dir, rec, rec_json):
    """A DATA frame sent twice (the copy right after it)."""
    fs = frames(rec)
    fd = [f for f in fs if f["kind"] == KIND_DATA][-1]
    check(fd["len"] > 0, "DATA frame")
    dump = write(os.path.join(dir, "dup.rtprof"),
                 rec[:fd["end"]] + rec[fd["off"]:fd["end"]] + rec[fd["end"]:])
    out = os.path.join(dir, "dup.json")
    _, err = run([m2g, dump, "-o", out], 1)
    check(err.startswith(f"{PROG}: {dump}: offset {fd['end']}: damaged: "
                         "frame repeated or out of order, skipped"),
          f"duplicate: stderr {err!r}")
    p = load(out)
    log = log_of(p)
    check(log["repeatedFrames"] == 1 and log["sequenceGaps"] == 0 and
          log["damagedFrames"] == 0 and log["damageReports"] == 1,
          f"duplicate: log {log}")
    check([(d["kind"], d["offset"], d["count"]) for d in log["damage"]] ==
          [("seq-dup", fd["end"], fd["seq"])], f"duplicate: {log['damage']}")
    check(len(markers(p["threads"][0])) >= 7, "duplicate: markers")
    same_threads(p, load(rec_json), "duplicate vs undamaged")


def swapped(m2g, dir, seed):
    """Two adjacent DATA frames of two threads sent in the wrong order."""
    fs = frames(seed)
    pair = None
    # The late frame is not the sampler's: its overhead markers are sums
    # over 100 ms windows, so a lost tick may leave their number alone.
    whole0 = os.path.join(dir, "swap-whole0.json")
    run([m2g, "--quiet", "-o", whole0, "--", os.path.join(dir, "seed.rtprof")],
        0)
    sampler = {t["tid"] for t in load(whole0)["threads"]
               if "sampler" in t["name"]}
    for a, b in zip(fs, fs[1:]):
        if a["kind"] == b["kind"] == KIND_DATA and \
                data_header(seed, a)[0][0] not in sampler and \
                data_header(seed, a)[0][0] != data_header(seed, b)[0][0]:
            pair = (a, b)
            break
    check(pair is not None, "no adjacent DATA frames of two threads")
    a, b = pair
    tid_a = data_header(seed, a)[0][0]
    sa, sb = seed[a["off"]:a["end"]], seed[b["off"]:b["end"]]
    dump = write(os.path.join(dir, "swap.rtprof"),
                 seed[:a["off"]] + sb + sa + seed[b["end"]:])
    # What the reader must make of it: b, then a as out of order (not
    # delivered): the same as a dump without a.
    cut = write(os.path.join(dir, "swap-ref.rtprof"),
                seed[:a["off"]] + seed[b["off"]:])
    out, ref, whole = (os.path.join(dir, n) for n in
                       ("swap.json", "swap-ref.json", "swap-whole.json"))
    run([m2g, dump, "-o", out], 1)
    run([m2g, cut, "-o", ref], 1)
    run([m2g, "--quiet", "-o", whole, "--", os.path.join(dir, "seed.rtprof")],
        0)
    p, pr, pw = load(out), load(ref), load(whole)
    log = log_of(p)
    check(log["sequenceGaps"] == 1 and log["repeatedFrames"] == 1 and
          log["damagedFrames"] == 0, f"swap: log {log}")
    check([(d["kind"], d["offset"], d["count"]) for d in log["damage"]] ==
          [("seq-gap", a["off"], 1),
           ("seq-dup", a["off"] + len(sb), a["seq"])],
          f"swap: damage {log['damage']}")
    same_threads(p, pr, "swap vs the dump without the late frame")
    # Every marker of the other threads is there; the late frame's thread
    # lost exactly its markers.
    lost = 0
    for t, tw in zip(p["threads"], pw["threads"]):
        check(t["tid"] == tw["tid"], "swap: thread order")
        # (A counter's level is a marker of the main thread lasting until
        # the next value: a lost value changes it; not compared here.)
        m, mw = plain_markers(t), plain_markers(tw)
        if t["tid"] != tid_a:
            check(m == mw, f"swap: markers of tid {t['tid']} differ")
        else:
            check(all(x in mw for x in m), "swap: a marker changed")
        # (Counter levels it held are markers of the main thread.)
        lost += len(markers(tw)) - len(markers(t))
    check(lost >= 1, "swap: the late frame held no marker (test too weak)")


def plain_markers(th):
    """A thread's markers but the levels of counters' graphs and the
    sampler's overhead (sums over 100 ms windows: a lost frame changes
    them)."""
    return [x for x in markers(th) if not str((x["data"] or {}).get(
        "type", "")).startswith(("rtprof.counter.", "ProfilerOverhead"))]


def info(m2g, dir, seed, rec_dump):
    """--info: a damaged dump with drops at the source; the sampler line."""
    data = bytearray(seed)
    fs = frames(data)
    dfs = [f for f in fs if f["kind"] == KIND_DATA]
    main_tid = 4000                     # tests/fuzz/gen_seeds.c
    dropped = next(f for f in dfs if data_header(data, f)[0][0] == main_tid)
    flipped = dfs[len(dfs) // 2]
    check(flipped is not dropped, "same frame")
    set_drops(data, dropped, 5, 2)
    flip_payload(data, flipped)
    dump = write(os.path.join(dir, "info-damaged.rtprof"), data)
    r, _ = run([m2g, "--info", dump], 1, stdout=subprocess.PIPE)
    txt = r.stdout.decode()
    r, _ = run([m2g, "--info", os.path.join(dir, "seed.rtprof")], 0,
               stdout=subprocess.PIPE)
    clean = r.stdout.decode()

    def line(text, pattern):
        m = re.search(pattern, text, re.M)
        check(m is not None, f"--info: no line /{pattern}/ in:\n{text}")
        return m

    # The seed's events run from T0 + 100 us to its stop at T0 + 2 ms;
    # the lost frame is inside that.
    for t in (txt, clean):
        line(t, r"^events from 0\.100 ms to 2\.000 ms$")
        line(t, r"^process 4000 .*, sample interval 100 us$")
    line(txt, r"^dropped at the source: 5 \(no chunk\), 2 \(re-entrant\)$")
    line(txt, rf'^  tid {main_tid} "main" main: .*, dropped 5 \(full\) 2 '
         r"\(nested\)$")
    line(clean, r"^dropped at the source: 0 \(no chunk\), 0 \(re-entrant\)$")
    line(txt, r"^damage: 2 report\(s\)$")
    line(txt, rf"^  offset {flipped['off']}: skipped: damaged frames "
         r"skipped \(payload CRC mismatch\) \(count 1\)$")
    line(txt, rf"^  offset {flipped['end']}: seq-gap: .*\(count 1\)$")
    line(clean, r"^damage: 0 report\(s\)$")
    # The profile of the same dump agrees.
    out = os.path.join(dir, "info-damaged.json")
    run([m2g, "--quiet", dump, "-o", out], 1)
    log = log_of(load(out))
    check(log["damageReports"] == 2 and log["damagedFrames"] == 1,
          f"info dump: log {log}")
    th = {t["tid"]: t for t in log["threads"]}
    check(th[main_tid]["droppedFull"] == 5 and
          th[main_tid]["droppedNested"] == 2, "info dump: drops in the log")

    # Recorded with the sampler off (gecko_rec): said so, no 4294967295.
    r, _ = run([m2g, "--info", rec_dump], 0, stdout=subprocess.PIPE)
    txt = r.stdout.decode()
    line(txt, r'^process \d+ "gecko_rec" .*, sampler off$')
    check("4294967295" not in txt and "sample interval" not in txt,
          f"--info, sampler off:\n{txt}")


def slow_feed(proc, data):
    """Half the frames; once the converter has read them, a pause longer
    than the bar's 0.1 s redraw period; the rest: the bar has something to
    show, however late the converter started."""
    fs = frames(data)
    half = fs[len(fs) // 2]["off"]
    proc.stdin.write(data[:half])
    proc.stdin.flush()
    queued = array.array("i", [0])
    deadline = time.monotonic() + 30
    while True:
        fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, queued)
        if queued[0] == 0:
            break
        check(time.monotonic() < deadline and proc.poll() is None,
              "the converter does not read its input")
        time.sleep(0.01)
    time.sleep(0.4)
    proc.stdin.write(data[half:])
    proc.stdin.close()


def progress(m2g, dir, rec):
    out = os.path.join(dir, "progress.json")
    for quiet in (False, True):
        master, slave = pty.openpty()
        argv = [m2g] + (["--quiet"] if quiet else []) + ["-", "-o", out]
        proc = subprocess.Popen(argv, stdin=subprocess.PIPE,
                                stdout=subprocess.DEVNULL, stderr=slave)
        os.close(slave)
        slow_feed(proc, rec)
        got = b""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if not select.select([master], [], [], 1)[0]:
                if proc.poll() is not None:
                    break
                continue
            try:
                b = os.read(master, 4096)
            except OSError:             # EIO: the pty's last user left
                break
            if not b:
                break
            got += b
        os.close(master)
        check(proc.wait(timeout=30) == 0, f"pty: {argv}: exit {proc.returncode}")
        text = got.decode("utf-8", "replace")
        bar = re.search(rf"\r{PROG}: <stdin> \d+\.\d MB read", text)
        if quiet:
            check(text == "", f"--quiet on a terminal: stderr {text!r}")
        else:
            check(bar is not None, f"no progress line on a terminal: {text!r}")
    # stderr not a terminal: the same slow input draws no bar.
    proc = subprocess.Popen([m2g, "-", "-o", out], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    slow_feed(proc, rec)
    err = proc.stderr.read().decode()
    check(proc.wait(timeout=30) == 0, "no terminal: exit status")
    check("\r" not in err and err == f"{PROG}: wrote {out}; open it at "
          "https://profiler.firefox.com\n", f"no terminal: stderr {err!r}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "flip":
        with open(sys.argv[2], "rb") as f:
            data = bytearray(f.read())
        dfs = [f for f in frames(data) if f["kind"] == KIND_DATA]
        f = dfs[len(dfs) // 2]
        flip_payload(data, f)
        write(sys.argv[3], data)
        print(f["off"])
        return
    if len(sys.argv) != 4:
        fail("usage: test_gecko_errors.py MSGPACK2GECKO TESTS_DIR WORKDIR")
    m2g, src, work = sys.argv[1:]
    dir = os.path.join(work, "errors")
    os.makedirs(dir, exist_ok=True)
    check(crc32c(b"123456789") == 0xE3069283, "CRC-32C check value")
    rec_dump = os.path.join(work, "rec.rtprof")
    with open(rec_dump, "rb") as f:
        rec = f.read()
    with open(os.path.join(src, "fuzz", "corpus", "sampler-one.rtprof"),
              "rb") as f:
        seed = f.read()
    write(os.path.join(dir, "seed.rtprof"), seed)
    newer_version(m2g, dir, rec)
    outputs(m2g, dir, rec_dump, os.path.join(work, "demo.rtprof"))
    duplicated(m2g, dir, rec, os.path.join(work, "rec.json"))
    swapped(m2g, dir, seed)
    info(m2g, dir, seed, rec_dump)
    progress(m2g, dir, rec)
    print("test_gecko_errors: ok")


if __name__ == "__main__":
    main()
