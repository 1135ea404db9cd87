#!/usr/bin/env python3
"""test_gecko_samples.py - check the profiles converted from
gecko_samples_gen's dumps (keep in step with tests/gecko_samples_gen.c).

    python3 tests/test_gecko_samples.py MODE PROFILE.json EXPECT.txt

MODE: full (symbolized), nosym (--no-symbols), nofile (the program's
file is missing: its frames stay hex), sysroot (found under --sysroot),
stripped (no debug info: names but no lines), debugdir (lines again from
--debug-dir), multi (a sample-less dump first, then samples.rtprof).
Standard library only.
"""
import sys

from gecko_testlib import check, load, markers

LIBFAKE_ADDR = "0x7e0000000100"
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


def main():
    mode, prof, expect = sys.argv[1], sys.argv[2], sys.argv[3]
    exp = dict(line.split(" ", 1) for line in
               open(expect).read().splitlines())
    lib = exp["lib"]
    p = load(prof)
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
    check(set(th) == {"GeckoMain", "worker", "audio", "quiet",
                      "rtprof sampler", "lost", "cxx"}, f"threads {set(th)}")

    symbolized = mode not in ("nosym", "nofile")
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

    # Real-time thread: label-only samples, one with no label at all.
    rs = stacks(p, th["audio"])
    check([locs(x[1]) for x in rs] == [["process block"], ["(no label)"]],
          f"audio stacks {rs}")

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
    for name in ("GeckoMain", "worker", "audio", "lost"):
        check("threadCPUDelta" in th[name]["samples"]["schema"],
              f"{name}: no threadCPUDelta")

    # The sampler's overhead markers.
    om = markers(th["rtprof sampler"])
    check([(x["name"], x["phase"], x["start"], x["end"]) for x in om] ==
          [("Profiler overhead", 1, 1, 1.02),
           ("Profiler overhead", 1, 2, 2.01)], f"overhead markers {om}")
    check(om[0]["data"] == {"type": "ProfilerOverhead", "total": 24000,
                            "lock": 1000, "threads": 20000,
                            "counters": 3000, "nthreads": 3},
          f"overhead data {om[0]['data']}")
    check(om[1]["data"]["total"] == 13000, "second overhead total")
    cats = [c["name"] for c in p["meta"]["categories"]]
    check(cats[om[0]["category"]] == "Profiler", "overhead category")
    schema = {s["name"]: s for s in meta["markerSchema"]}
    ov = schema.get("ProfilerOverhead")
    check(ov is not None, "no ProfilerOverhead schema")
    check({f.get("key") for f in ov["data"]} >=
          {"lock", "threads", "counters", "nthreads"}, "overhead fields")
    check(ov.get("graphs") and ov["graphs"][0]["key"] == "total",
          "overhead graph")
    log = proc["profileGatheringLog"]
    so = log["samplerOverhead"]
    check(so["ticks"] == 2 and so["totalNs"] == 37000 and
          so["meanNsPerTick"] == 18500 and so["maxNsPerTick"] == 24000,
          f"overhead summary {so}")
    check(log["sampler"]["samples"] == 10 and
          log["sampler"]["sameStack"] == 4 and
          log["sampler"]["sameStackUnknown"] == 2,
          f"sampler log {log['sampler']}")
    sym = log["symbolication"]
    check(sym["ran"] is (mode != "nosym"), f"symbolication {sym}")
    if mode == "nofile":
        check(any("gecko_samples_gen" in x and "not found" in x
                  for x in sym["moduleProblems"]), f"no file: {sym}")

    # Counter 65534: the process's resident memory.
    ctr = {c["name"]: c for c in proc["counters"]}
    pm = ctr.get("Process memory")
    check(pm is not None, f"counters {set(ctr)}")
    check(pm["category"] == "Memory", "process memory category")
    sc = pm["samples"]["schema"]
    check([(r[sc["time"]], r[sc["count"]]) for r in pm["samples"]["data"]]
          == [(1.02, 10000000), (2.01, 2000000)],
          f"process memory {pm['samples']['data']}")

    # libs: the program and the fake library, so hex addresses can be
    # looked up.
    libs = proc["libs"]
    check(any(l["name"] == lib for l in libs), "program not in libs")
    check(any(l["name"] == "libfake.so" and l["start"] == 0x7e0000000000
              for l in libs), "libfake.so not in libs")
    print(f"test_gecko_samples {mode}: ok")


if __name__ == "__main__":
    main()
