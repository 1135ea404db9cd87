"""Calls that block, under rtprof record (tests/record_blocking.c, make,
sleep): each shows as "Blocked" markers with the call's name and about the
time it blocked.

    test_record_blocking.py RTPROF RECORD_BLOCKING TESTS_DIR WORKDIR NOPERF

- `sleep 1` (coreutils: nanosleep or clock_nanosleep) and a C program's
  sleep(1) (glibc's sleep, which does not go through nanosleep's symbol):
  0.9-1.5 s blocked in one call.
- usleep, pthread_join, sem_timedwait, pselect and ppoll, waitpid, wait4
  and wait, each about 200 ms (150-1000 ms: a loaded machine) in its own
  call, with the stack where it blocked (the marker's cause).
- open() of a FIFO that its writer opens 200 ms later: an "open" marker of
  150 ms or more whose path is the FIFO's.
- make -j2 of a generated 4-file C project: make's own dump has pselect
  (its jobserver wait) and wait-family (wait, waitpid, wait4) blocked time.
- A program writing 600 kB through stdio into a pipe read slowly: stdio's
  write is glibc's own call, which no wrapper sees; when the sampler used
  perf events (`msgpack2gecko --info` says "sampling: perf"), the
  thread's off-CPU samples have the stack of that write (fputs ... write):
  at least 20 idle samples there (it waits about 0.7 s).
- `cat big | tr a-z A-Z | grep -c Z` (30 MB): samples inside a wrapped
  call end in a frame naming it, "read (on CPU)", "write (blocked)"...
  (then the kernel's reason, when known),
  right under the program's own frame (its caller in cat, tr, grep: not
  libc's side of the call, not the recorder); cat has both kinds, with
  perf events (on the signal path: blocked ones, whose stack is not
  known). In every profile this test records, no frame is librtprof's or
  librtprof-preload's, in samples or in `rtprof summarize`'s output.
- The kernel's reasons (record_blocking reasons): where the sampler took
  the kernel's stacks (the profile's meta rtprofSampling.kernelStacks),
  `rtprof summarize` groups time off CPU by reason: "pipe full" at the
  pipe write, "sleep" at the nanosleep, "futex" at the contended
  pthread_mutex_lock, 150 ms or more each (300 ms), and, when the fsync
  blocked 10 ms or more (its Blocked marker), "fsync" or "journal commit
  (fsync)" for at least 30% of it. The same program where perf_event_open
  is refused (tests/noperf): kernelStacks false, and summarize says no
  dump has the kernel's stacks and why (the seccomp filter).
"""
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, frames_of, load, markers  # noqa: E402
from summarize_testlib import parse_summary  # noqa: E402

RTPROF, PROG, SRC, DIR, NOPERF = sys.argv[1:6]
M2G = os.path.join(os.path.dirname(RTPROF), "msgpack2gecko")


TOOK = {}  # call -> ms, as the last recorded program measured it


