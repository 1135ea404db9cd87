"""The JACK client's profile (test_jack.sh): callbacks, overruns, labels.

    test_jack.py PROFILE CLIENT_OUTPUT

- Callback markers: in each light phase, as many as its duration times
  rate / frames (+-5%); none missing or extra overall against the client's
  own count.
- Overruns ("Audio overrun" markers, used > frames / rate): only in the
  heavy phase (its start to its end plus one period), and most heavy
  callbacks are overruns; none in the light phases.
- JACK's own xruns (its xrun callback, recorded as "JACK xrun" markers):
  during the heavy phase at least one, each explained by an rtprof
  overrun that ended at most two periods before it; outside it at most 3
  or 1% of the light callbacks (the activation cycle, the driver's own
  lateness on a loaded machine). JACK counts a
  late cycle, and after one the dummy driver restarts its cycle from the
  late client, so a run of back-to-back overruns gives fewer JACK xruns
  than overruns (about half here): the check is that every JACK xrun is an
  rtprof overrun and that there are no more of them than overruns.
- Frame marks and zones on a real server: the "JACK period" frames (one
  mark per callback, at its start) are the callbacks' start-to-start
  intervals, one fewer than the callbacks, each red exactly when longer
  than its budget (1.5 periods); in the light phases their median is the
  period within 5 %. Each callback holds its stages' zones (mix, filter,
  reverb, in that order, inside the callback; mix carries the buffer
  size).
- The DSP stages' labels (mix, filter, reverb under "process") appear in
  the audio thread's samples (a real-time thread: label-only samples).
- The audio view's values (test_audio_lib.py): every callback marker's
  frames (the client's buffer size), budget = frames / rate, load = used /
  budget (a ratio, shown as % by its "percentage" format), used = its
  duration; an overrun marker for exactly the callbacks over budget, same
  interval, count 1, 2, ..., over = used - budget; the "jack load",
  "jack jitter" and "jack overruns" counters in the profile as graphs,
  each value that of its callback (load per mille, jitter = start-to-start
  minus the period in us, overruns the running count). In the light
  phases: the callbacks' median load 5-30 % (they burn 10 %), and the
  start-to-start interval (period + the jitter graph's value at each
  callback) is the period: its median within 5 %, its mean too over the
  cycles the driver did not skip (those are excused above).
"""

import statistics
import sys

from gecko_testlib import check, load, markers
import test_audio_lib as al


def check_frames_zones(am, cbm, phases, period, frames):
    """The "JACK period" frames and the stage zones against the callbacks."""
    fr = sorted((m for m in am if m["name"] == "JACK period"),
                key=lambda m: m["start"])
    check(len(fr) == len(cbm) - 1,
          f"{len(fr)} JACK period frames for {len(cbm)} callbacks")
    for i, (f, a, b) in enumerate(zip(fr, cbm, cbm[1:])):
        # The mark is taken just before the callback's start: after the
        # previous callback ended and not after this one started (an
        # order, not a time: under a sanitizer on a loaded machine the
        # client can be preempted between the two).
        before = cbm[i - 1]["end"] if i > 0 else 0.0
        check(before <= f["start"] <= a["start"] and
              a["end"] <= f["end"] <= b["start"],
              f"frame {f['start']:.3f}..{f['end']:.3f} vs callbacks at "
              f"{a['start']:.3f}..{a['end']:.3f} and {b['start']:.3f} "
              f"(previous ended {before:.3f})")
        d = f["data"]
        check((d["color"] == "red") == (d["duration"] > d["budget"]) and
              abs(d["budget"] - 1.5 * period) < 1e-3,
              f"frame {d}: red is over its budget, 1.5 periods of {period:.4f} ms")
    for a, b, name in phases:
        if name == "phase light":
            durs = [f["end"] - f["start"] for f in fr
                    if a + 2 * period <= f["start"] < b - 2 * period]
            med = statistics.median(durs)
            check(abs(med - period) <= 0.05 * period,
                  f"light phase: median frame {med:.4f} ms, period {period:.4f}")
    zones = sorted((m for m in am if m["name"] in ("mix", "filter", "reverb")),
                   key=lambda m: m["start"])
    check(len(zones) == 3 * len(cbm), f"{len(zones)} stage zones for "
          f"{len(cbm)} callbacks")
    for k, cb in enumerate(cbm):
        z = zones[3 * k:3 * k + 3]
        check([m["name"] for m in z] == ["mix", "filter", "reverb"] and
              all(cb["start"] <= m["start"] <= m["end"] <= cb["end"] for m in z)
              and z[0]["data"].get("value") == frames,
              f"callback {cb['start']:.3f}..{cb['end']:.3f}: zones {z}")


