#!/usr/bin/env python3
"""test_gecko_multi.py - msgpack2gecko: several processes, --from/--to, --thread.

    python3 tests/test_gecko_multi.py GECKO_REC MSGPACK2GECKO TESTS_DIR WORKDIR

Records with tests/gecko_rec.c (keep in step with it) and checks:
- two dumps recorded ~200 ms apart convert into one profile of two
  processes (top level + processes[0]) whose startTimes differ by the real
  delay (+-50 ms), both with a GeckoMain thread labelled "gecko_rec", the
  second's markers after the first's start;
- a dump with two sessions of one program gives two processes: the second
  named "gecko_rec (session 2)" under a made-up pid (pid + 4194304);
- --from/--to keep exactly the markers in (or, for intervals, overlapping)
  the window, and the threads alive in it; --thread keeps the named
  threads and GeckoMain.
Every profile must pass tests/gecko_check.py with 0 errors. Standard library
only.
"""
import os
import subprocess
import sys
import time

from gecko_testlib import check, fail, load, markers

REC, M2G, SRC, DIR = sys.argv[1:5]
PID_STEP = 4194304


def run(args, want=0):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if r.returncode != want:
        fail(f"{' '.join(args)}: exit {r.returncode}, want {want}: "
             f"{r.stderr.decode(errors='replace')}")
    return r


def convert(dumps, out, *opts):
    run([M2G, "--quiet", *opts, *dumps, "-o", out])
    return load(out)


def gcheck(path, nproc):
    r = subprocess.run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                        "--require-samples", "--expect-processes", str(nproc),
                        path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if r.returncode != 0:
        fail(f"gecko_check.py rejects {path}:\n{r.stdout.decode()}")


def two_dumps():
    a, b = os.path.join(DIR, "pa.rtprof"), os.path.join(DIR, "pb.rtprof")
    # Both recorders start, then wait on stdin: their sessions start when
    # told, 200 ms apart, without process start-up jitter. Each prints the
    # wall clock right after its session started: on a loaded machine a
    # recorder may wake late, so the real delay is taken from them.
    env = dict(os.environ, GECKO_REC_WAIT="1")
    pa = subprocess.Popen([REC, a], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=env)
    pb = subprocess.Popen([REC, b], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, env=env)
    time.sleep(0.3)
    pa.stdin.write(b"g")
    pa.stdin.close()
    time.sleep(0.2)
    pb.stdin.write(b"g")
    pb.stdin.close()
    out_a, out_b = pa.stdout.read(), pb.stdout.read()
    check(pa.wait() == 0 and pb.wait() == 0, "gecko_rec failed")
    delay = (int(out_b) - int(out_a)) / 1e6
    # 200 ms between the go signals; the sessions' own start-up (the pool
    # set-up, slow under sanitizers) moves the two apart by some ms.
    check(delay >= 100, f"recorders started only {delay:.1f} ms apart")
    out = os.path.join(DIR, "two.json")
    p = convert([a, b], out)
    gcheck(out, 2)
    check(len(p["processes"]) == 1, f"{len(p['processes'])} sub-processes")
    sp = p["processes"][0]
    d = sp["meta"]["startTime"] - p["meta"]["startTime"]
    check(abs(d - delay) <= 50, f"startTime difference {d:.1f} ms, real delay "
          f"{delay:.1f} ms")
    check(sp["processes"] == [], "nested processes")
    for k in ("version", "interval", "product", "markerSchema", "categories"):
        check(k in sp["meta"], f"sub-process meta.{k} missing")
    check(sp["meta"]["categories"] == p["meta"]["categories"],
          "sub-process categories differ from the top level's")
    for proc in (p, sp):
        mains = [t for t in proc["threads"] if t["name"] == "GeckoMain"]
        check(len(mains) == 1, "one GeckoMain per process")
        check(mains[0]["processName"] == "gecko_rec", "GeckoMain processName")
        check(proc["counters"], "counters on each process")
        check(proc["pausedRanges"], "pausedRanges on each process")
    check(p["threads"][0]["pid"] != sp["threads"][0]["pid"], "distinct pids")
    sub_start = sp["meta"]["startTime"]
    for th in sp["threads"]:
        for m in markers(th):
            t = m["start"] if m["start"] is not None else m["end"]
            check(sub_start + t > p["meta"]["startTime"],
                  f"sub-process marker {m['name']} before the top start")
    # The top-level range covers the second process.
    end = p["meta"]["profilingEndTime"]
    last = max(s[1] for th in sp["threads"] for s in th["samples"]["data"])
    check(end >= d + last, f"profilingEndTime {end} < {d + last}")
    # Reversed order: the other dump is the top level.
    q = convert([b, a], os.path.join(DIR, "two_rev.json"))
    gcheck(os.path.join(DIR, "two_rev.json"), 2)
    check(abs(q["processes"][0]["meta"]["startTime"] - q["meta"]["startTime"]
              + d) < 0.01, "reversed: startTime difference")


