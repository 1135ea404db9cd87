#!/usr/bin/env python3
"""test_zones.py - zones, text markers, flows, frame marks and declared categories
(rtprof.h's last section) recorded by zones_rec, converted by msgpack2gecko, checked in
the profile the Firefox Profiler reads.

    test_zones.py ZONES_REC MSGPACK2GECKO SRC_TESTS WORKDIR

What zones_rec records is listed at its top. What was seen in the front-end (validate-gecko,
screenshot-gecko, profiler df31314) and is asserted here:
  - the marker chart draws each zone, text and flow marker in its category's colour (the
    schemas' colorField: DSP magenta, Disk brown -> orange), frames green or red;
  - the marker table's details column shows a zone's text and value, a text marker's text,
    "flow 0x..." for flow markers, "frame N: duration" for frames;
  - searching a flow id in the marker table lists that flow's markers of the thread;
  - each frame set is a track of its own under the thread ("audio block", "video": the
    Frame schema's graphs, drawn only for marker names whose every marker has both graph
    keys), slow frames as red bars, the others green.
"""
import os
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gecko_check  # noqa: E402
from gecko_testlib import check, fail, load, markers  # noqa: E402


def by_name(ms, name):
    return [m for m in ms if m["name"] == name]


def one(ms, name):
    got = by_name(ms, name)
    check(len(got) == 1, f"{len(got)} markers named {name!r}, want 1")
    return got[0]


def cat_names(profile):
    return [c["name"] for c in profile["meta"]["categories"]]


def check_categories(profile):
    cats = profile["meta"]["categories"]
    names = cat_names(profile)
    for name, color in (("DSP", "magenta"), ("Disk", "brown")):
        check(names.count(name) == 1, f"category {name!r} {names.count(name)} times: {names}")
        check(cats[names.index(name)]["color"] == color,
              f"category {name!r} colour {cats[names.index(name)]['color']}, want {color}")
    # "Audio" declared again is the built-in one: no second entry.
    check(names.count("Audio") == 1, f"'Audio' {names.count('Audio')} times")


def check_zone(m, cat, names, text=None, value=None, number=None, color=None):
    d = m["data"] or {}
    check(m["phase"] == 1 and m["end"] >= m["start"],
          f"zone {m['name']!r}: phase {m['phase']} {m['start']}..{m['end']}")
    check(d.get("type") == "Zone", f"zone {m['name']!r} type {d.get('type')!r}")
    check(names[m["category"]] == cat, f"zone {m['name']!r} category {names[m['category']]}")
    check(d.get("text") == text, f"zone {m['name']!r} text {d.get('text')!r}, want {text!r}")
    check(d.get("value") == value, f"zone {m['name']!r} value {d.get('value')!r}")
    check(d.get("number") == number, f"zone {m['name']!r} number {d.get('number')!r}")
    if color is not None:
        check(d.get("color") == color, f"zone {m['name']!r} color {d.get('color')!r}")
    check("unfinished" not in d, f"zone {m['name']!r} marked unfinished")


def check_zones(ms, names):
    proc = one(ms, "process")
    check_zone(proc, "DSP", names, text="file-7.wav", value=42, color="magenta")
    for inner in ("inner", "named_function"):
        z = one(ms, inner)
        check_zone(z, "User", names, color="blue")
        check(proc["start"] <= z["start"] and z["end"] <= proc["end"],
              f"{inner} {z['start']}..{z['end']} not inside process "
              f"{proc['start']}..{proc['end']}")
    steps = sorted(by_name(ms, "step"), key=lambda m: m["start"])
    check(len(steps) == 2, f"{len(steps)} 'step' zones, want 2")
    a, b = steps
    for z in steps:
        check_zone(z, "Disk", names, color="orange")
    # Overlapping zones of one name: the first begun ended first. Pairing ends by name
    # (the latest open begin) would have made b end before a.
    check(a["start"] < b["start"] < a["end"] < b["end"],
          f"step zones {a['start']}..{a['end']} and {b['start']}..{b['end']}: "
          "ends not paired with their own begins")
    check_zone(one(ms, "gain"), "Audio", names, number=0.25, color="red")
    check_zone(one(ms, "c scope"), "Compute", names, text="z" * 255)
    never = one(ms, "never ends")
    d = never["data"]
    check(never["phase"] == 1 and "unfinished" in d and never["end"] >= never["start"],
          f"'never ends' zone: {never}")
    last = max(m["end"] if m["end"] is not None else m["start"] for m in ms)
    check(never["end"] == last, f"unfinished zone ends at {never['end']}, the thread at {last}")


def check_texts(ms, names):
    op = one(ms, "open")
    check(op["phase"] == 0 and op["data"] == {"type": "Text", "text": "/tmp/a file.wav",
                                              "color": "orange"}, f"'open' text marker: {op}")
    check(names[op["category"]] == "Disk", "'open' not in Disk")
    lg = one(ms, "long")
    check(lg["data"].get("text") == "y" * 255,
          f"long text kept {len(lg['data'].get('text', ''))} bytes, want 255")
    ld = one(ms, "load")
    check(ld["phase"] == 1 and ld["end"] > ld["start"] and ld["data"]["text"] == "plugin.so",
          f"'load' text interval: {ld}")


def flow_ids(th, m):
    """(flow, flowEnd) ids of a marker, resolved through the thread's stringTable."""
    d = m["data"] or {}
    st = th["stringTable"]
    return (st[d["flow"]] if "flow" in d else None,
            st[d["flowEnd"]] if "flowEnd" in d else None)


