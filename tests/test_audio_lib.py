"""Checks of the audio callback API's view in a converted profile, shared by
test_audio_demo.py (the demo) and test_jack.py (the JACK client).

rtprof_audio_begin/end (rt/rtprof.h) record, per callback:
- an "Audio callback" interval marker {frames, budget (ms) = frames / rate,
  used (ms), load = used / budget} (load is a ratio: its schema format is
  "percentage", which the front-end shows times 100 with a "%");
- when used > budget, an "Audio overrun" marker with the same start and
  end {count (1, 2, ...), budget, used, over = used - budget} and the
  "NAME overruns" counter + 1;
- the "NAME load" counter: round(load * 1000) (per mille), set at the end;
- the "NAME jitter" counter: this start minus the previous start minus the
  previous callback's period, in microseconds (truncated), set at the begin
  from the second callback on.
The converter writes one value per change (an equal value is dropped), in
milliseconds with 6 decimals, so every check below allows the rounding.

Every function fails the test (gecko_testlib.fail, exit 1) with a message.
"""

import bisect
import sys

from gecko_testlib import check, markers

# Times and ms fields carry 6 decimals (1 ns).
EPS_MS = 2e-6


def schemas(p):
    """meta.markerSchema by name."""
    return {s["name"]: s for s in p["meta"].get("markerSchema", [])}


def values_at(ctr, times):
    """The counter's value (a step function) at each of @times: what its
    graph shows then. The converter drops a value equal to the previous
    one, so per-callback values come from here, not from the samples
    (a run of equal values is one sample)."""
    ts, vs = ctr
    out = []
    for t in times:
        k = bisect.bisect_right(ts, t) - 1
        out.append(vs[k] if k >= 0 else None)
    return out


def check_schemas(p):
    """The two marker types are declared with their fields and formats."""
    sc = schemas(p)
    check("Audio callback" in sc and "Audio overrun" in sc,
          f"no audio marker schemas in {sorted(sc)}")
    cb = {f["key"]: f.get("format") for f in sc["Audio callback"]["data"]
          if "key" in f}
    check(cb == {"frames": "integer", "budget": "milliseconds",
                 "used": "milliseconds", "load": "percentage"},
          f"Audio callback fields {cb}")
    ov = {f["key"]: f.get("format") for f in sc["Audio overrun"]["data"]
          if "key" in f}
    check(ov == {"count": "integer", "budget": "milliseconds",
                 "used": "milliseconds", "over": "milliseconds"},
          f"Audio overrun fields {ov}")


def counter_graph(p, name):
    """Counter @name as written for the Firefox Profiler: its marker schema
    "rtprof.counter.NAME" (with a graph of "value", so a track of the
    values themselves) and its markers on any thread, each the level from
    its start to its end. Returns (schema, [(start, end, value)]) sorted
    by start; (None, []) when absent."""
    schema = schemas(p).get(f"rtprof.counter.{name}")
    rows = []
    for pr in [p] + p.get("processes", []):
        for th in pr["threads"]:
            for m in markers(th):
                d = m["data"]
                if m["name"] == name and d and \
                        d.get("type") == f"rtprof.counter.{name}":
                    rows.append((m["start"], m["end"], d["value"]))
    return schema, sorted(rows)


# A counter's unit -> (Gecko format, scale of the value shown).
UNIT_FORMATS = {"permille": ("percentage", 1e-3), "us": ("microseconds", 1),
                "": ("integer", 1)}