def main():
    p = load(sys.argv[1])
    out = dict()
    words = open(sys.argv[2]).read().split()
    for k, v in zip(words[0::2], words[1::2]):
        out[k] = float(v)
    rate, frames = out["rate"], out["frames"]
    period = frames / rate * 1000.0

    allm = []
    audio = None
    for th in p["threads"]:
        ms = markers(th)
        allm += ms
        if any(m["name"] == "Audio callback" for m in ms):
            audio = th      # JACK's process thread
    # Registered real-time: named for the front-end's audio-thread rule.
    check(audio is not None and audio["name"] == "Audio RT: jack client",
          "no 'Audio RT: jack client' thread with the callbacks")
    phases = sorted((m["start"], m["end"], m["name"]) for m in allm
                    if m["name"] in ("phase light", "phase heavy"))
    check([x[2] for x in phases] == ["phase light", "phase heavy",
                                     "phase light"], f"phases {phases}")
    cbs = sorted(m["start"] for m in allm if m["name"] == "Audio callback")
    ovs = sorted((m["start"], m["end"]) for m in allm
                 if m["name"] == "Audio overrun")
    xr = sorted(m["start"] for m in allm if m["name"] == "JACK xrun")
    print(f"test_jack: {len(cbs)} callbacks, {len(ovs)} overruns, "
          f"{len(xr)} JACK xruns, phases {[(round(a), round(b)) for a, b, _ in phases]}",
          file=sys.stderr)
    check(len(cbs) == out["callbacks"],
          f"{len(cbs)} callback markers, the client counted {out['callbacks']}")
    check(len(ovs) == out["overruns"],
          f"{len(ovs)} overrun markers, the client counted {out['overruns']}")

    # A machine whose timers wake late (seen: an idle Firecracker guest
    # whose wake-ups came 6-17 us late, so jackd's dummy driver reported
    # an xrun of its own every few cycles, with no client overrun near)
    # cannot run this test: the xrun and overrun counts then measure the
    # host, not rtprof. Skip (77) with the figures rather than pass or
    # fail on them; the exact marker counts above were checked.
    ha, hb, _ = phases[1]
    own = [x for x in xr if not ha - period <= x <= hb + 3 * period and
           not any(o[0] - 2 * period <= x <= o[1] + 2 * period
                   for o in ovs)]
    light_n = sum(1 for t in cbs if not ha <= t < hb)
    if len(own) > max(3, 0.02 * light_n):
        print(f"test_jack: SKIPPED: jackd's driver reported {len(own)} "
              f"xruns of its own in the light phases ({light_n} "
              "callbacks): this machine's timers are too late for JACK",
              file=sys.stderr)
        sys.exit(77)
    check(len(xr) == out["jack_xruns"],
          f"{len(xr)} JACK xrun markers, the client counted {out['jack_xruns']}")

    # Light phases: one callback per period (+-5%), no overrun.
    driver_skips = 0
    for a, b, name in phases:
        if name != "phase light":
            continue
        inside = [t for t in cbs if a <= t < b]
        n = len(inside)
        want = (b - a) / period
        # Cycles the driver itself skipped (jackd's dummy driver on a
        # VM whose vCPU the host takes away: seen on an idle guest, 10-40%
        # of a phase, each time with JACK xruns) show as gaps of several
        # periods between callback starts; rtprof lost no marker (the
        # client's own count matched above). The time is covered when the
        # callbacks plus the skipped cycles make the phase.
        skipped = sum(max(0, round((y - x) / period) - 1)
                      for x, y in zip(inside, inside[1:]))
        driver_skips += skipped
        xr_in = sum(1 for x in xr if a <= x < b)
        print(f"test_jack: light phase {a:.0f}-{b:.0f} ms: {n} callbacks, "
              f"{skipped} cycles skipped by the driver, {xr_in} JACK xruns",
              file=sys.stderr)
        check(abs(n + skipped - want) <= 0.05 * want,
              f"light phase {a:.0f}-{b:.0f} ms: {n} callbacks and "
              f"{skipped} skipped cycles, want {want:.0f}")
        check(skipped <= 0.05 * want or xr_in > 0,
              f"light phase {a:.0f}-{b:.0f} ms: {skipped} cycles skipped "
              "without a JACK xrun")
        # jackd runs without real-time priority on a shared machine: a
        # light callback preempted for a period really is late. Those
        # that JACK itself saw as an xrun within two periods (the whole
        # process was starved: CI saw 5 in 538 while compiling beside
        # it) are excused; of the others a few are tolerated (2%: an idle
        # Firecracker guest still showed 3-4 light callbacks in ~400
        # taking 3 to 50 ms, its vCPU away), not a pattern: in the heavy
        # phase nearly every callback overruns.
        late = [o for o in ovs if a + period <= o[0] < b - period]
        bad = [o for o in late
               if not any(o[0] - 2 * period <= x <= o[1] + 2 * period
                          for x in xr)]
        print(f"test_jack: light phase {a:.0f}-{b:.0f} ms: {len(late)} "
              f"overruns, {len(late) - len(bad)} at a JACK xrun",
              file=sys.stderr)
        check(len(bad) <= max(3, 0.02 * n),
              f"{len(bad)} overruns in a light phase of {n} callbacks, "
              f"not at a JACK xrun: {bad[:3]}")

    # Heavy phase: the overruns, and JACK's xruns, are there and only there.
    ha, hb, _ = phases[1]
    heavy_cbs = sum(1 for t in cbs if ha <= t < hb)
    in_heavy = [o for o in ovs if ha - period <= o[0] <= hb + period]
    check(len(in_heavy) >= 0.8 * heavy_cbs,
          f"{len(in_heavy)} overruns for {heavy_cbs} heavy callbacks")
    # JACK also reports the cycle at which the client was activated and
    # the dummy driver's own lateness (a VM whose vCPU the host takes
    # away: an idle Firecracker guest showed dozens in the light phases,
    # with every light callback on time): outside the heavy phase only
    # the xruns at a client overrun would be the client's, and those are
    # the light overruns already limited above.
    xr_heavy = [t for t in xr if ha - period <= t <= hb + 3 * period]
    xr_other = [t for t in xr if t not in xr_heavy]
    check(0 < len(xr_heavy) <= len(in_heavy),
          f"{len(xr_heavy)} JACK xruns in the heavy phase, {len(in_heavy)} overruns")
    light_cbs = len(cbs) - heavy_cbs
    xr_client = [x for x in xr_other
                 if any(o[0] - 2 * period <= x <= o[1] + 2 * period
                        for o in ovs)]
    print(f"test_jack: {len(xr_other)} JACK xruns outside the heavy phase, "
          f"{len(xr_client)} at a client overrun", file=sys.stderr)
    check(len(xr_client) <= max(3, 0.02 * light_cbs),
          f"JACK xruns at client overruns outside the heavy phase "
          f"{ha:.0f}-{hb:.0f}: {xr_client[:5]}")
    # The counts agree through JACK's own accounting: with the dummy
    # driver in synchronous mode, a run of back-to-back overrunning
    # callbacks gives one xrun per two callbacks (the late cycle is
    # skipped and the next one restarts from the late client).
    # On a loaded machine jackd reports some of the heavy phase's xruns
    # late, in the light phase after it (21 of 104 seen beside two CPU
    # hogs, with no cycle skipped there): then all of JACK's xruns but
    # those of cycles its driver skipped are the client's.
    xr_client_all = len(xr) - driver_skips
    check(any(abs(2 * x - len(in_heavy)) <= max(4, 0.05 * len(in_heavy))
              for x in (len(xr_heavy), xr_client_all)),
          f"{len(xr_heavy)} JACK xruns in the heavy phase ({xr_client_all} "
          f"of all but the driver's {driver_skips} skipped cycles) for "
          f"{len(in_heavy)} overruns: not one per two")
    for t in xr_heavy:
        check(any(e - 2 * period <= t and e <= t + 1.0 for _, e in ovs) or
              any(s <= t <= e for s, e in ovs),
              f"JACK xrun at {t:.3f} ms without an rtprof overrun before it")

    # The audio view: counters as graphs, per phase ranges (raw values),
    # then every field and value against its callback.
    al.check_schemas(p)
    am = markers(audio)
    cbm = sorted((m for m in am if m["name"] == "Audio callback"),
                 key=lambda m: m["start"])
    ovm = [m for m in am if m["name"] == "Audio overrun"]
    check(len(cbm) == len(cbs) and len(ovm) == len(ovs),
          "audio markers on another thread than the process thread")
    ctr = al.counters(p, "jack")
    for a, b, name in phases:
        if name != "phase light":
            continue
        # Well inside the phase (the load share is switched by another
        # thread at the phase's edges).
        a2, b2 = a + 2 * period, b - 2 * period
        inside = [m for m in cbm if a2 <= m["start"] < b2]
        med = statistics.median(m["data"]["load"] for m in inside)
        # The jitter graph at each callback's end (set at its begin).
        iv = [period + v / 1000.0 for v in
              al.values_at(ctr["jitter"], [m["end"] for m in inside])]
        kept = [x for x in iv if x < 1.5 * period]
        med_iv = statistics.median(iv)
        mean_iv = statistics.mean(kept) if kept else float("nan")
        print(f"test_jack: {name} {a:.0f}-{b:.0f}: median load "
              f"{med * 100:.1f} %, interval median {med_iv * 1000:.1f} "
              f"us, mean {mean_iv * 1000:.1f} us over {len(kept)} of "
              f"{len(iv)} (period {period * 1000:.1f} us)", file=sys.stderr)
        check(0.05 <= med <= 0.3, f"{name} {a:.0f}-{b:.0f}: median load "
              f"{med * 100:.1f} %, the client burns 10 %")
        check(abs(med_iv - period) <= 0.05 * period,
              f"{name} {a:.0f}-{b:.0f}: median start-to-start "
              f"{med_iv * 1000:.1f} us, period {period * 1000:.1f} us")
        # Cycles the driver skipped (excused above) are left out of the
        # mean; they must be few.
        check(len(iv) - len(kept) <= max(3, 0.05 * len(iv)),
              f"{name} {a:.0f}-{b:.0f}: {len(iv) - len(kept)} of "
              f"{len(iv)} intervals of 1.5 periods or more")
        check(abs(mean_iv - period) <= 0.05 * period,
              f"{name} {a:.0f}-{b:.0f}: mean start-to-start "
              f"{mean_iv * 1000:.1f} us, period {period * 1000:.1f} us")
    check_frames_zones(am, cbm, phases, period, int(frames))
    al.check_callbacks(cbm, int(frames), int(rate))
    over = al.check_overruns(cbm, ovm)
    al.check_overrun_counter(over, ctr["overruns"])
    loads = al.check_load_counter(cbm, ctr["load"])
    check(len(loads) >= 2 and min(loads) >= 0,
          f"load counter values {loads[:10]}")
    al.check_jitter_counter(cbm, ctr["jitter"], period)

    # Labels of the DSP stages in the audio thread's (label-only) samples.
    st = audio["stringTable"]
    locs = {st[f[audio["frameTable"]["schema"]["location"]]]
            for f in audio["frameTable"]["data"]}
    for want in ("process", "mix", "filter", "reverb"):
        check(want in locs, f"label {want!r} not in the audio thread's "
              f"frames {sorted(locs)[:10]}")
    # A real-time thread: sampled from its labels, never interrupted, so
    # no native frame.
    natives = [x for x in locs if " (in " in x or x.startswith("0x")]
    check(not natives, f"native frames on the audio thread: {natives[:5]}")
    print("test_jack.py: ok", file=sys.stderr)


main()
