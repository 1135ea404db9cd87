#!/usr/bin/env python3
"""test_capture: `rtprof capture` over a damaged serial line (issue 7).

    test_capture.py RTPROF CAPTURE_REC MSGPACK2GECKO TESTS_DIR WORKDIR

CAPTURE_REC (tests/capture_rec.c) records three sessions, each a process of
its own as a board that resets would send them: S1 and S2 (two threads,
typed markers with payloads, counters, 48 static names: ~140 frames from
tens of bytes to 4 KiB each) and a small S3. The stream sent is S1 cut in
the middle of a frame (the board reset while sending it), then S2, then S3.

For each bit error rate 1e-5, 1e-4 and 1e-3, a fault injector damages S1
and S2: bit flips at that rate, bytes dropped (BER/2 per byte), bytes
repeated (BER/4) and bursts of noise inserted (BER/8; 1 to 48 random
bytes, some with a fake frame sync), at least two of each kind; it logs
the original offsets it touched. It is seeded: the seed is printed,
RTPROF_CAPTURE_SEED=N repeats its choices, and a failing run keeps its
files (the damaged streams among them) in WORKDIR. S3 is sent clean: once
its file is complete, the capture has read everything (its frames come
out only after every earlier one was settled, and it is longer than any
frame). The damaged stream is written into a pseudo-terminal's master
while `rtprof capture --serial SLAVE --baud 115200` reads the slave; then
the master is closed (hang-up). Checks:
  * the slave was set up raw, 115200 baud, CLOCAL|CREAD, no CRTSCTS, no
    IXON/IXOFF; capture exits 1 (damage seen) by itself, not by a signal,
    and no sanitizer report is on its stderr;
  * one file per session, named capture-N-SESSION.rtprof (N = 1, 2, ...
    in stream order), -noheader when the session's HEADER was lost; each
    file holds whole frames only, each byte-identical to the original
    frame of that session and seq, in stream order;
  * every frame no fault touched is in its session's file: frames lost
    are a subset of the frames hit (so no more of them);
  * the reported counts follow from the faults: bytes = bytes sent;
    frames = frames in the files; damaged = frames lost whose 24 header
    bytes arrived whole somewhere in the stream sent (their payload CRC
    was checked and failed; the frame cut by the reset among them); gaps
    = frames lost before a later frame of their session was captured;
    garbage + tail = bytes sent outside captured frames, tail 0 (the
    stream ends with S3, clean);
  * msgpack2gecko converts each file with a HEADER (exit 1 when it has
    gaps, else 0), its profileGatheringLog reports the gaps (sequenceGaps
    and seq-gap damage entries adding up to the file's gaps, frames,
    trailer), and gecko_check.py accepts every profile; a -noheader file
    is refused (exit 2, "no session header found", no output).
Then, briefly, through stdin: two frames damaged and noise (known counts;
the profile logs the two missing frames), clean (exit 0, files identical
to the sessions; --quiet prints nothing), one session id sent twice (two
files), bytes lost in the last DATA frame (the frames behind it are still
captured at the end of the stream), Ctrl-C on a pipe that stays open (a
frame cut short at the end is a truncated tail), a headerless session
alone, not a dump at all, a second capture into the same DIR (numbering
continues); a Unix and a TCP socket; the status line on a terminal (a
damaged stream sent in pieces: redrawn as bytes come, never counting more
than the summary or less than before, and its last counts are the
summary's); usage and input errors.

Exit status: 0 pass, 1 fail.
"""
import bisect
import fcntl
import glob
import json
import math
import os
import random
import re
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import termios
import threading
import time

SYNC = b"\xd4RTP"
HDR = 24
OVERHEAD = 28
KIND_HEADER = 1
KIND_TRAILER = 11
DEADLINE = 60           # seconds; only a hung capture reaches it

RTPROF = REC = M2G = SRC = WORK = None
failures = []


def fail(msg):
    failures.append(msg)
    print(f"test_capture: FAIL {msg}", file=sys.stderr, flush=True)


def check(cond, msg):
    if not cond:
        fail(msg)
    return cond


def le32(b, off):
    return int.from_bytes(b[off:off + 4], "little")


class Frame:
    __slots__ = ("off", "size", "kind", "session", "seq", "data")

    def __init__(self, data, off, size):
        self.off = off
        self.size = size
        self.kind = data[off + 4]
        self.session = le32(data, off + 8)
        self.seq = le32(data, off + 12)
        self.data = bytes(data[off:off + size])