def counters(p, site):
    """The site's three counters {what: (times, values)} as recorded (the
    shown value divided by the unit's scale), checked to be in the profile
    as graphs of their values: a schema with a graph of "value" in the
    unit's format, category Audio, a description, >= 1 value, levels that
    follow each other (each ends where the next starts)."""
    units = {"load": "permille", "jitter": "us", "overruns": ""}
    cats = {i: c["name"] for i, c in enumerate(p["meta"]["categories"])}
    out = {}
    for what, unit in units.items():
        name = f"{site} {what}"
        schema, rows = counter_graph(p, name)
        check(schema is not None, f"counter {name!r}: no graph schema")
        check([g["key"] for g in schema.get("graphs", [])] == ["value"],
              f"counter {name!r}: graphs {schema.get('graphs')}")
        fmt, scale = UNIT_FORMATS[unit]
        fields = {f["key"]: f["format"] for f in schema["data"] if "key" in f}
        check(fields == {"value": fmt},
              f"counter {name!r}: fields {fields}, want value as {fmt}")
        check(bool(schema.get("description")), f"counter {name!r}: no description")
        check(len(rows) >= 1, f"counter {name!r}: no values (no graph)")
        for (s0, e0, _), (s1, _, _) in zip(rows, rows[1:]):
            check(abs(e0 - s1) <= EPS_MS,
                  f"counter {name!r}: level ends at {e0}, next starts at {s1}")
        ts = [r[0] for r in rows]
        vs = [round(r[2] / scale) for r in rows]
        out[what] = (ts, vs)
    return out


def check_callbacks(cbs, frames=None, rate=None):
    """Every callback marker's fields: frames (when given), budget =
    frames / rate, load = used / budget, used = its duration."""
    check(cbs, "no Audio callback markers")
    for m in cbs:
        d = m["data"]
        check(d is not None and d.get("type") == "Audio callback",
              f"callback marker without its data: {m}")
        f = d["frames"]
        if frames is not None:
            check(f == frames, f"callback at {m['start']:.3f}: frames {f}, "
                  f"want {frames}")
        if rate is not None:
            want = f * 1000.0 / rate
            check(abs(d["budget"] - want) <= EPS_MS,
                  f"callback at {m['start']:.3f}: budget {d['budget']} ms, "
                  f"want frames / rate = {want:.6f}")
        check(d["budget"] > 0, f"callback at {m['start']:.3f}: budget "
              f"{d['budget']}")
        check(d["used"] >= 0, f"callback at {m['start']:.3f}: used "
              f"{d['used']}")
        want = d["used"] / d["budget"]
        check(abs(d["load"] - want) <= 2e-6 + 1e-6 * want,
              f"callback at {m['start']:.3f}: load {d['load']}, want "
              f"used / budget = {want:.6f} ({want * 100:.4f} %)")
        # used is the marker's own duration (the converter's tick rate
        # may differ from the one rtprof_audio_init read: 16 ppm seen,
        # 130 under TSan on a loaded machine; the clock's calibration is
        # held to 1e-3 by test_threadview).
        check(abs((m["end"] - m["start"]) - d["used"]) <=
              3 * EPS_MS + 1e-3 * d["used"],
              f"callback at {m['start']:.3f}: used {d['used']} ms, marker "
              f"lasts {m['end'] - m['start']:.6f} ms")


def check_overruns(cbs, ovs):
    """Overrun markers: one for each callback over its budget, none for
    the others, same start and end, count 1, 2, ... in order,
    over = used - budget. Returns the callbacks that overran."""
    key = {(round(m["start"], 6), round(m["end"], 6)): m for m in cbs}
    over_cbs = [m for m in cbs if m["data"]["used"] > m["data"]["budget"]]
    check(len(ovs) == len(over_cbs),
          f"{len(ovs)} overrun markers for {len(over_cbs)} callbacks with "
          "used > budget")
    for i, m in enumerate(sorted(ovs, key=lambda m: m["start"])):
        d = m["data"]
        check(d is not None and d.get("type") == "Audio overrun",
              f"overrun marker without its data: {m}")
        cb = key.get((round(m["start"], 6), round(m["end"], 6)))
        check(cb is not None, f"overrun at {m['start']:.6f}-{m['end']:.6f} "
              "is not a callback's interval")
        c = cb["data"]
        check(d["count"] == i + 1, f"overrun #{i + 1} at {m['start']:.3f} "
              f"has count {d['count']}")
        check(abs(d["budget"] - c["budget"]) <= EPS_MS and
              abs(d["used"] - c["used"]) <= EPS_MS,
              f"overrun at {m['start']:.3f}: budget/used {d['budget']}/"
              f"{d['used']}, its callback's {c['budget']}/{c['used']}")
        check(d["used"] > d["budget"], f"overrun at {m['start']:.3f}: used "
              f"{d['used']} <= budget {d['budget']}")
        check(abs(d["over"] - (d["used"] - d["budget"])) <= 3 * EPS_MS,
              f"overrun at {m['start']:.3f}: over {d['over']}, want used - "
              f"budget = {d['used'] - d['budget']:.6f}")
    return over_cbs


