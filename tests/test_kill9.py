#!/usr/bin/env python3
"""test_kill9: kill -9 of the profiled process at random moments (issue 8).

    test_kill9.py KILL9_REC KILL9_CHECK MSGPACK2GECKO TESTS_DIR WORKDIR [RUNS]

Runs KILL9_REC (tests/kill9_rec.c: three threads recording markers,
counters and labels with sampling on, streaming to a file in 4 KiB chunks
with a 1 ms writer period, never stopping by itself) RUNS times (default
100), two at a time, and kills each with SIGKILL after a random delay of
10..300 ms. The delays come from a seeded generator: the seed is printed,
and RTPROF_KILL9_SEED=N repeats a run. Then, for every dump:

  * KILL9_CHECK walks its frames by their lengths and CRCs and decodes it:
    every complete frame decodes, every record of every complete DATA frame
    is delivered, and the only damage is one truncated-tail report covering
    exactly the bytes after the last complete frame (when there are any);
  * MSGPACK2GECKO converts it without crashing: exit 0 when the file ends on
    a frame boundary, 1 when it has a truncated tail (which
    profileGatheringLog reports: a "truncated" damage entry at the offset
    of the cut, truncatedTailBytes); frames and records in the profile's log
    are those of every complete frame. A dump killed before its first
    frame was whole (shorter than one frame header, 24 bytes: in practice
    empty) is "not an rtprof dump", exit 2; nothing else may exit 2 (a
    recorder killed before it even created the file is only counted);
  * tests/gecko_check.py accepts the profile.

A kill lands between two write(2)s far more often than inside one (the
writer writes each frame with one writev, and the kernel completes a write
to a regular file that fits in a page even when the writer is killed), so
most dumps end on a frame boundary. So that truncated tails are checked on
every run too, each dump with at least two frames is also checked cut at a
random offset after its first frame (a kill in the middle of a write, as
on a pipe or a serial line).

Exit status: 0 pass, 1 fail.
"""
import concurrent.futures
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time

FRAME_HEADER = 24