def parse(data):
    """Frames of a clean dump laid end to end; returns (frames, end of
    the last whole frame)."""
    frames, off = [], 0
    while off + HDR <= len(data):
        if data[off:off + 4] != SYNC:
            raise ValueError(f"no frame at offset {off}")
        size = OVERHEAD + le32(data, off + 16)
        if off + size > len(data):
            break
        frames.append(Frame(data, off, size))
        off += size
    return frames, off


SUMMARY = re.compile(
    r"bytes (\d+), frames (\d+), damaged (\d+), gaps (\d+), repeated (\d+), "
    r"sessions (\d+), garbage (\d+), tail (\d+)")
KEYS = ("bytes", "frames", "damaged", "gaps", "repeated", "sessions",
        "garbage", "tail")


# The live status line (tools/capture.c, status_show()).
LIVE = re.compile(
    r"\rrtprof capture: (\d+\.\d) kB, frames (\d+), damaged (\d+), "
    r"gaps (\d+), sessions (\d+), garbage (\d+)\x1b\[K")
LIVE_KEYS = ("kB", "frames", "damaged", "gaps", "sessions", "garbage")


def summary(err):
    m = SUMMARY.findall(err)
    if not m:
        return None
    return dict(zip(KEYS, map(int, m[-1])))


def captured_files(d):
    """[(N, session id, noheader, path)] in N order."""
    out = []
    for p in glob.glob(os.path.join(d, "*.rtprof")):
        m = re.fullmatch(r"capture-(\d+)-([0-9a-f]{8})(-noheader)?\.rtprof",
                         os.path.basename(p))
        if not check(m is not None, f"{p}: unexpected file name"):
            continue
        out.append((int(m.group(1)), int(m.group(2), 16),
                    m.group(3) is not None, p))
    return sorted(out)


def read(path):
    with open(path, "rb") as f:
        return f.read()


# ---- The fault injector. ----

def gaps_at(rng, n, p, at_least):
    """Positions in [0, n) with probability p each (geometric gaps), and
    at least @at_least of them."""
    out, pos = set(), -1
    lg = math.log1p(-p)
    while True:
        pos += int(math.log(1.0 - rng.random()) / lg) + 1
        if pos >= n:
            break
        out.add(pos)
    while len(out) < at_least:
        out.add(rng.randrange(n))
    return out


