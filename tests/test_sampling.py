"""Sampling that leaves the program alone (tests/sampling_target.c, sort).

    test_sampling.py RTPROF SAMPLING_TARGET MSGPACK2GECKO TESTS_DIR WORKDIR
                     NOPERF

Each case runs twice: with the default method (perf events where the
kernel allows them: the profile's meta says which) and with the signal
fallback forced (RTPROF_SAMPLER=signal). The program runs linked with
librtprof (RTPROF_FD: the main thread registered, the others registering
themselves) and under `rtprof record` (the preload library).

- sleep: sleep(2) lasts at least 2 s and at most 2.5 s; 350 short sleeps
  (usleep, the nanosleep system call, pselect, ppoll) between bursts of
  1 ms of CPU: no EINTR. With signals a sampled thread can see EINTR
  (inherent: not checked, said). Perf events: the main thread's samples
  while it slept are Idle and name run_sleep (the stack where it went off
  CPU), never a stack repeated across a wake-up.
- masked: two threads that block every signal: at least 95% of their
  samples on CPU have a native stack through masked_work (perf events).
  With signals, their samples say the signal was blocked (not counted as
  stacks).
- busy16: 16 busy threads on 2 CPUs: at least 95% of their samples on CPU
  have a native stack through busy_work (both methods).
- vdso: a thread reading its CPU clock every ~50 us shares CPU 0 with a
  hog: the share of its samples on CPU whose leaf is the clock read (the
  vDSO, or libc's clock_gettime) is within 2 points of its true share
  (4 above it; statistical spread aside)
  (perf events: time waiting for a CPU is not charged to where the thread
  was preempted; with signals the bias is inherent, not checked).
- sort: `rtprof record -- sort` of a 40 MB file exits 0 with the output
  sort gives alone, and its top functions are sort's and libc's, not the
  profiler's (both methods: sort installs its own SIGPROF handler).
- refused: where perf_event_open is refused (tests/noperf.c: a seccomp
  filter, as a container's default profile has), the program linked with
  librtprof says so once on its stderr, with the reason and what allows
  it, and falls back to signals; under `rtprof record` the launcher says
  it once for the whole run and the processes stay quiet. The profile's
  gathering log says "signal" and why. RTPROF_SAMPLER=signal says nothing.
"""

import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, fail, load  # noqa: E402
from gecko_testlib import run_clean as run  # noqa: E402

RTPROF, TARGET, M2G, TESTS, WORK, NOPERF = sys.argv[1:7]
os.makedirs(WORK, exist_ok=True)




def record(mode, args, tag):
    """The program under `rtprof record`: (stdout, profile)."""
    out = os.path.join(WORK, f"{tag}.json.gz")
    r = run([RTPROF, "record", "-o", out, "--"] + args, mode)
    check(r.returncode == 0, f"{tag}: rtprof record exit {r.returncode}:"
          f" {r.stderr[-2000:]}")
    return r.stdout, load(out)


def linked(mode, args, tag):
    """The program linked with librtprof, RTPROF_FD: (stdout, profile)."""
    dump = os.path.join(WORK, f"{tag}.rtprof")
    out = os.path.join(WORK, f"{tag}.json.gz")
    with open(dump, "wb") as f:
        r = run(args, dict(mode, RTPROF_FD=str(f.fileno())),
                stdin=subprocess.DEVNULL, pass_fds=(f.fileno(),))
    check(r.returncode == 0, f"{tag}: exit {r.returncode}: {r.stderr[-2000:]}")
    c = run([M2G, dump, "-o", out], {})
    check(c.returncode == 0, f"{tag}: msgpack2gecko: {c.stderr[-2000:]}")
    return r.stdout, load(out)


def method(prof):
    """How the main process was sampled (its gathering log says)."""
    return prof.get("profileGatheringLog", {}).get("sampling", {}).get(
        "method")