def record(name, *cmd, stdout=subprocess.DEVNULL, status=0, wrap=()):
    out = os.path.join(DIR, name + ".json.gz")
    r = subprocess.run([*wrap, RTPROF, "record", "-o", out, "--", *cmd],
                       stdout=stdout, stderr=subprocess.PIPE, timeout=120,
                       cwd=DIR)
    check(r.returncode == status, f"{name}: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    TOOK.clear()
    for m in re.finditer(r"^record_blocking: took (\S+) ([0-9.]+)$",
                         r.stderr.decode(), re.M):
        TOOK[m.group(1)] = float(m.group(2))
    p = load(out)
    not_ours(name, p)
    return p


OWN = ("librtprof", "blk_end", "blk_begin", "backtrace_rec", "rtprof_pl_",
       "open_timed", "rtprof__")


def threads(p):
    return [th for pr in [p] + p.get("processes", []) for th in pr["threads"]]


def not_ours(name, p):
    """No frame of the recorder in any sample of @p, nor in summarize's
    report of its dumps (blocked time by call and stack, top functions)."""
    for th in threads(p):
        for stack in frames_of(th):
            bad = [f for f in stack if any(o in f for o in OWN)]
            check(not bad, f"{name}: {th['processName']}/{th['name']}: "
                  f"the recorder's frames {bad} in {stack}")
    d = os.path.join(DIR, name + ".rtprof.d")
    dumps = [os.path.join(d, f) for f in os.listdir(d)]
    s = subprocess.run([RTPROF, "summarize", *dumps], stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True,
                       timeout=120).stdout
    bad = [ln for ln in s.splitlines() if any(o in ln for o in OWN)]
    check(not bad, f"{name}: summarize shows the recorder: {bad}")


def blocked(p, calls):
    """Blocked markers of the profile's processes whose call is in
    @calls: [(call, ms, data)]."""
    out = []
    for pr in [p] + p.get("processes", []):
        for th in pr["threads"]:
            for m in markers(th):
                if m["name"] == "Blocked" and m["data"]["call"] in calls:
                    out.append((m["data"]["call"], m["end"] - m["start"],
                                m["data"]))
    return out


def one_long(name, p, calls, lo, hi, stack=True):
    """Exactly one call of @calls lasted lo..hi ms, with its stack; where
    the program said how long the call took by its own clock (TOOK), hi
    is that plus 10% (a loaded machine stretches a 200 ms wait: 1.1 s
    seen at load 16), and the marker at least 90% of it."""
    long = [b for b in blocked(p, calls) if b[1] >= lo * 0.5]
    own = TOOK.get(long[0][0]) if len(long) == 1 else None
    if own is not None:
        lo, hi = max(lo, own * 0.9 - 5), own * 1.1 + 5
    check(len(long) == 1 and lo <= long[0][1] <= hi,
          f"{name}: blocked calls {[(c, round(ms, 1)) for c, ms, _ in long]}"
          f", want one of {calls} of {lo:.1f}-{hi:.1f} ms (took {own})")
    if stack:
        check(long[0][2].get("cause") is not None,
              f"{name}: the {long[0][0]} marker has no stack: {long[0][2]}")
    return long[0]


def sleeps():
    p = record("sleep1", "sleep", "1")
    one_long("sleep 1", p, ("nanosleep", "clock_nanosleep"), 900, 1500)
    p = record("csleep", PROG, "sleep")
    one_long("sleep(1)", p, ("sleep",), 900, 1500)
    print("test_record_blocking: sleep 1 and sleep(1): 1 s blocked",
          file=sys.stderr)


def waits():
    for mode, calls in (("usleep", ("usleep",)), ("join", ("pthread_join",)),
                        ("sem", ("sem_timedwait",))):
        p = record(mode, PROG, mode)
        one_long(mode, p, calls, 150, 1000)
    p = record("pselect", PROG, "pselect")
    for call in ("pselect", "ppoll"):
        one_long("pselect", p, (call,), 150, 1000)
    p = record("wait", PROG, "wait")
    for call in ("waitpid", "wait4", "wait"):
        one_long("wait", p, (call,), 150, 1000)
    fifo = os.path.join(DIR, "fifo")
    p = record("fifo", PROG, "fifo", fifo)
    _, ms, data = one_long("fifo", p, ("open",), 150, 1000)
    check(data.get("path") == fifo, f"fifo: the open's path {data}")
    print("test_record_blocking: usleep, pthread_join, sem_timedwait, "
          "pselect, ppoll, waitpid, wait4, wait, open of a FIFO",
          file=sys.stderr)


def make():
    if shutil.which("make") is None or shutil.which("cc") is None:
        print("test_record_blocking: make: no make or cc, skipped",
              file=sys.stderr)
        return
    proj = os.path.join(DIR, "proj")
    os.makedirs(proj)
    for i in range(4):
        with open(os.path.join(proj, f"f{i}.c"), "w") as f:
            f.write("#include <stdio.h>\n")
            for k in range(60):
                f.write(f"int f{i}_{k}(int x) {{ char b[32]; return "
                        f"snprintf(b, sizeof b, \"%d\", x * {k}); }}\n")
    with open(os.path.join(proj, "Makefile"), "w") as f:
        f.write("all: f0.o f1.o f2.o f3.o\n%.o: %.c\n\tcc -O2 -c $< -o $@\n")
    r = subprocess.run([RTPROF, "record", "-o", os.path.join(DIR,
                        "make.json.gz"), "--", "make", "-s", "-j2", "-C",
                        proj], stderr=subprocess.PIPE, timeout=300)
    check(r.returncode == 0, f"make: exit {r.returncode}: {r.stderr}")
    not_ours("make", load(os.path.join(DIR, "make.json.gz")))
    main = os.path.join(DIR, "make.rtprof.d", "main.rtprof")
    s = subprocess.run([RTPROF, "summarize", main], stdout=subprocess.PIPE,
                       text=True, timeout=120).stdout
    total = {}
    for line in s.split("\n\n")[0].splitlines()[2:]:
        w = line.split()
        if len(w) == 5:
            total[w[0]] = float(w[2])
    waited = sum(total.get(c, 0) for c in ("wait", "waitpid", "wait4"))
    check(total.get("pselect", 0) > 10 and waited > 10,
          f"make -j2: blocked ms by call {total}")
    print(f"test_record_blocking: make -j2: pselect {total['pselect']:.0f} "
          f"ms, wait* {waited:.0f} ms", file=sys.stderr)


def stdio():
    out = os.path.join(DIR, "stdio.json.gz")
    p = subprocess.Popen([RTPROF, "record", "-o", out, "--", PROG, "stdio",
                          "3000"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    got = 0
    while True:
        b = p.stdout.read(4096)
        if not b:
            break
        got += len(b)
        time.sleep(0.005)
    err = p.stderr.read()
    check(p.wait(timeout=60) == 0 and got == 600000,
          f"stdio: exit {p.returncode}, {got} bytes: {err}")
    info = subprocess.run([M2G, "--info", os.path.join(
        DIR, "stdio.rtprof.d", "main.rtprof")], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True).stdout
    if "sampling: perf" not in info:
        print("test_record_blocking: stdio: sampled with signals, no "
              "off-CPU stacks to check", file=sys.stderr)
        return
    prof = load(out)
    not_ours("stdio", prof)
    th = next(t for t in prof["threads"] if t["name"] == "GeckoMain")
    sch, st = th["samples"]["schema"], th["stringTable"]
    ft, sk = th["frameTable"], th["stackTable"]
    idle = 0
    for row in th["samples"]["data"]:
        if (row[sch["threadCPUDelta"]] or 0) > 0:
            continue
        s, names = row[sch["stack"]], []
        while s is not None:
            srow = sk["data"][s]
            f = ft["data"][srow[sk["schema"]["frame"]]]
            names.append(st[f[ft["schema"]["location"]]].split(" ")[0])
            s = srow[sk["schema"]["prefix"]]
        # Innermost first: libc's write under stdio's fputs (under
        # the kernel's reason, when there is one).
        if names and names[0] == "kernel:":
            names = names[1:]
        if any("fputs" in n for n in names) and "write" in names[0]:
            idle += 1
    check(idle >= 20, f"stdio: {idle} idle samples in stdio's write")
    print(f"test_record_blocking: stdio into a slow pipe: {idle} idle "
          "samples with the write's stack", file=sys.stderr)


CALL_FRAME = re.compile(r"^(\w+) \((on CPU|blocked)\)$")


def loaded():
    """More runnable work than CPUs (the 1-minute load average)."""
    return os.getloadavg()[0] > os.cpu_count()


def perf_sampled(dump):
    info = subprocess.run([M2G, "--info", dump], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True).stdout
    return "sampling: perf" in info


# The intercepted calls a pipeline's programs make: their I/O, the shell's
# waits, opening files and looking them up (dash stats each PATH entry
# before it execs a command: a sample lands in it now and then, more often
# on a loaded machine).
PIPELINE_CALLS = ("read", "write", "wait4", "wait3", "waitpid", "open",
                  "openat", "stat", "stat64", "lstat", "lstat64", "fstatat",
                  "fstatat64")


def pipeline():
    big = os.path.join(DIR, "big")
    with open(big, "wb") as f:
        line = b"a line of lower case text to upper case, number %d\n"
        f.write(b"".join(line % i for i in range(600000)))
    # grep -c Z finds none: exit 1.
    p = record("pipe", "sh", "-c", f"cat {big} | tr a-z A-Z | grep -c Z",
               status=1)
    perf = perf_sampled(os.path.join(DIR, "pipe.rtprof.d", "main.rtprof"))
    seen = {}
    rootless = {}
    for th in threads(p):
        prog = th["processName"]
        for stack in frames_of(th):
            # Under the kernel's reason, when there is one.
            if stack and stack[-1].startswith("kernel: "):
                stack = stack[:-1]
            m = CALL_FRAME.match(stack[-1]) if stack else None
            if m is None:
                continue
            kinds = seen.setdefault(prog, {})
            kinds[m.group(2)] = kinds.get(m.group(2), 0) + 1
            if len(stack) == 1:
                rootless[prog] = rootless.get(prog, 0) + 1
            # The call's frame is the leaf; its caller, when known, is
            # the program's own code (" (in cat)"; sh is dash), not
            # libc's side of the call.
            exe = {"sh": "dash"}.get(prog, prog)
            # The ASan build's runtime is preloaded into these programs:
            # its interceptor of the call stands between (truly so).
            callers = [f for f in stack[:-1] if not (
                os.environ.get("RTPROF_TEST_ASAN") and
                "(in libclang_rt.asan" in f)]
            check(not callers or callers[-1].endswith(f"(in {exe})") or
                  (prog == "sh" and "(in libc" not in callers[-1]),
                  f"pipeline: {prog}: the call's caller: {stack[-3:]}")
            check(m.group(1) in PIPELINE_CALLS,
                  f"pipeline: {prog}: unexpected call frame {stack[-1]}")
    cat = seen.get("cat", {})
    want = ("on CPU", "blocked") if perf else ("blocked",)
    check(all(cat.get(k, 0) >= 3 for k in want),
          f"pipeline: cat's samples in calls {cat} (perf: {perf})")
    # With perf events, the stack where a stage went off CPU is known: a
    # call frame alone (no caller) is the exception, not the rule (cat
    # and tr switch every few microseconds: their stack copies once
    # overflowed the shared ring, and most of cat's blocked samples were
    # a bare "write (blocked)").
    if perf:
        for prog, kinds in seen.items():
            n = sum(kinds.values())
            check(rootless.get(prog, 0) <= max(2, n // 10),
                  f"pipeline: {prog}: {rootless.get(prog, 0)} of {n} "
                  f"samples in calls have no caller")
    print(f"test_record_blocking: cat | tr | grep: samples in calls {seen}",
          file=sys.stderr)


def off_cpu_reasons(name):
    """summarize's time off CPU by reason of @name's dumps:
    ({reason: (ms, [places])}, the section's text)."""
    d = os.path.join(DIR, name + ".rtprof.d")
    s = subprocess.run([RTPROF, "summarize"] + [os.path.join(d, f) for f in
                       os.listdir(d)], stdout=subprocess.PIPE, text=True,
                       timeout=120).stdout
    r = parse_summary(s)
    return ({k: (v[1], v[2]) for k, v in r["reasons"].items()},
            r["reasons_text"])


def meta_kernel_stacks(p):
    return p["meta"].get("rtprofSampling", {}).get("kernelStacks")


def reasons():
    p = record("reasons", PROG, "reasons", DIR)
    got, sect = off_cpu_reasons("reasons")
    if not meta_kernel_stacks(p):
        print("test_record_blocking: reasons: no kernel stacks here "
              f"({p['meta'].get('rtprofSampling')}), not checked",
              file=sys.stderr)
    else:
        for reason, place in (("pipe full", "write (blocked)"),
                              ("sleep", "nanosleep (blocked)"),
                              ("futex", "pthread_mutex_lock (blocked)")):
            ms, places = got.get(reason, (0, []))
            check(ms >= 150 and any(pl.startswith(place) for pl in places),
                  f"reasons: {reason}: {ms} ms at {places}: {sect}")
        fs = [b for b in blocked(p, ("fsync",)) if b[1] >= 10]
        if fs:
            ms = sum(got.get(r, (0,))[0] for r in
                     ("fsync", "journal commit (fsync)"))
            # The marker is wall time: on a loaded machine part of it is
            # waiting for a CPU after the wake-up, which no off-CPU sample
            # covers (3 ms named of a 21 ms fsync beside two CPU hogs).
            # Then the fsync is named at least (3 samples).
            check(ms >= 0.3 * fs[0][1] or (ms >= 3 and loaded()),
                  f"reasons: fsync blocked {fs[0][1]:.0f} ms, {ms} ms "
                  f"named: {sect}")
        print(f"test_record_blocking: reasons: "
              f"{ {r: v[0] for r, v in got.items()} } (fsync blocked "
              f"{fs[0][1] if fs else 0:.0f} ms)", file=sys.stderr)
    # Refused: perf_event_open under a seccomp filter.
    p = record("noperf", PROG, "reasons", DIR, wrap=(NOPERF,))
    got, sect = off_cpu_reasons("noperf")
    check(meta_kernel_stacks(p) is False and not got and
          "without the kernel's stacks: perf events refused" in sect and
          "seccomp" in sect, f"noperf: {p['meta'].get('rtprofSampling')}: "
          f"{sect}")


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    reasons()
    pipeline()
    sleeps()
    waits()
    make()
    stdio()
    print("test_record_blocking: ok", file=sys.stderr)


main()
