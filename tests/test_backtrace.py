"""Marker backtraces: a dump with "Blocked" markers and their BACKTRACE
records (tests/backtrace_rec.c), converted and summarized.

    test_backtrace.py RTPROF MSGPACK2GECKO BACKTRACE_REC TESTS_DIR WORKDIR

For a session without sampling (placeholder samples: the backtraces get
stack rows after theirs) and one with the sampler on:
- gecko_check.py accepts the profile (cause.stack indexes included);
- each of the 3 "fsync" markers has data.stack (a one-sample backtrace,
  which the front-end turns into the marker's cause) and data.cause naming
  the same stack: "bt label" > bt_inner > bt_outer > main, innermost
  first; the "nanosleep" marker (no BACKTRACE) has neither; the worker's
  "read" stack starts at bt_worker; the placeholder samples keep their
  own frames; the gathering log counts 4 backtraces and 1 without a
  marker;
- `rtprof summarize` reports the same on the dump and on the profile:
  blocked time by call, by stack (3 fsync with that stack, 1 read, 1
  nanosleep without a stack), CPU per thread, and the same folded stacks.
"""

import gzip
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, load, markers  # noqa: E402
from summarize_testlib import func, parse_summary, stack_names  # noqa: E402
import gecko_check  # noqa: E402

RTPROF, M2G, REC, SRC, DIR = sys.argv[1:6]


def run(args, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=120, **kw)
    return r.returncode, r.stdout.decode(), r.stderr.decode()


def close(a, b, what):
    check(abs(a - b) <= 0.01 + 0.002 * max(abs(a), abs(b)),
          f"{what}: {a} on the dump, {b} on the profile")


def blocked(th):
    return [m for m in markers(th) if m["name"] == "Blocked"]


def check_profile(mode, p):
    errors = [e for e in gecko_check.check(p) if not e.startswith("warning")]
    check(not errors, f"{mode}: gecko_check: {errors[:5]}")
    warns = [e for e in gecko_check.check(p) if "marker-cause" in e or
             "marker-stack" in e]
    check(not warns, f"{mode}: gecko_check: {warns[:5]}")
    by_name = {t["name"]: t for t in p["threads"]}
    check(set(by_name) >= {"GeckoMain", "worker"},
          f"{mode}: threads {sorted(by_name)}")
    main, worker = by_name["GeckoMain"], by_name["worker"]
    ms = blocked(main)
    calls = sorted(m["data"]["call"] for m in ms)
    check(calls == ["fsync", "fsync", "fsync", "nanosleep"],
          f"{mode}: main's Blocked markers {calls}")
    for m in ms:
        d = m["data"]
        if d["call"] == "nanosleep":
            check("cause" not in d and "stack" not in d,
                  f"{mode}: nanosleep has a backtrace: {d}")
            continue
        check("cause" in d and "stack" in d, f"{mode}: fsync without "
              f"a backtrace: {d}")
        s = d["cause"]["stack"]
        bt = d["stack"]["samples"]
        check(bt["data"][0][bt["schema"]["stack"]] == s,
              f"{mode}: stack and cause differ: {d}")
        check(d["cause"]["time"] == m["start"], f"{mode}: cause time {d}")
        names = stack_names(main, s)
        check(names[0] == "bt label" and
              [func(n) for n in names[1:4]] == ["bt_inner", "bt_outer",
                                                "main"],
              f"{mode}: fsync stack {names}")
        check(names[1].endswith(" (in backtrace_rec)"),
              f"{mode}: bt_inner not symbolized like samples: {names}")
    ws = blocked(worker)
    check(len(ws) == 1 and "cause" in ws[0]["data"] and
          func(stack_names(worker, ws[0]["data"]["cause"]["stack"])[0]) ==
          "bt_worker", f"{mode}: worker's read {ws}")
    if mode == "plain":
        # Placeholder samples keep their one frame, named after the thread.
        for th, name in ((main, None), (worker, "worker")):
            sch = th["samples"]["schema"]
            for row in th["samples"]["data"]:
                names = stack_names(th, row[sch["stack"]])
                check(len(names) == 1 and (name is None or
                                           names[0] == name),
                      f"{mode}: placeholder sample stack {names}")
    log = p["profileGatheringLog"]
    check(log.get("backtraces") == 4 and
          log.get("backtracesWithoutMarker") == 1,
          f"{mode}: gathering log backtraces {log.get('backtraces')} / "
          f"{log.get('backtracesWithoutMarker')}")


