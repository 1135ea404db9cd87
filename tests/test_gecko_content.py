#!/usr/bin/env python3
"""test_gecko_content.py - check the profile converted from gecko_rec's dump.

    python3 tests/test_gecko_content.py PROFILE.json[.gz]
    python3 tests/test_gecko_content.py --unique-strings PROFILE...

Asserts exactly what tests/gecko_rec.c records (keep the two in step):
markers (names, phases, ordered times, payload fields), counters, the
paused range, the GeckoMain thread labelled with the process name, the
exited worker's unregisterTime, the libs entries, and that no thread's
stringTable holds a string twice. --unique-strings checks only the
last, on any converted profile (every thread, sub-processes' too).
Standard library only.
"""
import re
import sys

from gecko_testlib import check, fail, load, markers
import test_audio_lib as al


def all_threads(p):
    """Every thread of @p, those of its sub-processes included."""
    out = list(p["threads"])
    for sub in p.get("processes", []):
        out += all_threads(sub)
    return out


def check_unique_strings(p, name):
    """The converter interns strings: each is in a thread's table once."""
    threads = all_threads(p)
    check(threads, f"{name}: no thread")
    for th in threads:
        st = th["stringTable"]
        if len(st) != len(set(st)):
            dup = sorted({s for s in st if st.count(s) > 1})
            fail(f"{name}: thread {th['name']!r} ({th['tid']}): "
                 f"stringTable repeats {dup[:5]}")