class Samples:
    """A thread's samples: stacks (innermost first) and whether Idle."""

    def __init__(self, prof, th):
        cats = [c["name"] for c in prof["meta"]["categories"]]
        sch = th["samples"]["schema"]
        sk, ft, st = th["stackTable"], th["frameTable"], th["stringTable"]
        self.rows = []
        for row in th["samples"]["data"]:
            s = row[sch["stack"]]
            names, idle = [], False
            leaf = True
            while s is not None:
                srow = sk["data"][s]
                f = ft["data"][srow[sk["schema"]["frame"]]]
                if leaf:
                    idle = cats[f[ft["schema"]["category"]]] == "Idle"
                    leaf = False
                names.append(st[f[ft["schema"]["location"]]])
                s = srow[sk["schema"]["prefix"]]
            self.rows.append((names, idle, row[sch["time"]]))

    def oncpu(self):
        return [n for n, idle, _ in self.rows if not idle]

    def idle(self):
        return [n for n, idle, _ in self.rows if idle]


def threads_by_tid(prof):
    out = {}
    for th in prof["threads"]:
        out[int(th["tid"])] = th
    for p in prof.get("processes", []):
        for th in p["threads"]:
            out[int(th["tid"])] = th
    return out


def tids(stdout, word):
    return [int(l.split()[1]) for l in stdout.splitlines()
            if l.startswith(word + " ")]


def has(names, fn):
    return any(n.split(" ")[0] == fn for n in names)


def native_share(prof, stdout, word, fn, tag):
    ths = threads_by_tid(prof)
    total = good = 0
    for tid in tids(stdout, word):
        check(tid in ths, f"{tag}: thread {tid} not in the profile")
        for names in Samples(prof, ths[tid]).oncpu():
            total += 1
            good += has(names, fn)
    print(f"{tag}: {good} of {total} samples on CPU through {fn}")
    return good, total


def case_sleep(run_as, mode, tag):
    out, prof = run_as(mode, [TARGET, "sleep"], tag)
    vals = {l.split()[0]: l.split()[1:] for l in out.splitlines()}
    slept = float(vals["sleep2"][0])
    eintr = int(vals["eintr"][0])
    m = method(prof)
    print(f"{tag}: method {m}, sleep(2) took {slept:.3f} s, {eintr} EINTR")
    check(slept < 2.5, f"{tag}: sleep(2) took {slept} s")
    if m != "perf":
        print(f"{tag}: signals: EINTR is inherent, not checked")
        return
    check(slept >= 2.0, f"{tag}: sleep(2) ended early: {slept} s")
    check(eintr == 0, f"{tag}: {eintr} calls ended with EINTR")
    main = [th for th in prof["threads"] if th.get("isMainThread")] or \
        prof["threads"][:1]
    idle = Samples(prof, main[0]).idle()
    named = sum(has(n, "run_sleep") for n in idle)
    print(f"{tag}: {named} of {len(idle)} idle samples name run_sleep")
    check(len(idle) > 1000, f"{tag}: {len(idle)} idle samples")
    check(named >= 0.95 * len(idle), f"{tag}: idle samples without the"
          f" stack where it slept: {len(idle) - named}")


def case_masked(run_as, mode, tag):
    out, prof = run_as(mode, [TARGET, "masked"], tag)
    good, total = native_share(prof, out, "masked", "masked_work", tag)
    if method(prof) != "perf":
        print(f"{tag}: signals blocked: no native stacks expected")
        return
    check(total >= 400, f"{tag}: {total} samples for 800 ms of CPU")
    check(good >= 0.95 * total, f"{tag}: {good} of {total} with stacks")


def case_busy16(run_as, mode, tag):
    out, prof = run_as(mode, [TARGET, "busy16"], tag)
    good, total = native_share(prof, out, "busy", "busy_work", tag)
    check(total >= 16 * 150 / 2, f"{tag}: {total} samples for 2.4 s of CPU")
    check(good >= 0.95 * total, f"{tag}: {good} of {total} with stacks")


