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
- The DSP stages' labels (mix, filter, reverb under "process") appear in
  the audio thread's samples (a real-time thread: label-only samples).
"""

import sys

from gecko_testlib import check, load, markers


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
    check(audio is not None and audio["name"] == "jack client",
          "no 'jack client' thread with the callbacks")
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
    check(len(xr) == out["jack_xruns"],
          f"{len(xr)} JACK xrun markers, the client counted {out['jack_xruns']}")

    # Light phases: one callback per period (+-5%), no overrun.
    for a, b, name in phases:
        if name != "phase light":
            continue
        n = sum(1 for t in cbs if a <= t < b)
        want = (b - a) / period
        check(abs(n - want) <= 0.05 * want,
              f"light phase {a:.0f}-{b:.0f} ms: {n} callbacks, want {want:.0f}")
        # jackd runs without real-time priority on a shared machine: a
        # light callback preempted for a period really is late. A few of
        # those are tolerated (0.5%), not a pattern.
        bad = [o for o in ovs if a + period <= o[0] < b - period]
        check(len(bad) <= max(2, 0.005 * n),
              f"{len(bad)} overruns in a light phase of {n} callbacks: {bad[:3]}")

    # Heavy phase: the overruns, and JACK's xruns, are there and only there.
    ha, hb, _ = phases[1]
    heavy_cbs = sum(1 for t in cbs if ha <= t < hb)
    in_heavy = [o for o in ovs if ha - period <= o[0] <= hb + period]
    check(len(in_heavy) >= 0.8 * heavy_cbs,
          f"{len(in_heavy)} overruns for {heavy_cbs} heavy callbacks")
    # JACK also reports the cycle at which the client was activated and
    # the dummy driver's own lateness (jackd without real-time priority on
    # a shared machine): a few xruns outside the heavy phase, not caused
    # by the client, are tolerated.
    xr_heavy = [t for t in xr if ha - period <= t <= hb + 3 * period]
    xr_other = [t for t in xr if t not in xr_heavy]
    check(0 < len(xr_heavy) <= len(in_heavy),
          f"{len(xr_heavy)} JACK xruns in the heavy phase, {len(in_heavy)} overruns")
    light_cbs = len(cbs) - heavy_cbs
    check(len(xr_other) <= max(3, 0.01 * light_cbs),
          f"JACK xruns outside the heavy phase {ha:.0f}-{hb:.0f}: "
          f"{xr_other[:5]}")
    # The counts agree through JACK's own accounting: with the dummy
    # driver in synchronous mode, a run of back-to-back overrunning
    # callbacks gives one xrun per two callbacks (the late cycle is
    # skipped and the next one restarts from the late client).
    check(abs(2 * len(xr_heavy) - len(in_heavy)) <= max(4, 0.05 * len(in_heavy)),
          f"{len(xr_heavy)} JACK xruns for {len(in_heavy)} overruns in the "
          "heavy phase: not one per two")
    for t in xr_heavy:
        check(any(e - 2 * period <= t and e <= t + 1.0 for _, e in ovs) or
              any(s <= t <= e for s, e in ovs),
              f"JACK xrun at {t:.3f} ms without an rtprof overrun before it")

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