def check_flows(main, worker, pid):
    mm, wm = markers(main), markers(worker)
    sent, result = by_name(mm, "job sent"), by_name(mm, "job result")
    jobs, done = by_name(wm, "job"), by_name(wm, "job done")
    check(len(sent) == len(result) == len(jobs) == len(done) == 3,
          f"flow markers: {len(sent)} sent, {len(jobs)} jobs, {len(done)} done, "
          f"{len(result)} results; want 3 each")
    ids = set()
    for s, j, d, r in zip(sent, jobs, done, result):
        fs, _ = flow_ids(main, s)
        fj, _ = flow_ids(worker, j)
        fd, _ = flow_ids(worker, d)
        _, fr = flow_ids(main, r)
        check(fs is not None and fs == fj == fd == fr,
              f"one job's flow ids differ: sent {fs}, job {fj}, done {fd}, result {fr}")
        check(int(fs, 16) >> 32 == pid, f"flow id {fs}: not this process's ({pid})")
        # Across threads, within the CPUs' clock skew (docs/wire-format.md: ~4 us seen).
        skew = 0.05
        check(s["start"] <= j["start"] + skew and j["start"] <= j["end"] <= d["start"] and
              d["start"] <= r["start"] + skew,
              f"flow {fs} out of order: sent {s['start']}, job {j['start']}..{j['end']}, "
              f"done {d['start']}, result {r['start']}")
        check(j["data"]["type"] == "Zone" and s["data"]["type"] == "Flow",
              "flow markers' types")
        ids.add(fs)
    check(len(ids) == 3, f"flow ids not distinct: {ids}")


def check_frames(ms, name, budget_ms, forced):
    fr = by_name(ms, name)
    check([m["data"]["number"] for m in fr] == list(range(1, len(fr) + 1)),
          f"{name}: frame numbers {[m['data']['number'] for m in fr]}")
    check(len(fr) in (12, 10), f"{name}: {len(fr)} frames")
    durs = [m["end"] - m["start"] for m in fr]
    med = statistics.median_low(durs)
    for k, m in enumerate(fr):
        d = m["data"]
        check(m["phase"] == 1 and abs(d["duration"] - durs[k]) < 1e-3,
              f"{name} frame {k + 1}: duration {d['duration']} vs {durs[k]}")
        if k:
            check(abs(m["start"] - fr[k - 1]["end"]) < 1e-6,
                  f"{name} frame {k + 1} starts at {m['start']}, the previous ended at "
                  f"{fr[k - 1]['end']}")
        slow = durs[k] > budget_ms if budget_ms else durs[k] > 1.5 * med
        check(d["color"] == ("red" if slow else "green") and
              (d["slow"] > 0) == slow and (d["ok"] > 0) == (not slow),
              f"{name} frame {k + 1} of {durs[k]:.3f} ms (budget {budget_ms}, median "
              f"{med:.3f}): {d}")
        check(d.get("budget") == budget_ms, f"{name} frame budget {d.get('budget')}")
    for k in forced:
        check(fr[k - 1]["data"]["color"] == "red", f"{name} frame {k} is not slow")


def check_schemas(profile):
    sch = {s["name"]: s for s in profile["meta"]["markerSchema"]}
    for name in ("Zone", "Text", "Flow", "Frame"):
        check(name in sch and sch[name].get("colorField") == "color",
              f"schema {name} missing or without colorField")
    fmts = {f["key"]: f["format"] for f in sch["Flow"]["data"] if "key" in f}
    check(fmts.get("flow") == "flow-id" and fmts.get("flowEnd") == "terminating-flow-id",
          f"Flow schema formats {fmts}")
    graphs = [(g["key"], g["color"]) for g in sch["Frame"].get("graphs", [])]
    check(graphs == [("ok", "green"), ("slow", "red")], f"Frame graphs {graphs}")


def main():
    if len(sys.argv) != 5:
        print(__doc__, file=sys.stderr)
        return 2
    rec, m2g, _src, work = sys.argv[1:]
    os.makedirs(work, exist_ok=True)
    dump, out = os.path.join(work, "zones.rtprof"), os.path.join(work, "zones.json")
    subprocess.run([rec, dump], check=True, timeout=120)
    subprocess.run([m2g, dump, "-o", out], check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
    profile = load(out)
    errors = [e for e in gecko_check.check(profile) if not e.startswith("warning:")]
    warnings = [e for e in gecko_check.check(profile) if e.startswith("warning:")]
    check(not errors and not warnings, f"gecko_check: {errors + warnings}")
    threads = {th["name"]: th for th in profile["threads"]}
    main_th, worker = threads.get("GeckoMain"), threads.get("worker")
    if main_th is None or worker is None:
        fail(f"threads {sorted(threads)}")
    names = cat_names(profile)
    ms = markers(main_th)
    check_categories(profile)
    check_schemas(profile)
    check_zones(ms, names)
    check_texts(ms, names)
    check_flows(main_th, worker, main_th["pid"] if isinstance(main_th["pid"], int)
                else int(main_th["pid"]))
    check_frames(ms, "audio block", 2.0, (5, 10))
    check_frames(ms, "video", None, (7,))
    log = profile["profileGatheringLog"]
    check(log.get("zoneRecordsWithoutBegin") == 1,
          f"zone records without begin: {log.get('zoneRecordsWithoutBegin')}, want 1 "
          "(zones_rec ends a zone nobody began)")
    print("test_zones: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