def main():
    if sys.argv[1] == "--unique-strings":
        for f in sys.argv[2:]:
            check_unique_strings(load(f), f)
        print("test_gecko_content: unique strings ok")
        return
    p = load(sys.argv[1])
    check_unique_strings(p, sys.argv[1])
    meta = p["meta"]
    check(meta["version"] == 36, "meta.version")
    # gecko_rec records without the sampler: the front-end's default.
    check(meta["interval"] == 1, f"interval {meta['interval']} != 1 ms")
    check(meta["product"] == "rtprof", "product")
    check(meta["presymbolicated"] is True, "presymbolicated")
    check("sampleUnits" not in meta, "sampleUnits without threadCPUDelta")
    check(meta["startTime"] > 1.5e12, "startTime not epoch ms")
    cats = [c["name"] for c in meta["categories"]]
    for c in ("Other", "Idle", "IO", "Compute", "User", "Profiler"):
        check(c in cats, f"category {c} missing")
    check(meta["categories"][cats.index("Idle")]["color"] == "transparent",
          "Idle colour")
    schemas = {s["name"]: s for s in meta["markerSchema"]}
    check("Load" in schemas and "rtprof.Paused" in schemas, "schemas")
    load_s = schemas["Load"]
    check([(f["key"], f["format"]) for f in load_s["data"]] == [
        ("count", "integer"), ("size", "bytes"), ("ratio", "percentage"),
        ("file", "file-path"), ("note", "string"), ("tag", "unique-string")],
        f"Load fields {load_s['data']}")
    check(load_s["display"] == ["marker-chart", "marker-table",
                                "timeline-overview"], "Load display")
    check(load_s["tooltipLabel"] == "Load {marker.data.file}", "tooltip")

    check(p["processes"] == [], "processes")
    threads = p["threads"]
    check(len(threads) == 2, f"{len(threads)} threads, want 2")
    main_t, worker = threads
    check(main_t["name"] == "GeckoMain", "main thread not GeckoMain")
    check(main_t["processName"] == "gecko_rec",
          f"processName {main_t['processName']!r}")
    check(main_t["tid"] == main_t["pid"], "main tid != pid")
    check(main_t["unregisterTime"] is None, "main unregistered")
    check(worker["name"] == "worker", "worker name")
    check(worker["pid"] == main_t["pid"], "worker pid")
    check(worker["unregisterTime"] is not None and
          worker["unregisterTime"] > worker["registerTime"] > 0,
          "worker register/unregister times")

    # Main thread markers, in time order; the paused mark never appears.
    # (Gauges are graphs of markers of their own: checked below.)
    m = [x for x in markers(main_t) if not (x["data"] and str(
        x["data"].get("type", "")).startswith("rtprof.counter."))]
    names = [(x["name"], x["phase"]) for x in m]
    check(names == [("start", 0), ("phase A", 1), ("compute", 1),
                    ("Load", 0), ("Load", 1), ("end", 0), ("Paused", 1)],
          f"main markers {names}")
    starts = [x["start"] for x in m[:-1]]
    check(starts == sorted(starts), "main markers not in time order")
    for x in m:
        if x["phase"] == 1:
            check(x["end"] >= x["start"], f"{x['name']}: end < start")
    check(cats[m[1]["category"]] == "IO", "phase A category")
    check(cats[m[2]["category"]] == "Compute", "compute category")
    check(cats[m[0]["category"]] == "User", "start category")
    st = main_t["stringTable"]
    d0, d1 = m[3]["data"], m[4]["data"]
    check(d0["type"] == "Load" and d0["count"] == 1 and d0["size"] == 4096
          and d0["ratio"] == 0.5 and d0["file"] == "/data/a.wav",
          f"Load instant payload {d0}")
    check(d0["note"] == 'bad \ufffd utf8 "q" \\', f"note {d0['note']!r}")
    check(st[d0["tag"]] == "tag-1", "unique-string tag is not an index")
    check(d1["count"] == 2 and d1["note"] == "ok", f"Load interval {d1}")
    check("hidden" not in st, "a marker recorded while paused appears")

    # Worker: its begin/end typed pair became one interval.
    w = markers(worker)
    check([(x["name"], x["phase"]) for x in w] ==
          [("worker start", 0), ("Load", 1)], f"worker markers {w}")
    check(w[1]["data"]["count"] == 7 and w[1]["data"]["note"] == "begun",
          f"worker Load payload {w[1]['data']}")
    check(worker["stringTable"][w[1]["data"]["tag"]] == "tag-1", "worker tag")
    check(w[1]["end"] <= worker["unregisterTime"], "worker marker after exit")

    # Placeholder samples: registration, then asleep (Idle), then awake.
    for th, nsleep in ((main_t, 1), (worker, 1)):
        ss = th["samples"]["schema"]
        rows = th["samples"]["data"]
        ft = th["frameTable"]
        stk = th["stackTable"]
        check("eventDelay" in ss, "eventDelay column")
        times = [r[ss["time"]] for r in rows]
        check(times == sorted(times), "sample times not sorted")
        cat_of = [cats[ft["data"][stk["data"][r[ss["stack"]]][1]][6]]
                  for r in rows]
        check(cat_of.count("Idle") == nsleep and cat_of[0] != "Idle" and
              cat_of[-1] != "Idle", f"{th['name']}: sample states {cat_of}")

    # Counters on the top level.
    ctr = {c["name"]: c for c in p["counters"]}
    check(set(ctr) == {"heap", "rtprof memory"},
          f"counters {set(ctr)}: only memory is a Gecko counter")

    def counts(name):
        c = ctr[name]["samples"]
        return [r[c["schema"]["count"]] for r in c["data"]]

    def ctimes(name):
        c = ctr[name]["samples"]
        return [r[c["schema"]["time"]] for r in c["data"]]

    # A gauge: a graph of the values set (3 then 5), each level lasting
    # until the next, the last one to the end of the recording.
    qs, qrows = al.counter_graph(p, "queue depth")
    check(qs is not None and qs.get("graphs", [{}])[0].get("key") == "value",
          f"queue depth graph schema {qs}")
    # (0 first when the writer reported the counter before it was set.)
    levels = [v for _, _, v in qrows]
    check(levels in ([3, 5], [0, 3, 5]), f"queue depth levels {qrows}")
    check(all(a[1] == b[0] for a, b in zip(qrows, qrows[1:])),
          f"queue depth steps {qrows}")
    check(qs["description"] == "items queued", "queue desc")
    # Memory: a 0 first (the front-end zeroes the first change), so the
    # first level is kept: the graph's running sum is the bytes recorded.
    check(counts("heap")[0] == 0 and sum(counts("heap")) == 1300,
          f"heap deltas {counts('heap')}")
    check(ctr["heap"]["category"] == "Memory", "heap category")
    check([x for x in counts("heap") if x != 0] == [1000, 500, -200],
          f"heap deltas {counts('heap')}")
    check(ctr["rtprof memory"]["category"] == "Memory", "self memory")
    check(sum(counts("rtprof memory")) > 0, "self memory running sum")
    for n in ctr:
        check(ctimes(n) == sorted(ctimes(n)), f"{n}: times not sorted")

    # The pause.
    pr = p["pausedRanges"]
    check(len(pr) == 1 and 0 < pr[0]["startTime"] < pr[0]["endTime"],
          f"pausedRanges {pr}")
    check(m[-1]["start"] == pr[0]["startTime"] and
          m[-1]["end"] == pr[0]["endTime"], "Paused marker != range")
    check(m[4]["end"] <= pr[0]["startTime"] <= worker["registerTime"],
          "pause not between the main markers and the worker")

    # libs: sorted, integer ranges, the test program itself among them.
    libs = p["libs"]
    check(libs, "no libs")
    check(any(l["name"] == "gecko_rec" and l["path"].endswith("/gecko_rec")
              for l in libs), "gecko_rec not in libs")
    for a, b in zip(libs, libs[1:]):
        check(a["end"] <= b["start"], "libs overlap or unsorted")
    for l in libs:
        check(all(isinstance(l[k], int) for k in ("start", "end", "offset")),
              "lib numbers")
        check(l["breakpadId"] == "" or
              re.fullmatch(r"[0-9A-F]{32}0", l["breakpadId"]),
              f"breakpadId {l['breakpadId']!r}")
        check(l["debugName"] == l["name"] and l["debugPath"] == l["path"],
              "debugName/debugPath")
    check(any(l["breakpadId"] for l in libs), "no build id at all")

    log = p["profileGatheringLog"]
    check(log["damageReports"] == 0 and log["damage"] == [], "damage")
    check(all(t.get("recordsMissing", 0) == 0 for t in log["threads"]),
          "records missing against the trailer")
    print("test_gecko_content: ok")


if __name__ == "__main__":
    main()
