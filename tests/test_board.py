#!/usr/bin/env python3
"""test_board.py - two boards over a serial line, end to end.

    test_board.py RTPROF BOARD_APP MSGPACK2GECKO SRCDIR WORKDIR

A null-modem cable between two pseudo-terminals stands in for the UART:
the "board" writes to the slave of pty A, this script copies pty A's master
to pty B's master, and `rtprof capture --serial` reads pty B's slave at
115200 baud. board_app starts recording from its environment only
(RTPROF_SERIAL, RTPROF_BAUD: the library opens the line, sets it raw and
paces its writer to 11520 bytes/s). It runs twice (a board reset: two
sessions, two processes), each producing far more than the line carries.

Checks:
- capture writes one file per session, with no damage (a clean line);
- the paced writer never sent more than the line carries (bytes per
  session against its duration), and said so when it fell behind: its
  link_behind events and its per-thread recycled counts are in the
  profile's profileGatheringLog;
- the two sessions convert into one profile with two processes on one
  timeline: the second starts after the first by the gap measured here;
- the board's own functions are symbolized in its samples, its labels and
  markers are there, and gecko_check.py accepts the profile.
"""
import gzip
import json
import os
import pty
import shutil
import signal
import subprocess
import sys
import threading
import time
import tty

RTPROF, BOARD, M2G, SRCDIR, WORK = sys.argv[1:6]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import markers  # noqa: E402
BAUD = 115200
RUN_S = 2.0


def fail(msg):
    print("test_board: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class Cable(threading.Thread):
    """Copies what the board writes (pty A) to the desktop side (pty B)."""

    def __init__(self, a_master, b_master):
        super().__init__(daemon=True)
        self.a, self.b = a_master, b_master
        self.stop = False
        self.bytes = 0

    def run(self):
        while not self.stop:
            try:
                data = os.read(self.a, 65536)
            except OSError:         # EIO: no board has the line open
                time.sleep(0.01)
                continue
            view = memoryview(data)
            while view:
                n = os.write(self.b, view)
                view = view[n:]
            self.bytes += len(data)


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    caps = os.path.join(WORK, "caps")
    a_master, a_slave = pty.openpty()
    b_master, b_slave = pty.openpty()
    a_path, b_path = os.ttyname(a_slave), os.ttyname(b_slave)
    # Raw on the desktop side too: the cable must not translate bytes.
    tty.setraw(b_master)
    tty.setraw(a_master)
    cable = Cable(a_master, b_master)
    cable.start()
    cap = subprocess.Popen([RTPROF, "capture", "--serial", b_path, "--baud",
                            str(BAUD), "-o", caps, "--quiet"],
                           stderr=subprocess.PIPE, text=True)
    time.sleep(0.3)
    env = dict(os.environ, RTPROF_SERIAL=a_path, RTPROF_BAUD=str(BAUD),
               RTPROF_SAMPLE_US="2000")
    starts, durations = [], []
    for _ in range(2):
        t0 = time.time()
        r = subprocess.run([BOARD, str(RUN_S)], env=env, capture_output=True,
                           text=True, timeout=120)
        durations.append(time.time() - t0)
        check(r.returncode == 0, f"board_app: {r.returncode} {r.stderr}")
        starts.append(float(r.stdout.split()[1]))   # "started WALL_S" 
        time.sleep(0.5)             # the board reboots
    # Everything written is in pty A's buffer or already copied: wait
    # until the cable and the capture have drained it.
    last = -1
    while last != cable.bytes:
        last = cable.bytes
        time.sleep(0.5)
    time.sleep(0.5)
    cap.send_signal(signal.SIGINT)
    _, err = cap.communicate(timeout=30)
    cable.stop = True
    check(cap.returncode == 0, f"capture exit {cap.returncode}: {err}")
    files = sorted(f for f in os.listdir(caps) if f.endswith(".rtprof"))
    check(len(files) == 2 and not any("noheader" in f for f in files),
          f"capture files: {files}")
    for f, dur in zip(files, durations):
        size = os.path.getsize(os.path.join(caps, f))
        # Paced: at most the line's rate over the run, plus the stop's
        # queue (<= ~2 s of line), the descriptors and the partial chunks.
        limit = BAUD / 10 * (dur + 2.5) + 64 * 1024
        print(f"test_board: {f}: {size} bytes in {dur:.2f} s "
              f"(limit {limit:.0f})")
        check(size <= limit, f"{f}: {size} bytes > {limit:.0f}")

    out = os.path.join(WORK, "boards.json.gz")
    r = subprocess.run([M2G, "--quiet", *[os.path.join(caps, f)
                                          for f in files], "-o", out],
                       capture_output=True, text=True, timeout=300)
    check(r.returncode == 0, f"msgpack2gecko: {r.returncode} {r.stderr}")
    r = subprocess.run([sys.executable, os.path.join(SRCDIR, "gecko_check.py"),
                        "--quiet", out], capture_output=True, text=True)
    check(r.returncode == 0, "gecko_check.py: " + r.stdout + r.stderr)
    with gzip.open(out, "rt") as f:
        prof = json.load(f)

    procs = [prof] + prof.get("processes", [])
    check(len(procs) == 2, f"{len(procs)} processes, want 2")
    # One timeline: the second board's main() follows the first's by the
    # gap seen here on the wall clock (the wall-clock pairs in each
    # session place its markers). The sessions' own starts come earlier,
    # when the library loaded, by an amount that grows with the load.
    began = []
    for p in procs:
        ms = [m["start"] for th in p["threads"] for m in markers(th)
              if m["name"] == "main began"]
        check(len(ms) == 1, f"{len(ms)} 'main began' markers")
        began.append(p["meta"]["startTime"] + ms[0])
    gap = began[1] - began[0]
    want = (starts[1] - starts[0]) * 1000
    print(f"test_board: the second main() began {gap:.1f} ms after the "
          f"first in the profile, {want:.1f} ms by the wall clock")
    check(abs(gap - want) < 20, f"main()s {gap:.1f} ms apart in the "
          f"profile, {want:.1f} ms by the wall clock")

    for p in procs:
        log = p.get("profileGatheringLog")
        check(isinstance(log, dict), "no profileGatheringLog")
        check(log["damagedFrames"] == 0 and log["sequenceGaps"] == 0,
              "damage on a clean line: " + json.dumps(log)[:300])
        names = [t["name"] for t in p["threads"]]
        check("sensor" in names, f"threads {names}")
        sensor = next(t for t in p["threads"] if t["name"] == "sensor")
        strings = sensor["stringArray"] if "stringArray" in sensor else \
            sensor["stringTable"]
        check("sample" in strings, "no 'sample' markers on the sensor thread")
        main_t = next(t for t in p["threads"] if t["name"] == "GeckoMain")
        mstr = main_t["stringArray"] if "stringArray" in main_t else \
            main_t["stringTable"]
        check(any(s.startswith("board_compute") for s in mstr),
              "board_compute not symbolized in the main thread's samples "
              f"({len(main_t['samples'].get('stack', []))} samples, "
              f"strings {mstr[:20]}, log {json.dumps(log)[:600]})")
        check("compute" in mstr, "no 'compute' label in the main thread")
    text = json.dumps([p.get("profileGatheringLog") for p in procs])
    check("link_behind" in text, "no link_behind event in the gathering log")
    recycled = sum(th.get("recycled", 0) for p in procs
                   for th in p["profileGatheringLog"].get("threads", []))
    check(recycled > 0, "no records counted as dropped for the slow link")
    print(f"test_board: ok ({recycled} records dropped for the line, "
          "counted)")


if __name__ == "__main__":
    main()