def in_call(names, lo, hi):
    """The leaf is the clock read: in the vDSO (named from the image the
    dump carries, or a raw address in its range) or libc's wrapper."""
    if names[0].endswith("(in linux-vdso.so.1)"):
        return True
    leaf = names[0].split(" ")[0]
    if leaf.startswith("0x") and lo <= int(leaf, 16) < hi:
        return True
    return leaf in ("__clock_gettime", "clock_gettime")


def case_vdso(run_as, mode, tag):
    out, prof = run_as(mode, [TARGET, "vdso"], tag)
    vals = {l.split()[0]: l.split()[1:] for l in out.splitlines()}
    lo, hi = int(vals["vdso-range"][0]), int(vals["vdso-range"][1])
    true = float(vals["vdso-share"][0])
    ths = threads_by_tid(prof)
    oncpu = Samples(prof, ths[tids(out, "clocker")[0]]).oncpu()
    share = sum(in_call(n, lo, hi) for n in oncpu) / max(1, len(oncpu))
    print(f"{tag}: clock read {share:.4f} of {len(oncpu)} samples,"
          f" true share {true:.4f}")
    if method(prof) != "perf":
        print(f"{tag}: signals: the bias to where a thread was preempted is"
              " inherent, not checked")
        return
    if os.environ.get("RTPROF_TEST_ASAN"):
        # ASan's clock_gettime interceptor and the instrumented loop change
        # both what the program measures and where its samples land.
        print(f"{tag}: AddressSanitizer build: the share is not checked")
        return
    check(len(oncpu) >= 450, f"{tag}: {len(oncpu)} samples for 900 ms")
    # The share of n samples spreads by sqrt(p(1-p)/n) (~0.009 for 450 at
    # 4%): 2 points was 2.2 of those, which an idle machine failed now
    # and then and a loaded one more often (0.0589 against 0.0388 at load
    # 18). Time waiting for a CPU charged to the clock read, the bias
    # checked here, would count the hog's whole share of CPU 0.
    # Above the true share, a few points more are allowed (0.04): with
    # another test on the other CPU the share came out 2.1-3.3 points
    # over (0.0599 against 0.0269 once in ~10 suites, ctest -j2): ~1 point
    # on average is the sampling's own kernel time at the clocker's context
    # switches, which mostly come at the end of a clock read (measured
    # against perf in RELIABILITY.md); the bias this case is about puts the
    # hog's half of CPU 0 on the clock read, ten times more.
    tol = 0.005 + 3.5 * math.sqrt(true * (1 - true) / len(oncpu))
    check(true - share <= max(0.02, tol) and
          share - true <= max(0.04, tol),
          f"{tag}: {share:.4f} vs {true:.4f} (tolerance {tol:.4f}; "
          "0.04 above)")


def make_big():
    path = os.path.join(WORK, "big.txt")
    if not os.path.exists(path) or os.path.getsize(path) < 40e6:
        import random
        rnd = random.Random(14)
        with open(path, "w") as f:
            while f.tell() < 40e6:
                f.write("".join(f"{rnd.getrandbits(40):x} line\n"
                                for _ in range(10000)))
    return path