# Besides the audio thread's own records, a counter's values come from
# snapshots that are not stamped when they were read: the sampler's
# (core/sampler.c sample_counters, every tick: stamped before it reads
# /proc/self/statm and then the counters, so a value set meanwhile shows
# up to that read's duration early, before the record that set it; seen
# 53 us) and the writer's VALUES frames (core/writer.c add_values, at most
# every 100 ms: stamped after the snapshot, so an older value shows after
# the record that replaced it; seen once in 1300 values). The converter
# keeps one value per change, so the record itself may be dropped as equal
# to the early snapshot. A value that is not its callback's must be one of
# a callback within this window, and they must be few (10%).
SNAPSHOT_WINDOW_MS = 50.0
# How early a sampler's snapshot may be stamped (its /proc read).
EARLY_MS = 5.0


def _other_match(want_of, times, i, t, v, tol):
    """Whether v is the value of a callback near t (a VALUES snapshot)."""
    lo = bisect.bisect_left(times, t - SNAPSHOT_WINDOW_MS)
    hi = bisect.bisect_right(times, t + SNAPSHOT_WINDOW_MS)
    return any(abs(v - want_of(k)) <= tol for k in range(max(lo, 1), hi)
               if k != i)


def _check_snapshots(what, n, total):
    print(f"test_audio_lib: {n} of {total} {what} values from a snapshot",
          file=sys.stderr)
    check(n <= 2 + 0.1 * total,
          f"{n} of {total} {what} values are another callback's than the "
          "last one's: more than the snapshots explain (seen: 2%)")


def _has_value(ts, vs, t0, t1, want, tol):
    """Whether the counter has the value @want (+-tol) from t0 (or a
    snapshot's earliness before it) to t1."""
    j = bisect.bisect_left(ts, t0 - EARLY_MS)
    while j < len(ts) and ts[j] < t1 + EPS_MS:
        if abs(vs[j] - want) <= tol:
            return True
        j += 1
    return False


def check_load_counter(cbs, load, start=None):
    """Each load value (after the first callback) is round(load * 1000) of
    the callback that ended last before it, and every callback whose load
    differs from the previous one's by 2 per mille or more has its value.
    Returns the values (per mille) matched to callbacks."""
    ts, vs = load
    ends = [m["end"] for m in cbs]
    got = []
    snaps = 0

    def want_of(k):
        return cbs[k]["data"]["used"] / cbs[k]["data"]["budget"] * 1000.0

    for t, v in zip(ts, vs):
        i = bisect.bisect_right(ends, t + EPS_MS) - 1
        if i < 0 and (v == 0 or t < ends[0] - EARLY_MS):
            # The value at the session's start (a snapshot's may be
            # early, see above).
            check(v == 0, f"load {v} at {t:.3f}, before any callback ended")
            continue
        i = max(i, 0)
        if start is not None and t < start:
            continue
        want = want_of(i)
        if abs(v - want) > 1.0 and _other_match(want_of, ends, i, t, v, 1.0):
            snaps += 1
            continue
        check(abs(v - want) <= 1.0,
              f"load counter {v} per mille at {t:.6f}, the callback that "
              f"ended at {ends[i]:.6f} had {want:.1f}")
        got.append(v)
    _check_snapshots("load", snaps, len(ts))
    for i in range(1, len(cbs)):
        a = cbs[i - 1]["data"]["load"] * 1000.0
        b = cbs[i]["data"]["load"] * 1000.0
        if abs(a - b) < 2.0 or (start is not None and cbs[i]["end"] < start):
            continue
        nxt = cbs[i + 1]["end"] if i + 1 < len(cbs) else float("inf")
        check(_has_value(ts, vs, cbs[i]["end"], nxt, b, 1.0),
              f"no load value for the callback ending at {cbs[i]['end']:.6f} "
              f"(load {b:.0f} per mille, previous {a:.0f})")
    return got


