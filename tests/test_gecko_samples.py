#!/usr/bin/env python3
"""test_gecko_samples.py - check the profiles converted from
gecko_samples_gen's dumps (keep in step with tests/gecko_samples_gen.c).

    python3 tests/test_gecko_samples.py MODE PROFILE.json EXPECT.txt

MODE: full (symbolized), nosym (--no-symbols), nofile (the program's
file is missing: its frames stay hex), sysroot (found under --sysroot),
stripped (no debug info: names but no lines), debugdir (lines again from
--debug-dir), multi (a sample-less dump first, then samples.rtprof),
mismatch (another program at the path under --sysroot: build id mismatch,
hex frames, never a name); real (real.rtprof, recorded with the real
recorder; EXPECT is then real.txt).
Standard library only.
"""
import re
import sys

from gecko_testlib import check, load, markers

LIBFAKE_ADDR = "0x7e0000000100"
# The program's path as sysroot.rtprof records it (under --sysroot only).
SYSROOT_PATH = "/rtprof-nonexistent/bin/gecko_samples_gen"
NOWHERE_ADDR = "0x10"


def threads_by_name(p):
    out = {}
    for t in p["threads"]:
        out[t["name"]] = t
    return out


def stacks(p, th):
    """Per sample: (time, [(location, category name, line)...] root first,
    threadCPUDelta or None)."""
    cats = [c["name"] for c in p["meta"]["categories"]]
    st = th["stringTable"]
    fs, ss = th["frameTable"]["schema"], th["stackTable"]["schema"]
    frames, stk = th["frameTable"]["data"], th["stackTable"]["data"]
    sch = th["samples"]["schema"]
    out = []
    for row in th["samples"]["data"]:
        s = row[sch["stack"]]
        path = []
        while s is not None:
            check(0 <= s < len(stk), f"stack index {s}")
            fr = frames[stk[s][ss["frame"]]]
            path.append((st[fr[fs["location"]]], cats[fr[fs["category"]]],
                         fr[fs["line"]]))
            prefix = stk[s][ss["prefix"]]
            check(prefix is None or prefix < s, "prefix after its child")
            s = prefix
        path.reverse()
        cpu = row[sch["threadCPUDelta"]] if "threadCPUDelta" in sch else None
        out.append((row[sch["time"]], path, cpu))
    return out


# How the front-end classifies a frame location, in its order
# (extractFuncsAndResourcesFromFrameLocations in its
# src/profile-logic/process-profile.ts): hex address, C++ ("name (in lib)",
# optionally followed by " + N" or "(x:y)", which it discards), JavaScript
# ("name (url:line[:col])" or "url:line"), else a plain name.
CPP_RES = [re.compile(r"^(.*) \(in ([^)]*)\) (\+ [0-9]+)$"),
           re.compile(r"^(.*) \(in ([^)]*)\) (\(.*:.*\))$"),
           re.compile(r"^(.*) \(in ([^)]*)\)$")]
JS_RES = [re.compile(r"^(.*) \((.+?):([0-9]+)(?::([0-9]+))?\)(?:\[(\d+)\])?$"),
          re.compile(r"^()(.+?):([0-9]+)(?::([0-9]+))?(?:\[(\d+)\])?$")]


def front_end_kind(loc):
    if loc.startswith("0x"):
        return "address"
    if any(r.match(loc) for r in CPP_RES):
        return "native"
    if any(r.match(loc) for r in JS_RES):
        return "js"
    return "plain"


def check_no_js(p):
    """No frame of any thread reads as JavaScript to the front-end (a
    native frame's file:line would, in the shape "name (file:line)"); a
    native frame with a name is exactly "name (in lib)" (nothing after it:
    the front-end would drop it) and its line is in frameTable.line."""
    for proc in [p] + p["processes"]:
        for t in proc["threads"]:
            fs = t["frameTable"]["schema"]
            for fr in t["frameTable"]["data"]:
                loc = t["stringTable"][fr[fs["location"]]]
                kind = front_end_kind(loc)
                check(kind != "js", f"{t['name']}: {loc!r} reads as JS")
                check(kind != "native" or CPP_RES[2].match(loc),
                      f"{t['name']}: {loc!r}: text after '(in lib)'")


def locs(path):
    return [x[0] for x in path]