def main():
    if len(sys.argv) not in (6, 7):
        print(__doc__, file=sys.stderr)
        return 2
    rec, checker, m2g, src, work = sys.argv[1:6]
    runs = int(sys.argv[6]) if len(sys.argv) == 7 else 100
    seed = int(os.environ.get("RTPROF_KILL9_SEED", "0")) or \
        random.SystemRandom().randrange(1, 1 << 31)
    print(f"test_kill9: seed {seed} (RTPROF_KILL9_SEED={seed} repeats it), "
          f"{runs} runs", flush=True)
    rng = random.Random(seed)
    plan = [(i, rng.uniform(0.010, 0.300), rng.random()) for i in range(runs)]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    gecko_check = os.path.join(src, "gecko_check.py")
    failures = []
    counts = {"truncated": 0, "clean": 0, "empty": 0, "nofile": 0, "cut": 0}
    t_start = time.monotonic()

    def fail(what, msg):
        failures.append(f"{what}: {msg}")

    def check_dump(path, real):
        """Check one dump; returns "clean", "truncated", "empty" or None."""
        r = subprocess.run([checker, path], capture_output=True, text=True)
        if r.returncode != 0:
            fail(path, f"kill9_check exit {r.returncode}: {r.stderr.strip()}")
            return None
        frames, records, tail, size, trailer = map(int, r.stdout.split())
        out = path + ".json"
        r = subprocess.run([m2g, path, "-o", out], capture_output=True,
                           text=True)
        if r.returncode < 0:
            fail(path, f"msgpack2gecko killed by signal {-r.returncode}: "
                 f"{r.stderr.strip()}")
            return None
        if frames == 0:
            if r.returncode != 2 or "not an rtprof dump" not in r.stderr:
                fail(path, f"{size} bytes, no whole frame: msgpack2gecko "
                     f"exit {r.returncode}, want 2 (not an rtprof dump): "
                     f"{r.stderr.strip()}")
            elif real and size >= FRAME_HEADER:
                fail(path, f"killed with {size} bytes written and no whole "
                     f"frame: a cut first frame is not a dump for "
                     f"msgpack2gecko (exit 2)")
            if os.path.exists(out):
                fail(path, "not a dump, but an output was left behind")
            return "empty"
        want = 1 if tail else 0
        if r.returncode != want:
            fail(path, f"msgpack2gecko exit {r.returncode}, want {want} "
                 f"({frames} frames, {tail} tail bytes): "
                 f"{r.stderr.strip()}")
            return None
        c = subprocess.run([sys.executable, gecko_check, "--quiet", out],
                           capture_output=True, text=True)
        if c.returncode != 0:
            fail(path, "gecko_check.py rejects the profile:\n" +
                 c.stdout + c.stderr)
            return None
        with open(out, encoding="utf-8") as f:
            log = json.load(f)["profileGatheringLog"]
        if log.get("frames") != frames or log.get("records") != records:
            fail(path, f"profile from {log.get('frames')} frames and "
                 f"{log.get('records')} records, the file holds {frames} "
                 f"complete frames and {records} records")
        if log.get("truncatedTailBytes") != tail:
            fail(path, f"truncatedTailBytes {log.get('truncatedTailBytes')}"
                 f", the file has {tail} bytes after its last whole frame")
        damage = log.get("damage", [])
        want_damage = [{"kind": "truncated", "offset": size - tail,
                        "length": tail}] if tail else []
        got = [{k: d.get(k) for k in ("kind", "offset", "length")}
               for d in damage]
        if got != want_damage:
            fail(path, f"profileGatheringLog damage {got}, "
                 f"want {want_damage}")
        if log.get("trailer") != bool(trailer):
            fail(path, f"profileGatheringLog trailer {log.get('trailer')}")
        if real and trailer:
            fail(path, "a killed recorder wrote a trailer")
        if not trailer and "incomplete" not in log:
            fail(path, "no trailer, but the profile is not marked "
                 "incomplete")
        os.unlink(out)
        return "truncated" if tail else "clean"

    def one(i, delay, cut_at):
        path = os.path.join(work, f"kill{i:03d}.rtprof")
        p = subprocess.Popen([rec, path], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
        time.sleep(delay)
        p.send_signal(signal.SIGKILL)
        _, err = p.communicate()
        if p.returncode != -signal.SIGKILL:
            fail(path, f"kill9_rec ended by itself (status {p.returncode}) "
                 f"before the kill after {delay * 1000:.0f} ms: "
                 f"{err.decode(errors='replace').strip()}")
            return None, None
        if not os.path.exists(path):
            return "nofile", None  # killed before it opened the dump
        kind = check_dump(path, True)
        cut_kind = None
        # The same dump cut in the middle of a frame, after the first one.
        with open(path, "rb") as f:
            data = f.read()
        first = len(data)
        if kind in ("clean", "truncated"):
            first = FRAME_HEADER + int.from_bytes(data[16:20], "little") + 4
        if first < len(data) - 1:
            cut = first + 1 + int(cut_at * (len(data) - first - 1))
            cpath = os.path.join(work, f"kill{i:03d}-cut.rtprof")
            with open(cpath, "wb") as f:
                f.write(data[:cut])
            cut_kind = check_dump(cpath, False)
            if cut_kind is not None:
                os.unlink(cpath)
        if kind is not None and cut_kind is not None:
            os.unlink(path)
        return kind, cut_kind

    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as ex:
        for kind, cut_kind in ex.map(lambda a: one(*a), plan):
            if kind is not None:
                counts[kind] += 1
            if cut_kind is not None:
                counts["cut"] += 1
    took = time.monotonic() - t_start
    print(f"test_kill9: {runs} kills in {took:.1f} s: {counts['truncated']} "
          f"dumps with a truncated tail, {counts['clean']} ending on a frame "
          f"boundary, {counts['empty']} empty (killed before the first "
          f"frame), {counts['nofile']} killed before creating the file; "
          f"{counts['cut']} cut copies checked", flush=True)
    if failures:
        for f in failures[:20]:
            print(f"test_kill9: FAIL {f}", file=sys.stderr)
        if len(failures) > 20:
            print(f"test_kill9: ... {len(failures) - 20} more failures",
                  file=sys.stderr)
        print(f"test_kill9: seed {seed}: {len(failures)} failure(s); "
              f"failing dumps kept in {work}", file=sys.stderr)
        return 1
    print("test_kill9: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