def check_jitter_counter(cbs, jitter, period_ms, start=None):
    """Each jitter value is the start-to-start interval of the callback that
    started last before it, minus the period, in us (+-2); every callback
    whose interval differs from the previous one's by 3 us or more has its
    value. Returns [(callback index, jitter us)]."""
    ts, vs = jitter
    starts = [m["start"] for m in cbs]
    period_us = period_ms * 1000.0
    got = []
    snaps = 0

    def want_of(k):
        return (starts[k] - starts[k - 1]) * 1000.0 - period_us

    for t, v in zip(ts, vs):
        i = bisect.bisect_right(starts, t + EPS_MS) - 1
        if i < 1 and (v == 0 or len(starts) < 2 or
                      t < starts[1] - EARLY_MS):
            check(v == 0, f"jitter {v} at {t:.3f}, before a second callback")
            continue
        i = max(i, 1)
        if start is not None and t < start:
            continue
        want = want_of(i)
        # The converter's tick rate may differ from rtprof_audio_init's by
        # some ppm (16-19 seen, 130 under TSan; calibration held to 1e-3):
        # a long stall's jitter shows it.
        tol = 2.0 + 1e-3 * abs(want + period_us)
        if abs(v - want) > tol and _other_match(want_of, starts, i, t, v, tol):
            snaps += 1
            continue
        check(abs(v - want) <= tol,
              f"jitter counter {v} us at {t:.6f}: the callback starting at "
              f"{starts[i]:.6f} came {want + period_us:.1f} us after the "
              f"previous one, jitter {want:.1f} us")
        got.append((i, v))
    _check_snapshots("jitter", snaps, len(ts))
    prev = None
    for i in range(1, len(cbs)):
        want = (starts[i] - starts[i - 1]) * 1000.0 - period_us
        if prev is not None and abs(want - prev) >= 3.0 and \
                (start is None or starts[i] >= start):
            nxt = starts[i + 1] if i + 1 < len(cbs) else float("inf")
            # The same tolerance as above: a long stall's value carries
            # the difference of the two tick rates.
            tol = 2.0 + 1e-3 * abs(want + period_us)
            near = [(round(t, 3), v) for t, v in zip(ts, vs)
                    if starts[i] - 1.0 <= t <= nxt + 1.0]
            check(_has_value(ts, vs, starts[i], nxt, want, tol),
                  f"no jitter value for the callback starting at "
                  f"{starts[i]:.6f} (jitter {want:.0f} us +-{tol:.1f}, "
                  f"previous {prev:.0f}; values near it {near})")
        prev = want
    return got


def check_overrun_counter(over_cbs, overruns):
    """The overruns counter counts 1, 2, ... one step at each overrun's end."""
    ts, vs = overruns
    steps = [(t, v) for t, v in zip(ts, vs) if v != 0]
    check([v for _, v in steps] == list(range(1, len(over_cbs) + 1)),
          f"overrun counter values {[v for _, v in steps][:10]}, want 1.."
          f"{len(over_cbs)}")
    for (t, v), m in zip(steps, over_cbs):
        check(m["end"] - EARLY_MS <= t < m["end"] + 5.0,
              f"overrun counter reached {v} at {t:.6f}, overrun #{v} ended "
              f"at {m['end']:.6f}")