def check_tables_unique(th):
    fs, ss = th["frameTable"]["schema"], th["stackTable"]["schema"]
    fkeys = [(r[fs["location"]], r[fs["category"]])
             for r in th["frameTable"]["data"]]
    check(len(fkeys) == len(set(fkeys)),
          f"{th['name']}: duplicate (location, category) frames {fkeys}")
    skeys = [(r[ss["prefix"]], r[ss["frame"]])
             for r in th["stackTable"]["data"]]
    check(len(skeys) == len(set(skeys)),
          f"{th['name']}: duplicate (prefix, frame) stacks {skeys}")


# The CPU the real-time thread of real.rtprof may use around its measured
# spin (its wake-up, a marker, a pipe write, entering read(2)): ns.
REAL_SLACK_NS = 1000000


def check_real(p, exp):
    """real.rtprof (gecko_samples_gen, record_real): the real recorder's
    samples of a real-time thread whose label stack never changes."""
    th = threads_by_name(p)
    check(set(th) >= {"GeckoMain", "Audio RT: rt"}, f"threads {set(th)}")
    rt = th["Audio RT: rt"]
    check_tables_unique(rt)
    rs = stacks(p, rt)
    # As many samples as the sampler counted for the thread
    # (rtprof_thread_stats.samples): none lost, none made up.
    check(len(rs) == int(exp["samples"]),
          f"rt: {len(rs)} samples, the recorder took {exp['samples']}")
    # Exact stacks: every sample is the label stack, root first, nothing
    # native (never interrupted), nothing idle.
    for t, path, _ in rs:
        check(path == [("rt outer", "User", None), ("rt inner", "User", None)],
              f"rt stack at {t}: {path}")
    times = [x[0] for x in rs]
    check(times == sorted(times), "rt samples out of time order")
    wake = [m for m in markers(th["GeckoMain"]) if m["name"] == "wake"]
    spun = [m for m in markers(rt) if m["name"] == "spun"]
    check(len(wake) == 1 and len(spun) == 1, f"markers {wake} {spun}")
    w, s0, s1 = wake[0]["start"], spun[0]["start"], spun[0]["end"]
    check(w < s0 < s1, f"wake {w}, spun {s0}..{s1}")
    cpu = [x[2] for x in rs]
    check(all(isinstance(c, int) and c >= 0 for c in cpu),
          f"rt threadCPUDelta {cpu}")
    # Exact CPU deltas: the first sample has none; the thread was blocked
    # in read(2) from before the session until "wake": 0 ns in every
    # sample before it.
    before = [c for t, _, c in rs if t < w]
    check(len(before) >= 2, f"rt: {len(before)} samples before wake")
    check(cpu[0] == 0 and all(c == 0 for c in before),
          f"rt CPU before wake {before}")
    # The deltas add up to what the thread measured around its spin (plus
    # its few syscalls): the last sample is after it blocked again (a
    # sample whose time is after "spun" read the clock after the one
    # before it, so two of them).
    after = [t for t, _, _ in rs if t > s1]
    check(len(after) >= 2, f"rt: {len(after)} samples after spun")
    spin = int(exp["spin_ns"])
    check(spin <= sum(cpu) <= spin + REAL_SLACK_NS,
          f"rt: CPU deltas sum to {sum(cpu)} ns, the thread spun {spin}")
    # The spin's CPU is in the samples taken during it: the first sample
    # after it holds the spin's tail (at most the wall time since the
    # sample before it: ticks are up to two intervals apart, more when
    # the sampler waited for a CPU), the others only the few
    # microseconds from the spin's end to blocking again.
    i = next(k for k, (t, _, _) in enumerate(rs) if t > s1)
    gap_ns = (rs[i][0] - rs[i - 1][0]) * 1e6
    late = [c for t, _, c in rs[i + 1:]]
    check(rs[i][2] <= gap_ns + 1000 and sum(late) <= REAL_SLACK_NS,
          f"rt CPU after spun {[rs[i][2]] + late} (the first "
          f"{gap_ns:.0f} ns after the sample before it)")
    print("test_gecko_samples real: ok")