def case_sort(mode, tag):
    big = make_big()
    want = os.path.join(WORK, "sorted-plain.txt")
    got = os.path.join(WORK, f"{tag}.txt")
    if not os.path.exists(want):
        subprocess.run(["sort", big, "-o", want], check=True,
                       env=dict(os.environ, LC_ALL="C"))
    out = os.path.join(WORK, f"{tag}.json.gz")
    r = run([RTPROF, "record", "-o", out, "--", "sort", big, "-o", got],
            dict(mode, LC_ALL="C"))
    check(r.returncode == 0, f"{tag}: sort under rtprof record exit"
          f" {r.returncode}: {r.stderr[-1000:]}")
    with open(want, "rb") as a, open(got, "rb") as b:
        check(a.read() == b.read(), f"{tag}: sort's output differs")
    prof = load(out)
    self_counts = {}
    total = native = 0
    for th in list(prof["threads"]) + [t for p in prof.get("processes", [])
                                       for t in p["threads"]]:
        if th["name"] == "rtprof sampler":
            continue
        for names in Samples(prof, th).oncpu():
            total += 1
            native += names[0] != "(no stack)" and "(no stack)" not in names
            self_counts[names[0]] = self_counts.get(names[0], 0) + 1
    top = sorted(self_counts.items(), key=lambda kv: -kv[1])[:5]
    print(f"{tag}: method {method(prof)}, {total} samples on CPU,"
          f" {native} with native frames; top {top}")
    check(total > 200, f"{tag}: {total} samples")
    check(native >= 0.95 * total, f"{tag}: {native} of {total} native")
    for name, _ in top:
        check("rtprof" not in name and "(no stack)" not in name,
              f"{tag}: the profiler's own frame {name} at the top")


def sampling_why(prof):
    return prof.get("profileGatheringLog", {}).get("sampling", {}).get(
        "why", "")


def said(stderr):
    return [l for l in stderr.splitlines() if "sampling with signals" in l]


def case_refused():
    dump = os.path.join(WORK, "refused.rtprof")
    out = os.path.join(WORK, "refused.json.gz")
    with open(dump, "wb") as f:
        r = run([NOPERF, TARGET, "busy16"], {"RTPROF_FD": str(f.fileno())},
                pass_fds=(f.fileno(),))
    check(r.returncode == 0, f"refused: exit {r.returncode}: {r.stderr}")
    lines = said(r.stderr)
    print(f"refused (linked): {lines}")
    check(len(lines) == 1 and "seccomp" in lines[0],
          f"refused: want one line naming seccomp, got {r.stderr!r}")
    c = run([M2G, dump, "-o", out], {})
    check(c.returncode == 0, f"refused: msgpack2gecko: {c.stderr}")
    prof = load(out)
    check(method(prof) == "signal" and "seccomp" in sampling_why(prof),
          f"refused: the profile says {method(prof)}: {sampling_why(prof)}")
    check(prof["meta"].get("rtprofSampling", {}).get("method") == "signal",
          f"refused: meta says {prof['meta'].get('rtprofSampling')}")
    out = os.path.join(WORK, "refused-record.json.gz")
    r = run([NOPERF, RTPROF, "record", "-o", out, "--", TARGET, "busy16"], {})
    check(r.returncode == 0, f"refused record: exit {r.returncode}")
    lines = said(r.stderr)
    print(f"refused (record): {lines}")
    check(len(lines) == 1 and lines[0].startswith("rtprof record:"),
          f"refused record: want one line from the launcher: {r.stderr!r}")
    check(method(load(out)) == "signal", "refused record: not signal")
    with open(dump, "wb") as f:
        r = run([NOPERF, TARGET, "busy16"], {"RTPROF_SAMPLER": "signal",
                "RTPROF_FD": str(f.fileno())}, pass_fds=(f.fileno(),))
    check(said(r.stderr) == [], f"RTPROF_SAMPLER=signal: {r.stderr!r}")


def main():
    t0 = time.monotonic()
    case_refused()
    for mname, mode in (("default", {}),
                        ("signal", {"RTPROF_SAMPLER": "signal"})):
        for rname, run_as in (("linked", linked), ("record", record)):
            tag = f"{mname}-{rname}"
            case_sleep(run_as, mode, f"sleep-{tag}")
            case_masked(run_as, mode, f"masked-{tag}")
            case_busy16(run_as, mode, f"busy16-{tag}")
            case_vdso(run_as, mode, f"vdso-{tag}")
        case_sort(mode, f"sort-{mname}")
    print(f"test_sampling: ok ({time.monotonic() - t0:.0f} s)")


if __name__ == "__main__":
    main()