def inject(data, limit, ber, rng):
    """Damage data[:limit]. Returns (damaged bytes, events, counts);
    events are (kind, original offset): "flip" and "drop" change the byte
    at the offset, "insert" puts bytes just before it (a repeated byte i
    is an insertion before i + 1)."""
    flips = {}
    for bit in gaps_at(rng, limit * 8, ber, 2):
        flips[bit // 8] = flips.get(bit // 8, 0) | (1 << (bit % 8))
    drops = gaps_at(rng, limit, ber / 2, 2)
    dups = gaps_at(rng, limit, ber / 4, 2) - drops
    noise = {}
    for off in gaps_at(rng, limit, ber / 8, 2):
        burst = bytearray(rng.randbytes(rng.randint(1, 48)))
        if rng.random() < 0.5:
            # A fake frame start: sync and a header whose CRC is wrong.
            at = rng.randrange(len(burst) + 1)
            burst[at:at] = SYNC + rng.randbytes(20)
        noise[off] = bytes(burst)
    out = bytearray()
    events = []
    prev = 0
    for off in sorted(set(flips) | drops | dups | set(noise)):
        out += data[prev:off]
        if off in noise:
            out += noise[off]
            events.append(("insert", off))
        b = data[off] ^ flips.get(off, 0)
        if off in flips:
            events.append(("flip", off))
        if off in drops:
            events.append(("drop", off))
        else:
            out.append(b)
            if off in dups:
                out.append(b)
                events.append(("insert", off + 1))
        prev = off + 1
    out += data[prev:]
    counts = {"flipped bits": sum(bin(m).count("1") for m in flips.values()),
              "dropped": len(drops), "repeated": len(dups),
              "noise bursts": len(noise)}
    return bytes(out), events, counts


def hit_frames(frames, events):
    """The frames the events touch (a superset of those they change: a
    repeated first byte, say, leaves the frame whole after a garbage
    byte)."""
    starts = [f.off for f in frames]
    ends = [f.off + f.size for f in frames]
    hit = set()

    def at(off):
        i = bisect.bisect_right(starts, off) - 1
        return i if i >= 0 and off < ends[i] else None

    for kind, off in events:
        i = at(off)
        if i is None:
            continue
        rel = off - starts[i]
        if kind == "insert" and rel == 0:
            continue            # between two frames: neither is touched
        hit.add(i)
    return hit


# ---- Running capture. ----

def wait_for(cond, proc, what):
    end = time.monotonic() + DEADLINE
    while not cond():
        if proc is not None and proc.poll() is not None:
            fail(f"{what}: capture exited early ({proc.returncode})")
            return False
        if time.monotonic() > end:
            fail(f"{what}: still waiting after {DEADLINE} s")
            return False
        time.sleep(0.01)
    return True


def finish(proc, errf, what):
    try:
        proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        fail(f"{what}: capture did not stop")
    errf.seek(0)
    err = errf.read()
    errf.close()
    if proc.returncode < 0:
        fail(f"{what}: capture killed by signal {-proc.returncode}:\n{err}")
    sanitizer_clean(err, what)
    return proc.returncode, err


def sanitizer_clean(err, what):
    """A sanitizer report (ASan and UBSan exit 1, as damage does)."""
    return check("Sanitizer" not in err and "runtime error:" not in err,
                 f"{what}: sanitizer report:\n{err}")


def capture_serial(stream, outdir, s3_id, s3_len, what):
    """Write @stream into a pty's master while capture reads the slave."""
    master, slave = os.openpty()
    path = os.ttyname(slave)
    errf = open(outdir + ".stderr", "w+")
    proc = subprocess.Popen([RTPROF, "capture", "--serial", path, "--baud",
                             "115200", "-o", outdir],
                            stdin=subprocess.DEVNULL, stderr=errf)

    def raw():
        a = termios.tcgetattr(slave)
        return not (a[3] & (termios.ICANON | termios.ECHO | termios.ISIG))

    ok = wait_for(raw, proc, f"{what}: raw mode on {path}")
    if ok:
        iflag, _, cflag, _, ispeed, ospeed, _ = termios.tcgetattr(slave)
        check(ispeed == termios.B115200 and ospeed == termios.B115200,
              f"{what}: line speed {ispeed}/{ospeed}, want B115200")
        check(cflag & termios.CLOCAL and cflag & termios.CREAD and
              not cflag & termios.CRTSCTS, f"{what}: cflag {cflag:#o}")
        check(not iflag & (termios.IXON | termios.IXOFF),
              f"{what}: iflag {iflag:#o}: software flow control on")
    os.close(slave)
    os.set_blocking(master, False)
    view, off = memoryview(stream), 0
    end = time.monotonic() + DEADLINE
    while ok and off < len(stream):
        select.select([], [master], [], 0.2)
        try:
            off += os.write(master, view[off:off + 65536])
        except BlockingIOError:
            pass
        if proc.poll() is not None or time.monotonic() > end:
            fail(f"{what}: capture stopped reading after {off} bytes")
            ok = False

    def s3_done():
        for _, sid, _, p in captured_files(outdir):
            if sid == s3_id and os.path.getsize(p) == s3_len:
                return True
        return False

    if ok:
        wait_for(s3_done, proc, f"{what}: the clean last session's file")
    os.close(master)            # hang-up: capture sees the end
    return finish(proc, errf, what)


# ---- The damaged serial runs. ----

def serial_run(ber, rng, s1, s2, s3, m2g_jobs):
    what = f"BER {ber:g}"
    out = os.path.join(WORK, f"serial-{ber:g}")
    f1, _ = parse(s1)
    # The board resets in the middle of a DATA frame past 60% of S1.
    cut_frame = next(f for f in f1 if f.off >= len(s1) * 6 // 10 and
                     f.kind == 7)
    cut = cut_frame.off + HDR + (cut_frame.size - HDR) // 2
    clean = s1[:cut] + s2 + s3
    limit = cut + len(s2)
    frames = [f for f in f1 if f.off + f.size <= cut]
    cut_index = len(frames)
    frames.append(Frame(s1, cut_frame.off, cut - cut_frame.off))
    for base, s in ((cut, s2), (cut + len(s2), s3)):
        for f in parse(s)[0]:
            f.off += base
            frames.append(f)
    byid = {(f.session, f.seq): i for i, f in enumerate(frames)
            if i != cut_index}
    damaged, events, counts = inject(clean, limit, ber, rng)
    hit = hit_frames(frames, events)
    hit.add(cut_index)          # the reset
    with open(out + ".sent", "wb") as f:
        f.write(damaged)
    s3_id = le32(s3, 8)
    rc, err = capture_serial(damaged, out, s3_id, len(s3), what)
    st = summary(err)
    if not check(st is not None, f"{what}: no summary:\n{err}"):
        return None
    check(rc == 1, f"{what}: exit {rc}, want 1 (damage seen)")

    # What is in the files.
    got = {}                    # frame index -> file
    sizes = 0
    files = captured_files(out)
    for k, (n, sid, noheader, path) in enumerate(files):
        check(n == k + 1, f"{what}: file numbers {[f[0] for f in files]}")
        data = read(path)
        try:
            ff, end = parse(data)
        except ValueError as e:
            fail(f"{what}: {path}: {e}")
            continue
        check(end == len(data), f"{path}: {len(data) - end} bytes after "
              f"its last whole frame")
        check(bool(ff) and (ff[0].kind == KIND_HEADER) != noheader,
              f"{path}: first frame kind {ff[0].kind if ff else None}, "
              f"name says noheader={noheader}")
        last = -1
        for f in ff:
            i = byid.get((f.session, f.seq))
            if not check(f.session == sid and i is not None and
                         f.data == frames[i].data,
                         f"{path}: frame at {f.off} (session {f.session:08x}"
                         f", seq {f.seq}) is not one that was sent"):
                continue
            check(i > last, f"{path}: frame {i} after frame {last}")
            check(i not in got, f"{what}: frame {i} captured twice")
            last = i
            got[i] = path
            sizes += f.size
    ids = [f[1] for f in files]
    check(len(set(ids)) == len(ids), f"{what}: a session in two files")

    sent = set(range(len(frames)))
    lost = sent - set(got)
    untouched_lost = sorted(lost - hit)
    check(not untouched_lost, f"{what}: frames no fault touched were lost: "
          f"{[(frames[i].off, frames[i].kind) for i in untouched_lost[:10]]}")
    check(len(lost) <= len(hit), f"{what}: {len(lost)} frames lost, "
          f"{len(hit)} hit")
    # Counts that follow from the faults.
    last_got = {}
    for i in got:
        s = frames[i].session
        last_got[s] = max(last_got.get(s, -1), i)
    want_gaps = sum(1 for i in lost if i < last_got.get(frames[i].session,
                                                          -1))
    # A lost frame whose header arrived whole is a damaged frame: the
    # scanner checks every header it meets (after a bad one it resumes
    # one byte later), and the clean S3 behind gives every claimed length
    # its bytes. Headers are unique (session, seq) and noise cannot forge
    # one (its CRC), so searching the bytes sent is exact.
    want_damaged = sum(1 for i in lost if frames[i].data[:HDR] in damaged)
    want = {"bytes": len(damaged), "frames": len(got), "gaps": want_gaps,
            "damaged": want_damaged, "repeated": 0, "sessions": len(files),
            "tail": 0}
    for k, v in want.items():
        check(st[k] == v, f"{what}: capture says {k} {st[k]}, want {v}")
    check(st["garbage"] + st["tail"] == len(damaged) - sizes,
          f"{what}: garbage {st['garbage']} + tail {st['tail']}, want "
          f"{len(damaged) - sizes} (bytes outside captured frames)")
    check(set(ids) == {frames[i].session for i in got},
          f"{what}: files for sessions {ids}")

    # Each file converts (or is refused, without a HEADER), in the
    # background while the next run goes on.
    for n, sid, noheader, path in files:
        mine = sorted(i for i, p in got.items() if p == path)
        seqs = [frames[i].seq for i in mine]
        gaps = sum(b - a - 1 for a, b in zip([-1] + seqs, seqs))
        trailer = any(frames[i].kind == KIND_TRAILER for i in mine)
        m2g_jobs.append((path, noheader, gaps, len(mine), trailer))
    headers_lost = sum(1 for f in files if f[2])
    n3 = sum(1 for f in frames if f.session == s3_id)
    print(f"test_capture: {what}: {counts['flipped bits']} bits flipped, "
          f"{counts['dropped']} bytes dropped, {counts['repeated']} "
          f"repeated, {counts['noise bursts']} noise bursts in "
          f"{limit} bytes; {len(frames)} frames sent ({n3} in the clean "
          f"S3), {len(hit)} hit, "
          f"{len(got)} recovered, {len(lost)} lost ({st['damaged']} damaged"
          f", {st['gaps']} gaps); {st['garbage']} garbage bytes; "
          f"{len(files)} sessions, {headers_lost} without HEADER",
          flush=True)
    return len(hit), len(lost)


NOISE_LEN = 44


def damaged_s1(s1, f1):
    """S1 (its frames @f1) with two frames damaged (a, b of @f1:
    returned) and noise between two others (NOISE_LEN bytes); the counts
    are known in advance."""
    data = bytearray(s1)
    a = [f for f in f1 if f.kind == 7][10]       # a DATA frame
    b = [f for f in f1 if f.kind == 6][3]        # a STRING frame
    c = f1[len(f1) // 2]
    noise = b"\xd4RTP" + bytes(range(NOISE_LEN - 4))
    data[a.off + 100] ^= 0x10                     # a bit in a's payload
    data[c.off:c.off] = noise                     # before c: c stays whole
    del data[b.off + HDR + 2]                     # a byte of b's payload
    return bytes(data), (a, b)


def stdin_damaged(s1, jobs):
    """S1 through stdin with two frames damaged and noise between two
    others: the same counts, known in advance."""
    out = os.path.join(WORK, "stdin-damaged")
    f1, _ = parse(s1)
    data, (a, b) = damaged_s1(s1, f1)
    rc, err = run_stdin(data, out)
    st = summary(err)
    fs = captured_files(out)
    want = b"".join(f.data for f in f1 if f not in (a, b))
    check(rc == 1 and st is not None and st["damaged"] == 2 and
          st["gaps"] == 2 and st["garbage"] == a.size + b.size - 1 +
          NOISE_LEN and st["tail"] == 0 and len(fs) == 1 and
          read(fs[0][3]) == want,
          f"stdin, damaged: exit {rc}, summary {st}:\n{err}")
    if len(fs) == 1:
        jobs.append((fs[0][3], False, 2, len(f1) - 2, True))


def convert_all(jobs):
    profiles = []
    for path, noheader, gaps, nframes, trailer in jobs:
        out = path + ".json"
        r = subprocess.run([M2G, path, "-o", out], capture_output=True,
                           text=True)
        if r.returncode < 0:
            fail(f"{path}: msgpack2gecko killed by signal {-r.returncode}")
            continue
        if not sanitizer_clean(r.stderr, f"{path}: msgpack2gecko"):
            continue
        if noheader:
            check(r.returncode == 2 and "no session header" in r.stderr and
                  not os.path.exists(out),
                  f"{path}: headerless: msgpack2gecko exit {r.returncode}: "
                  f"{r.stderr.strip()}")
            continue
        want = 1 if gaps else 0
        if not check(r.returncode == want, f"{path}: msgpack2gecko exit "
                     f"{r.returncode}, want {want} ({gaps} gaps): "
                     f"{r.stderr.strip()}"):
            continue
        with open(out, encoding="utf-8") as f:
            log = json.load(f)["profileGatheringLog"]
        seq_gap = sum(d["count"] for d in log.get("damage", [])
                      if d["kind"] == "seq-gap")
        check(log.get("sequenceGaps") == gaps and seq_gap == gaps and
              log.get("damageReports") == len(log.get("damage", [])),
              f"{path}: profileGatheringLog: sequenceGaps "
              f"{log.get('sequenceGaps')}, seq-gap entries {seq_gap}, "
              f"want {gaps}")
        check(log.get("frames") == nframes and
              log.get("damagedFrames") == 0 and
              log.get("skippedBytes") == 0,
              f"{path}: profileGatheringLog frames {log.get('frames')} "
              f"(want {nframes}), damagedFrames {log.get('damagedFrames')}"
              f", skippedBytes {log.get('skippedBytes')}")
        check(log.get("trailer") == trailer,
              f"{path}: profileGatheringLog trailer {log.get('trailer')}")
        profiles.append(out)
    if profiles:
        r = subprocess.run([sys.executable, os.path.join(SRC,
                            "gecko_check.py"), "--quiet", *profiles],
                           capture_output=True, text=True)
        check(r.returncode == 0, "gecko_check.py rejects a profile:\n" +
              r.stdout + r.stderr)
    return len(profiles)


# ---- The other inputs. ----

def expect_clean(out, sessions, rc, err, what):
    check(rc == 0, f"{what}: exit {rc}, want 0:\n{err}")
    files = captured_files(out)
    check([read(f[3]) for f in files] == sessions,
          f"{what}: files {[os.path.basename(f[3]) for f in files]} are "
          f"not the sessions sent")


def run_stdin(data, out, *extra):
    errf = open(out + ".stderr", "w+")
    with open(out + ".in", "wb") as f:
        f.write(data)
    with open(out + ".in", "rb") as f:
        proc = subprocess.Popen([RTPROF, "capture", "-", "-o", out, *extra],
                                stdin=f, stderr=errf)
    return finish(proc, errf, out)


def other_inputs(s1, s2):
    # stdin, clean: the files are the sessions; --quiet says nothing.
    out = os.path.join(WORK, "stdin")
    rc, err = run_stdin(s1 + s2, out)
    expect_clean(out, [s1, s2], rc, err, "stdin")
    st = summary(err)
    check(st is not None and st["frames"] == len(parse(s1)[0]) +
          len(parse(s2)[0]) and st["sessions"] == 2 and
          st["garbage"] == 0 and st["damaged"] == 0,
          f"stdin: summary {st}")
    out = os.path.join(WORK, "quiet")
    rc, err = run_stdin(s1, out, "--quiet")
    expect_clean(out, [s1], rc, err, "stdin --quiet")
    check(err == "", f"--quiet printed: {err!r}")
    # Into the same DIR again: N continues, nothing is overwritten.
    rc, err = run_stdin(s2, out, "-q")
    names = [os.path.basename(f[3]) for f in captured_files(out)]
    check(rc == 0 and len(names) == 2 and names[1].startswith("capture-2-")
          and read(captured_files(out)[0][3]) == s1,
          f"second capture into one DIR: exit {rc}, files {names}")

    # A board whose session ids repeat after a reset: every HEADER still
    # starts a new file.
    out = os.path.join(WORK, "same-id")
    rc, err = run_stdin(s1 + s1, out)
    expect_clean(out, [s1, s1], rc, err, "one session id twice")

    # Bytes lost in the last DATA frame, more than the frames behind it
    # hold: it claims bytes beyond the end of the stream, so only the end
    # settles it (not a damaged frame: its CRC is never checked); the
    # frames behind it are still captured.
    out = os.path.join(WORK, "eof")
    f1, _ = parse(s1)
    d = [f for f in f1 if f.kind == 7][-1]
    k = len(s1) - d.off - d.size + 1
    check(k < d.size - 600, "eof: no room for the case")
    rc, err = run_stdin(s1[:d.off + 500] + s1[d.off + 500 + k:], out)
    st = summary(err)
    fs = captured_files(out)
    check(rc == 1 and st is not None and st["gaps"] == 1 and
          st["damaged"] == 0 and st["garbage"] == d.size - k and
          st["tail"] == 0 and len(fs) == 1 and
          read(fs[0][3]) == s1[:d.off] + s1[d.off + d.size:],
          f"eof: exit {rc}, summary {st}:\n{err}")

    # Unix and TCP sockets: a server that sends the stream and closes.
    for kind in ("unix", "tcp"):
        out = os.path.join(WORK, kind)
        if kind == "unix":
            addr = os.path.join(WORK, "board.sock")
            srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            srv.bind(addr)
            arg = addr
        else:
            srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            srv.bind(("127.0.0.1", 0))
            arg = f"127.0.0.1:{srv.getsockname()[1]}"
        srv.listen(1)
        srv.settimeout(DEADLINE)

        def serve():
            try:
                c, _ = srv.accept()
                c.sendall(s1 + s2)
                c.close()
            except OSError as e:
                fail(f"{kind}: server: {e}")

        t = threading.Thread(target=serve)
        t.start()
        errf = open(out + ".stderr", "w+")
        proc = subprocess.Popen([RTPROF, "capture", f"--{kind}", arg, "-o",
                                 out], stdin=subprocess.DEVNULL, stderr=errf)
        rc, err = finish(proc, errf, kind)
        t.join()
        srv.close()
        expect_clean(out, [s1, s2], rc, err, kind)

    # Ctrl-C on a pipe that stays open; S2 cut inside a frame: the cut
    # frame is a truncated tail, the files are closed whole.
    out = os.path.join(WORK, "sigint")
    f2, _ = parse(s2)
    cutf = f2[len(f2) // 2]
    cut = cutf.off + cutf.size // 2
    errf = open(out + ".stderr", "w+")
    proc = subprocess.Popen([RTPROF, "capture", "-", "-o", out],
                            stdin=subprocess.PIPE, stderr=errf)
    proc.stdin.write(s1 + s2[:cut])
    proc.stdin.flush()

    def pipe_empty():
        b = fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, b"\0" * 4)
        return struct.unpack("i", b)[0] == 0

    def files_done():
        fs = captured_files(out)
        return len(fs) == 2 and os.path.getsize(fs[1][3]) == cutf.off

    if wait_for(pipe_empty, proc, "sigint: pipe") and \
            wait_for(files_done, proc, "sigint: files"):
        proc.send_signal(signal.SIGINT)
    rc, err = finish(proc, errf, "sigint")
    proc.stdin.close()
    st = summary(err)
    check(rc == 1 and "stopped: Ctrl-C (SIGINT)" in err and st is not None
          and st["tail"] == cut - cutf.off and st["garbage"] == 0 and
          st["damaged"] == 0 and st["gaps"] == 0,
          f"sigint: exit {rc}, summary {st}, want tail {cut - cutf.off}:"
          f"\n{err}")
    fs = captured_files(out)
    check([read(f[3]) for f in fs] == [s1, s2[:cutf.off]],
          "sigint: files are not the frames sent before the cut")

    # A session whose HEADER was lost, alone.
    out = os.path.join(WORK, "noheader")
    rc, err = run_stdin(s2[f2[0].size:], out)
    fs = captured_files(out)
    st = summary(err)
    check(rc == 1 and len(fs) == 1 and fs[0][2] and
          read(fs[0][3]) == s2[f2[0].size:] and st is not None and
          st["gaps"] == 1 and "HEADER was lost" in err,
          f"noheader: exit {rc}, files {fs}, summary {st}:\n{err}")
    if fs:
        r = subprocess.run([M2G, fs[0][3], "-o", fs[0][3] + ".json"],
                           capture_output=True, text=True)
        check(r.returncode == 2 and "no session header found" in r.stderr,
              f"noheader: msgpack2gecko exit {r.returncode}: {r.stderr}")

    # Not a dump at all: no frame, exit 1, no file.
    out = os.path.join(WORK, "junk")
    rc, err = run_stdin(random.Random(7).randbytes(10000), out)
    check(rc == 1 and "no frame found" in err and not captured_files(out),
          f"junk: exit {rc}:\n{err}")

    # The status line on a terminal: \r-rewritten, cleared at the end,
    # and it tells the truth: S1 damaged as in stdin_damaged() (two frames
    # lost, noise), sent in pieces over about 1.2 s through a pipe that
    # stays open until every byte was read and written out and two more
    # redraws passed; the last live line before the summary then has the
    # summary's counts (bytes to the 0.1 kB it shows, frames, damaged,
    # gaps, sessions, garbage), it was redrawn while bytes came (two
    # byte counts at least), and no line ever counts more than the summary
    # or less than the line before.
    out = os.path.join(WORK, "tty")
    f1, _ = parse(s1)
    data, lost = damaged_s1(s1, f1)
    want_file = b"".join(f.data for f in f1 if f not in lost)
    master, slave = os.openpty()
    proc = subprocess.Popen([RTPROF, "capture", "-", "-o", out],
                            stdin=subprocess.PIPE, stderr=slave)
    os.close(slave)
    seen = bytearray()

    def pump(t):
        """Read the terminal for up to @t seconds (until EIO: closed)."""
        end = time.monotonic() + t
        while True:
            r, _, _ = select.select([master], [], [],
                                    max(0, end - time.monotonic()))
            if not r:
                return
            try:
                b = os.read(master, 65536)
            except OSError:
                return          # EIO: the slave is closed
            if not b:
                return
            seen.extend(b)

    def send():
        """In 8 pieces 0.15 s apart, as a slow line would: the status
        line is redrawn while the counts grow."""
        try:
            for i in range(8):
                proc.stdin.write(data[len(data) * i // 8:
                                      len(data) * (i + 1) // 8])
                proc.stdin.flush()
                time.sleep(0.15)
        except OSError as e:
            fail(f"tty: writing to capture: {e}")

    # Written by a thread (a full pipe blocks) while the terminal is read.
    writer = threading.Thread(target=send)
    writer.start()

    def all_read():
        pump(0.05)
        if writer.is_alive():
            return False
        b = fcntl.ioctl(proc.stdin.fileno(), termios.FIONREAD, b"\0" * 4)
        fs = captured_files(out)
        return struct.unpack("i", b)[0] == 0 and len(fs) == 1 and \
            os.path.getsize(fs[0][3]) == len(want_file)

    if wait_for(all_read, proc, "tty: everything read"):
        pump(0.8)               # CAP_TTY_MS is 250: at least two redraws
    writer.join()
    proc.stdin.close()
    try:
        proc.wait(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        fail("tty: capture did not stop")
    pump(0.5)
    os.close(master)
    text = seen.decode("utf-8", "replace")
    sanitizer_clean(text, "tty")
    check(proc.returncode == 1 and "stopped: end of stream" in text,
          f"tty: exit {proc.returncode}: {text[-300:]!r}")
    check("\rrtprof capture: " in text and "\033[K" in text,
          f"tty: no status line on the terminal: {text[-300:]!r}")
    live_part, _, final_part = text.partition("rtprof capture: stopped:")
    st = summary(final_part)
    # Each live line as numbers: kB as printed (a string), the rest ints.
    lines = [{k: v if k == "kB" else int(v) for k, v in zip(LIVE_KEYS, m)}
             for m in LIVE.findall(live_part)]
    want = {"bytes": len(data), "frames": len(f1) - len(lost),
            "damaged": 2, "gaps": 2, "repeated": 0, "sessions": 1,
            "garbage": sum(f.size for f in lost) - 1 + NOISE_LEN,
            "tail": 0}
    check(st == want, f"tty: summary {st}, want {want}:\n{text[-600:]!r}")
    if check(bool(lines) and st is not None,
             f"tty: no live status line before the summary: "
             f"{live_part[-300:]!r}"):
        # The summary's counts as the status line shows them.
        final = {k: st[k] for k in LIVE_KEYS if k != "kB"}
        final["kB"] = f"{st['bytes'] / 1e3:.1f}"
        last = lines[-1]
        check(last == final, f"tty: last status line {last} != the "
              f"summary's {final}")
        check(len({ln["kB"] for ln in lines}) >= 2,
              f"tty: the status line was not redrawn as bytes came: "
              f"{lines}")

        def num(ln):
            return {k: float(v) if k == "kB" else v for k, v in ln.items()}

        prev = None
        for ln in map(num, lines):
            check(all(ln[k] <= num(final)[k] for k in ln),
                  f"tty: status line {ln} counts more than the summary "
                  f"{final}")
            check(prev is None or all(ln[k] >= prev[k] for k in ln),
                  f"tty: status line {ln} counts less than the one "
                  f"before {prev}")
            prev = ln
        print(f"test_capture: tty: {len(lines)} status lines, the last "
              f"{last}; summary {st}", flush=True)
    fs = captured_files(out)
    check(len(fs) == 1 and read(fs[0][3]) == want_file,
          "tty: the file is not the intact frames sent")

    # Usage and input errors.
    bad = [(["--serial", "/dev/null", "-o", WORK + "/e"], 3, "not a serial"),
           (["--serial", WORK + "/no-such-tty", "-o", WORK + "/e"], 3,
            "cannot open"),
           (["--unix", WORK + "/no-such.sock", "-o", WORK + "/e"], 3,
            "cannot connect"),
           (["--serial", "/dev/null", "--baud", "12345", "-o", "x"], 2,
            "not a standard rate"),
           (["--baud", "9600", "-", "-o", "x"], 2, "--baud is for"),
           (["-"], 2, "no output directory"),
           (["-o", "x"], 2, "no input"),
           (["-", "--tcp", "h:1", "-o", "x"], 2, "give one input"),
           (["--tcp", "nocolon", "-o", WORK + "/e"], 3, "HOST:PORT"),
           (["--frob", "-o", "x"], 2, "unknown option")]
    for args, want, text in bad:
        r = subprocess.run([RTPROF, "capture", *args], capture_output=True,
                           text=True, stdin=subprocess.DEVNULL,
                           timeout=DEADLINE)
        check(r.returncode == want and text in r.stderr,
              f"capture {' '.join(args)}: exit {r.returncode}, want {want} "
              f"and '{text}': {r.stderr.strip()}")
    r = subprocess.run([RTPROF, "help", "capture"], capture_output=True,
                       text=True)
    check(r.returncode == 0 and "exit status" in r.stdout, "help capture")


def main():
    global RTPROF, REC, M2G, SRC, WORK
    if len(sys.argv) != 6:
        print(__doc__, file=sys.stderr)
        return 2
    RTPROF, REC, M2G, SRC, WORK = sys.argv[1:6]
    seed = int(os.environ.get("RTPROF_CAPTURE_SEED", "0")) or \
        random.SystemRandom().randrange(1, 1 << 31)
    print(f"test_capture: seed {seed} (RTPROF_CAPTURE_SEED={seed} repeats "
          f"the injector's choices)", flush=True)
    rng = random.Random(seed)
    t0 = time.monotonic()
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)

    # Three sessions, three processes (as after board resets).
    paths = [os.path.join(WORK, f"s{i}.rtprof") for i in (1, 2, 3)]
    recs = [subprocess.Popen([REC, p, n]) for p, n in
            zip(paths, ("1500", "1500", "150"))]
    for r in recs:
        if r.wait(timeout=DEADLINE) != 0:
            fail(f"capture_rec exit {r.returncode}")
            return 1
    s1, s2, s3 = map(read, paths)
    biggest = max(f.size for s in (s1, s2) for f in parse(s)[0])
    if len(s3) <= biggest or len({le32(s, 8) for s in (s1, s2, s3)}) != 3:
        fail(f"recordings unfit: S3 {len(s3)} bytes, biggest frame "
             f"{biggest}, session ids not distinct")
        return 1

    jobs = []
    for ber in (1e-5, 1e-4, 1e-3):
        serial_run(ber, rng, s1, s2, s3, jobs)
    stdin_damaged(s1, jobs)
    nconv = convert_all(jobs)
    other_inputs(s1, s2)
    took = time.monotonic() - t0
    if failures:
        print(f"test_capture: seed {seed}: {len(failures)} failure(s); "
              f"files kept in {WORK}", file=sys.stderr)
        return 1
    shutil.rmtree(WORK, ignore_errors=True)
    print(f"test_capture: ok ({nconv} captured files converted; "
          f"{took:.1f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