def main():
    mode, prof, expect = sys.argv[1], sys.argv[2], sys.argv[3]
    exp = dict(line.split(" ", 1) for line in
               open(expect).read().splitlines())
    if mode == "real":
        p = load(prof)
        check_no_js(p)
        check_real(p, exp)
        return
    lib = exp["lib"]
    p = load(prof)
    check_no_js(p)
    meta = p["meta"]
    check(meta.get("sampleUnits") == {"time": "ms", "eventDelay": "ms",
                                      "threadCPUDelta": "ns"},
          f"sampleUnits {meta.get('sampleUnits')}")
    check(meta["presymbolicated"] is (mode != "nosym"),
          f"presymbolicated {meta['presymbolicated']}")
    if mode == "multi":
        check(len(p["processes"]) == 1, "multi: one sub-process")
        check("sampleUnits" not in p["processes"][0]["meta"],
              "sub-process meta has sampleUnits")
        proc = p["processes"][0]
        top = threads_by_name(p)
        check("threadCPUDelta" not in top["GeckoMain"]["samples"]["schema"],
              "plain dump's main thread has threadCPUDelta")
    else:
        proc = p
    th = threads_by_name(proc)
    check(set(th) == {"GeckoMain", "worker", "Audio", "quiet",
                      "rtprof sampler", "lost", "cxx"}, f"threads {set(th)}")

    symbolized = mode not in ("nosym", "nofile", "mismatch")
    outer = f"gs_outer (in {lib})"
    inner = f"gs_inner (in {lib})"

    # Events dropped at the source: a marker where they are missing.
    dropped = [m for m in markers(th["worker"]) if m["name"] == "Dropped events"]
    check(len(dropped) == 1 and dropped[0]["start"] == 2.5 and
          dropped[0]["end"] == 3.5 and dropped[0]["phase"] == 1 and
          dropped[0]["data"] == {"type": "rtprof.Dropped", "full": 5,
                                 "nested": 2}, f"dropped markers {dropped}")
    check(any(s["name"] == "rtprof.Dropped" for s in meta["markerSchema"]),
          "no rtprof.Dropped schema")
    # ... and counted per thread in the gathering log: the worker's 5 + 2,
    # no other thread's.
    log = proc["profileGatheringLog"]
    drops = {t["tid"]: (t["droppedFull"], t["droppedNested"])
             for t in log["threads"]}
    check(drops == {100: (0, 0), 101: (5, 2), 102: (0, 0), 103: (0, 0),
                    104: (0, 0), 105: (0, 0), 106: (0, 0)},
          f"gathering log drops per tid {drops}")

    # C++ names are demangled.
    cx = stacks(p, th["cxx"])
    if symbolized:
        want = [f"rtprof_test::Mixer::process(int) (in {lib})"]
        check(locs(cx[0][1]) == want, f"cxx stack {cx[0][1]}")

    # Worker: exact stacks, merge order kept, CPU deltas, idle leaf, SAME.
    w = th["worker"]
    check_tables_unique(w)
    ws = stacks(p, w)
    times = [x[0] for x in ws]
    check(times == [1, 2, 3, 4, 5, 6, 7], f"worker times {times}")
    check([x[2] for x in ws] == [0, 500000, 250000, 0, 1000, 6000, 7000],
          f"worker threadCPUDelta {[x[2] for x in ws]}")
    if symbolized:
        a = [outer, "frame loop", inner]
        b = [outer, "frame loop", "process block"]
        check(locs(ws[0][1]) == a, f"worker stack 0 {ws[0][1]}")
        check(locs(ws[2][1]) == b, f"worker stack 2 {ws[2][1]}")
    else:
        # Hex, the absolute addresses as recorded.
        check(ws[0][1][0][0].startswith("0x") and
              ws[0][1][2][0] == exp["inner"],
              f"unsymbolized worker stack {ws[0][1]}")
        check(ws[0][1][1][0] == "frame loop", "label between natives")
        check(locs(ws[2][1])[1:] == ["frame loop", "process block"],
              f"worker stack 2 {ws[2][1]}")
    sch = w["samples"]["schema"]
    rows = w["samples"]["data"]
    check(rows[0][sch["stack"]] == rows[1][sch["stack"]] ==
          rows[5][sch["stack"]] == rows[6][sch["stack"]],
          "identical samples do not share a stack index")
    check(rows[4][sch["stack"]] == rows[2][sch["stack"]],
          "SAME does not repeat the previous SAMPLE's stack")
    check(locs(ws[3][1]) == locs(ws[2][1]), "asleep SAME: other frames")
    cats = [[c for _, c, _ in x[1]] for x in ws]
    check(cats[3][-1] == "Idle" and "Idle" not in cats[3][:-1],
          f"asleep SAME: leaf category {cats[3]}")
    check(all("Idle" not in c for i, c in enumerate(cats) if i != 3),
          f"awake samples in Idle {cats}")
    check(cats[0][1] == "User" and cats[0][0] == "Other",
          f"label / native categories {cats[0]}")
    # One frame row per (location, category): the idle leaf is its own.
    nfr = len(w["frameTable"]["data"])
    check(nfr == 5, f"worker: {nfr} frame rows, want 5 (outer, label, "
          "inner, label, idle label)")
    check(len(w["stackTable"]["data"]) == 5,
          f"worker: {len(w['stackTable']['data'])} stacks, want 5")
    if symbolized and mode != "stripped":
        line = {x[0]: x[2] for x in ws[0][1]}
        check(isinstance(line[inner], int) and line[inner] > 0,
              f"no line for {inner}")
        check(isinstance(line[outer], int) and line[outer] > 0,
              f"no line for {outer}")
    if mode == "stripped":
        check(all(x[2] is None for x in ws[0][1]), "lines without debug info")

    # Main (GeckoMain): the same address as a return address (looked up at
    # address - 1) and as the interrupted pc; natives that stay hex.
    m = th["GeckoMain"]
    ms = stacks(p, m)
    check(len(ms) == 2, f"main samples {len(ms)}")
    if symbolized:
        check(locs(ms[0][1])[1:] == [inner, "frame loop"],
              f"main stack 0 {ms[0][1]}")
        check(ms[0][1][0][0] != inner,
              f"a return address was not looked up at address - 1: "
              f"{ms[0][1]}")
    check(locs(ms[1][1]) == [LIBFAKE_ADDR, NOWHERE_ADDR],
          f"hex natives {ms[1][1]}")
    check([x["name"] for x in markers(m)] == ["start"], "main markers")

    # Real-time thread: label-only samples, one with no label at all; then
    # asleep ones, not Idle inside the "Audio callback" (3.5..5.5 ms, its
    # first and last ticks included), Idle outside (3 and 6 ms).
    rs = stacks(p, th["Audio"])
    check([locs(x[1]) for x in rs] == [["process block"]] +
          [["(no label)"]] * 7, f"audio stacks {rs}")
    got = [(x[0], x[1][-1][1]) for x in rs[2:]]
    check(got == [(3, "Idle"), (3.5, "Other"), (4, "Other"), (5, "Other"),
                  (5.5, "Other"), (6, "Idle")],
          f"audio samples around its callback 3.5..5.5 ms: {got}")

    # SAME with no previous SAMPLE: "(unknown stack)", Idle when asleep.
    ls = stacks(p, th["lost"])
    check([x[1] for x in ls] == [[("(unknown stack)", "Other", None)],
                                 [("(unknown stack)", "Idle", None)]],
          f"lost stacks {ls}")

    # Placeholders only for threads without sampler samples.
    for name in ("quiet", "rtprof sampler"):
        t = th[name]
        check("threadCPUDelta" not in t["samples"]["schema"],
              f"{name}: placeholder samples with threadCPUDelta")
        qs = stacks(p, t)
        check(all(locs(x[1]) == [name] for x in qs),
              f"{name}: placeholder stacks {qs}")
    q = stacks(p, th["quiet"])
    check([(x[0], x[1][0][1]) for x in q] ==
          [(0, "Other"), (2, "Idle"), (3, "Other")], f"quiet samples {q}")
    for name in ("GeckoMain", "worker", "Audio", "lost"):
        check("threadCPUDelta" in th[name]["samples"]["schema"],
              f"{name}: no threadCPUDelta")

    # The sampler's overhead markers: one per window of at most 100 ms
    # (the two ticks, 1-1.02 and 2-2.01 ms, share one), with the ticks'
    # count, sums and longest tick; no graph (a marker track would show
    # while the sampler thread is hidden).
    om = markers(th["rtprof sampler"])
    check([(x["name"], x["phase"], x["start"], x["end"]) for x in om] ==
          [("Profiler overhead", 1, 1, 2.01)], f"overhead markers {om}")
    check(om[0]["data"] == {"type": "ProfilerOverhead", "total": 37000,
                            "ticks": 2, "max": 24000, "lock": 3000,
                            "threads": 30000, "counters": 4000,
                            "nthreads": 3},
          f"overhead data {om[0]['data']}")
    cats = [c["name"] for c in p["meta"]["categories"]]
    check(cats[om[0]["category"]] == "Profiler", "overhead category")
    schema = {s["name"]: s for s in meta["markerSchema"]}
    ov = schema.get("ProfilerOverhead")
    check(ov is not None, "no ProfilerOverhead schema")
    check({f.get("key") for f in ov["data"]} >=
          {"ticks", "max", "lock", "threads", "counters", "nthreads"},
          "overhead fields")
    check(not ov.get("graphs"), "overhead graph: a track always shown")
    so = log["samplerOverhead"]
    check(so["ticks"] == 2 and so["totalNs"] == 37000 and
          so["meanNsPerTick"] == 18500 and so["maxNsPerTick"] == 24000,
          f"overhead summary {so}")
    check(log["sampler"]["samples"] == 13 and
          log["sampler"]["sameStack"] == 7 and
          log["sampler"]["sameStackUnknown"] == 2,
          f"sampler log {log['sampler']}")
    sym = log["symbolication"]
    check(sym["ran"] is (mode != "nosym"), f"symbolication {sym}")
    if mode == "nofile":
        check(any("gecko_samples_gen" in x and "not usable" in x
                  for x in sym["moduleProblems"]), f"no file: {sym}")
    if mode == "mismatch":
        # Reported with both build ids; the file is not used at all.
        want = (f"{SYSROOT_PATH}: build id mismatch: dump {exp['buildid']}, "
                "file ")
        bad = [x for x in sym["moduleProblems"] if x.startswith(want)]
        check(len(bad) == 1, f"mismatch not reported: {sym}")
        fbid = bad[0][len(want):-len(" (not used)")]
        check(bad[0].endswith(" (not used)") and fbid != exp["buildid"] and
              fbid == exp.get("fakebid", fbid), f"mismatch line {bad[0]}")
        check(sym["resolved"] == 0 and sym["addresses"] > 0,
              f"mismatch: addresses resolved {sym}")
    if not symbolized:
        # Never a name for a native frame: every one is a hex address, the
        # program's inside its libs entry (the front-end can look it up).
        lo, hi = int(exp["start"]), int(exp["end"])
        for t in proc["threads"]:
            for x in t["stringTable"]:
                check("(in " not in x, f"{t['name']}: a native name {x!r}")
        for x in ws:
            for loc, _, line in x[1]:
                check(not loc.startswith("0x") or lo <= int(loc, 16) < hi,
                      f"worker address {loc} outside the program")
                check(line is None, f"worker {loc}: line {line}")

    # Counter 65534: the process's resident memory.
    ctr = {c["name"]: c for c in proc["counters"]}
    pm = ctr.get("Process memory")
    check(pm is not None, f"counters {set(ctr)}")
    check(pm["category"] == "Memory", "process memory category")
    sc = pm["samples"]["schema"]
    # A 0 1 us before the first level (the front-end zeroes the first
    # change: the first level is kept), the changes, and a 0 at the end
    # (the last level lasts to the end of the recording).
    rows = [(r[sc["time"]], r[sc["count"]]) for r in pm["samples"]["data"]]
    check([c for _, c in rows] == [0, 10000000, 2000000, 0] and
          [round(t, 6) for t, _ in rows[:3]] == [1.019, 1.02, 2.01] and
          rows[3][0] > 2.01, f"process memory {pm['samples']['data']}")

    # libs: the program and the fake library, so hex addresses can be
    # looked up.
    libs = proc["libs"]
    check(any(l["name"] == lib for l in libs), "program not in libs")
    # The program's entry is the dump's MODULES entry, whatever file the
    # converter found (or not) for it: its breakpad id is the dump's build
    # id (first 16 bytes as a GUID, first three fields byte-swapped, age 0).
    bid = bytes.fromhex(exp["buildid"])[:16].ljust(16, b"\0")
    guid = bid[3::-1] + bid[5:3:-1] + bid[7:5:-1] + bid[8:]
    path = SYSROOT_PATH if mode in ("nofile", "sysroot", "stripped",
                                    "debugdir", "mismatch") else exp["exe"]
    mine = [l for l in libs if l["path"] == path]
    check(len(mine) == 1 and mine[0]["name"] == lib and
          mine[0]["start"] == int(exp["start"]) and
          mine[0]["end"] == int(exp["end"]) and
          mine[0]["offset"] == int(exp["offset"]) and
          mine[0]["debugPath"] == path and
          mine[0]["breakpadId"] == guid.hex().upper() + "0",
          f"program's libs entry {mine}")
    check(any(l["name"] == "libfake.so" and l["start"] == 0x7e0000000000
              for l in libs), "libfake.so not in libs")
    print(f"test_gecko_samples {mode}: ok")


if __name__ == "__main__":
    main()