def compare_summaries(mode, dump, prof):
    rc, td, err = run([RTPROF, "summarize", dump])
    check(rc == 0, f"{mode}: summarize dump: {rc} {err}")
    rc, tp, err = run([RTPROF, "summarize", prof])
    check(rc == 0, f"{mode}: summarize profile: {rc} {err}")
    sd, sp = parse_summary(td), parse_summary(tp)
    check(set(sd["calls"]) == {"fsync", "nanosleep", "read"},
          f"{mode}: calls {sd['calls']}\n{td}")
    check(set(sd["calls"]) == set(sp["calls"]),
          f"{mode}: calls differ:\n{td}\n{tp}")
    for call, (n, total, _, mx) in sd["calls"].items():
        pn, ptotal, _, pmx = sp["calls"][call]
        check(n == pn, f"{mode}: {call} count {n} vs {pn}")
        close(total, ptotal, f"{mode}: {call} total ms")
        close(mx, pmx, f"{mode}: {call} max ms")
    check(sd["calls"]["fsync"][0] == 3 and sd["calls"]["read"][0] == 1,
          f"{mode}: {sd['calls']}")
    for s in (sd, sp):
        keys = sorted((c, n, tuple(f)) for c, n, _, f in s["stacks"])
        check(len(keys) == 2 and keys[0][:2] == ("fsync", 3) and
              keys[1][:2] == ("read", 1), f"{mode}: stacks {keys}")
        check(list(keys[0][2][:4]) == ["bt label", "bt_inner", "bt_outer",
                                       "main"], f"{mode}: {keys[0]}")
        check(keys[1][2][0] == "bt_worker", f"{mode}: {keys[1]}")
        check(s["nostack"][0] == 1, f"{mode}: without a stack {s['nostack']}")
    check(sorted((c, n, tuple(f)) for c, n, _, f in sd["stacks"]) ==
          sorted((c, n, tuple(f)) for c, n, _, f in sp["stacks"]),
          f"{mode}: by-stack differs:\n{td}\n{tp}")
    check(set(sd["cpu"]) == set(sp["cpu"]) and
          sd["samples"] == sp["samples"],
          f"{mode}: CPU by thread differs:\n{td}\n{tp}")
    for k, v in sd["cpu"].items():
        close(v, sp["cpu"][k], f"{mode}: CPU of {k}")
    # How many samples the sampler took is the machine's business (no
    # timing-based check): only that both readings agree.
    rc, fd, _ = run([RTPROF, "summarize", "--folded", dump])
    rc2, fp, _ = run([RTPROF, "summarize", "--folded", prof])
    check(rc == 0 and rc2 == 0 and sorted(fd.splitlines()) ==
          sorted(fp.splitlines()), f"{mode}: folded stacks differ:\n"
          f"{fd}\n---\n{fp}")


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    for mode in ("plain", "sampled"):
        dump = os.path.join(DIR, f"{mode}.rtprof")
        prof = os.path.join(DIR, f"{mode}.json.gz")
        rc, _, err = run([REC, dump] + (["sampled"] if mode == "sampled"
                                        else []))
        check(rc == 0, f"{mode}: backtrace_rec: {rc} {err}")
        rc, _, err = run([M2G, dump, "-o", prof])
        check(rc == 0, f"{mode}: msgpack2gecko: {rc} {err}")
        rc, out, _ = run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                          prof])
        check(rc == 0, f"{mode}: gecko_check.py rejects the profile:\n{out}")
        check_profile(mode, load(prof))
        compare_summaries(mode, dump, prof)
    bad_profiles(os.path.join(DIR, "sampled.json.gz"))
    print("test_backtrace: ok", file=sys.stderr)


def bad_profiles(prof):
    """A damaged profile: one clear line naming the file, exit 2, never
    a crash (the sanitizer builds run this too)."""
    with gzip.open(prof, "rb") as f:
        text = f.read()
    cases = {
        "cut.json": text[:len(text) // 2],
        "junk.json": b"{\"meta\": [1, 2, }" + text[:100],
        "deep.json": b"[" * 100000 + b"]" * 100000,
        "notjson.json": b"\x00\x01 not json at all",
    }
    for name, data in cases.items():
        path = os.path.join(DIR, name)
        with open(path, "wb") as f:
            f.write(data)
        rc, out, err = run([RTPROF, "summarize", path])
        check(rc == 2 and path in err and len(err.strip().splitlines()) == 1
              and "Sanitizer" not in err and "runtime error" not in err,
              f"summarize {name}: exit {rc}, stderr {err!r}")


main()
