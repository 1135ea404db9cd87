"""The sampler through the converter: the profile msgpack2gecko makes of a
test_sampler dump shows what the program did (issue: sampler, "Tests").

    test_sampler_profile.py PROFILE SLEEPY_ASLEEP_SHARE

- thread "chain": every sample inside chain_c has the stack
  ... chain_a, stage-a, chain_b, stage-b, chain_c (label frames merged at
  their place, native frames symbolized "name (in test_sampler_...)"), and
  the samples split 20/30/50% between chain_a/b/c within 6 points;
- thread "sleepy": threadCPUDelta (ns, meta.sampleUnits) sums to ~10% of
  its sampled wall time, and the share of its samples in the Idle category
  (a sample's category is its leaf frame's) is within 0.15 of the share
  of its samples taken while it slept by its own clock
  (SLEEPY_ASLEEP_SHARE, which test_sampler prints: "at the samples'
  times"; not the share of its wall time, which the ticks do not follow
  on a loaded machine: the sampler waits for a CPU when the thread does);
- thread "rt" (shown as "Audio RT: rt"): its stacks hold the label "rt-stage" and nothing native.
"""

import os
import re
import sys

from gecko_testlib import check, fail, load


def thread(p, name):
    for th in p["threads"]:
        if th["name"] == name:
            return th
    fail(f"no thread {name!r}")


def stacks(th):
    """Per sample: (time, [location strings root first], leaf category,
    cpu delta or None)."""
    st = th["stringTable"]
    ft = th["frameTable"]
    fs = ft["schema"]
    sk = th["stackTable"]
    ss = sk["schema"]
    sm = th["samples"]
    sms = sm["schema"]
    out = []
    for row in sm["data"]:
        s = row[sms["stack"]]
        locs = []
        leaf_cat = None
        while s is not None:
            srow = sk["data"][s]
            frow = ft["data"][srow[ss["frame"]]]
            if leaf_cat is None:
                leaf_cat = frow[fs["category"]]
            locs.append(st[frow[fs["location"]]])
            s = srow[ss["prefix"]]
        locs.reverse()
        cpu = row[sms["threadCPUDelta"]] if "threadCPUDelta" in sms else None
        out.append((row[sms["time"]], locs, leaf_cat, cpu))
    return out


# gcc's clones of a function (-O3: chain_a.constprop.0) are the function.
CLONE = re.compile(r"(\.(constprop|isra|part|cold)(\.\d+)?)+$")


def fname(loc):
    """'chain_a (in test_sampler_fp)' -> 'chain_a'; a clone's suffix goes."""
    i = loc.find(" (in ")
    return CLONE.sub("", loc[:i] if i >= 0 else loc)


def main():
    p = load(sys.argv[1])
    meta = p["meta"]
    check(meta.get("sampleUnits", {}).get("threadCPUDelta") == "ns",
          f"sampleUnits {meta.get('sampleUnits')}")
    check(meta.get("presymbolicated") is True, "not presymbolicated")
    cats = [c["name"] for c in meta["categories"]]
    idle = cats.index("Idle")

    # chain: order and split.
    smp = stacks(thread(p, "chain"))
    split = [0, 0, 0]
    ordered = inc = 0
    for _, locs, _, _ in smp:
        names = [fname(x) for x in locs]
        where = [names.index(n) if n in names else -1
                 for n in ("chain_a", "stage-a", "chain_b", "stage-b",
                           "chain_c")]
        if where[4] >= 0:
            split[2] += 1
            inc += 1
            if all(w >= 0 for w in where) and where == sorted(where):
                ordered += 1
            elif inc - ordered <= 3:
                print("out of order:", " > ".join(names), file=sys.stderr)
        elif where[2] >= 0:
            split[1] += 1
        elif where[0] >= 0:
            split[0] += 1
    tot = sum(split)
    print(f"chain: {len(smp)} samples, split {split}, in order "
          f"{ordered}/{inc}", file=sys.stderr)
    check(tot > 300, f"only {tot} chain samples with native frames")
    # Under TSan a signal waits for its next safe point: skewed.
    for got, want, n in zip(split, (0.2, 0.3, 0.5), "abc"):
        check(abs(got / tot - want) < 0.06 or "RTPROF_TEST_TSAN" in os.environ,
              f"chain_{n}: {got / tot:.3f} of the samples, want {want}")
    check(ordered >= 0.95 * inc, f"only {ordered} of {inc} in order")
    check(any("(in test_sampler_" in x for _, locs, _, _ in smp
              for x in locs), "native frames not named 'f (in lib)'")

    # sleepy: CPU share and idle samples.
    smp = stacks(thread(p, "sleepy"))
    check(all(c is not None for _, _, _, c in smp), "no threadCPUDelta")
    wall_ns = (smp[-1][0] - smp[0][0]) * 1e6
    cpu = sum(c for _, _, _, c in smp[1:])
    idle_share = sum(1 for _, _, c, _ in smp if c == idle) / len(smp)
    print(f"sleepy: cpu {cpu / wall_ns:.3f} of wall, idle samples "
          f"{idle_share:.3f} (taken while it slept, by its own clock: "
          f"{sys.argv[2]})",
          file=sys.stderr)
    check(0.08 < cpu / wall_ns < 0.12, f"sleepy CPU {cpu / wall_ns:.3f}")
    # Under TSan everything is slower and ticks bunch up (as in
    # test_sampler): only "mostly idle" there.
    own = float(sys.argv[2])
    if "RTPROF_TEST_TSAN" in os.environ:
        check(idle_share > 0.3, f"sleepy idle samples {idle_share:.3f}")
    else:
        check(abs(idle_share - own) < 0.15,
              f"sleepy idle samples {idle_share:.3f}, {own:.3f} taken "
              "while it slept by its own clock")

    # rt: labels only.
    smp = stacks(thread(p, "Audio RT: rt"))   # real-time: shown as Audio
    check(any(locs == ["rt-stage"] for _, locs, _, _ in smp),
          "rt samples lack the label")
    check(not any("(in " in x for _, locs, _, _ in smp for x in locs),
          "rt thread has native frames")
    print("test_sampler_profile: ok", file=sys.stderr)


main()