def two_sessions():
    dump = os.path.join(DIR, "twice.rtprof")
    run([REC, dump, "twice"])
    out = os.path.join(DIR, "twice.json")
    p = convert([dump], out)
    gcheck(out, 2)
    check(len(p["processes"]) == 1, "two sessions: one sub-process")
    sp = p["processes"][0]
    t1, t2 = p["threads"], sp["threads"]
    check([t["name"] for t in t1] == ["GeckoMain"], "session 1 threads")
    check([t["name"] for t in t2] == ["GeckoMain"], "session 2 threads")
    check(t1[0]["processName"] == "gecko_rec", "session 1 name")
    check(t2[0]["processName"] == "gecko_rec (session 2)",
          f"session 2 name {t2[0]['processName']}")
    check(t2[0]["pid"] == t1[0]["pid"] + PID_STEP, "session 2 made-up pid")
    check(sp["profileGatheringLog"]["pid"] == t1[0]["pid"], "real pid in log")
    check([m["name"] for m in markers(t1[0])] == ["first"], "session 1 markers")
    check([m["name"] for m in markers(t2[0])] == ["second"], "session 2 markers")
    d = sp["meta"]["startTime"] - p["meta"]["startTime"]
    check(20 <= d < 1000, f"session 2 starts {d} ms after session 1")


def windows():
    dump = os.path.join(DIR, "w.rtprof")
    run([REC, dump])
    full = convert([dump], os.path.join(DIR, "w_full.json"))
    main = full["threads"][0]
    ms = {m["name"]: m for m in markers(main)}
    a = ms["phase A"]
    c = ms["compute"]
    mid_a = (a["start"] + a["end"]) / 2
    mid_c = (c["start"] + c["end"]) / 2

    # [middle of phase A, middle of compute]: the two intervals only;
    # the worker registers later: dropped.
    out = os.path.join(DIR, "w1.json")
    p = convert([dump], out, "--from", repr(mid_a), "--to", repr(mid_c))
    gcheck(out, 1)
    names = [m["name"] for m in markers(p["threads"][0])
             if not is_counter(m)]
    check(names == ["phase A", "compute"], f"window 1 markers {names}")
    # The gauge's level in effect in the window (0), from its start; the
    # values set after it (3, 5) are not there.
    q = [(m["start"], m["data"]["value"]) for m in markers(p["threads"][0])
         if m["name"] == "queue depth"]
    # From the window's start: the session's first VALUES gives the
    # levels at its start (not at the writer's first round, which a
    # loaded machine delays past the window: then no level at all).
    check([v for _, v in q] == [0] and abs(q[0][0] - mid_a) < 1e-5,
          f"window 1 queue depth levels {q} (window {mid_a}..{mid_c})")
    check([t["name"] for t in p["threads"]] == ["GeckoMain"],
          "window 1 threads")
    check(p["pausedRanges"] == [], "window 1 pausedRanges")
    # Periodic VALUES frames may report the counter's 0 inside the window;
    # the values set after it (3, 5) must not be there.
    for c in p["counters"]:
        if c["name"] == "queue depth":
            check(all(r[1] == 0 for r in c["samples"]["data"]),
                  "window 1: counter values after the window kept")
    eps = 1e-5  # times are written with 6 decimals
    for s in p["threads"][0]["samples"]["data"]:
        check(mid_a - eps <= s[1] <= mid_c + eps, f"window 1 sample at {s[1]}")
    check(abs(p["meta"]["profilingStartTime"] - mid_a) < eps and
          abs(p["meta"]["profilingEndTime"] - mid_c) < eps, "window 1 range")

    # From the middle of compute on: everything but "start" and "phase A".
    out = os.path.join(DIR, "w2.json")
    p = convert([dump], out, "--from", repr(mid_c))
    gcheck(out, 1)
    names = sorted(m["name"] for m in markers(p["threads"][0])
                   if not is_counter(m))
    want = sorted(m["name"] for m in markers(main)
                  if m["name"] not in ("start", "phase A") and
                  not is_counter(m))
    check(names == want, f"window 2 markers {names}, want {want}")
    check([t["name"] for t in p["threads"]] == ["GeckoMain", "worker"],
          "window 2 threads")
    check(markers(p["threads"][1]) == markers(full["threads"][1]),
          "window 2 worker markers")
    check(len(p["pausedRanges"]) == 1, "window 2 pausedRanges")
    heap = [c for c in p["counters"] if c["name"] == "heap"][0]
    check(sum(r[1] for r in heap["samples"]["data"]) == 1300,
          "window 2: heap running sum")

    # --thread: only the named threads, and GeckoMain; a name no thread
    # has is an error (test_cli_inputs.py checks its message).
    run([M2G, "--thread", "nope", dump, "-o", os.path.join(DIR, "t1.json")],
        2)
    run([M2G, "--thread", "nope", "--thread", "worker", dump, "-o",
         os.path.join(DIR, "t1.json")], 2)
    out = os.path.join(DIR, "t2.json")
    p = convert([dump], out, "--thread", "worker")
    gcheck(out, 1)
    check([t["name"] for t in p["threads"]] == ["GeckoMain", "worker"],
          "--thread worker")
    check(p["counters"], "--thread: counters kept")
    # Bad option values.
    run([M2G, "--from", "x", dump, "-o", os.path.join(DIR, "bad.json")], 2)
    run([M2G, "--from", "5", "--to", "1", dump, "-o",
         os.path.join(DIR, "bad.json")], 2)


def is_counter(m):
    """A marker of a counter's graph (a gauge's level)."""
    return bool(m["data"]) and str(m["data"].get("type", "")).startswith(
        "rtprof.counter.")


def main():
    os.makedirs(DIR, exist_ok=True)
    two_dumps()
    two_sessions()
    windows()
    # No progress bar when stderr is not a terminal.
    r = run([M2G, os.path.join(DIR, "w.rtprof"), "-o",
             os.path.join(DIR, "np.json")])
    check(b"\r" not in r.stderr, "progress output without a terminal")
    print("test_gecko_multi: ok")


main()
