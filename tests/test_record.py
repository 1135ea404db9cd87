"""rtprof record on an unmodified program (tests/record_target.c).

    test_record.py RTPROF RECORD_TARGET TESTS_DIR WORKDIR RECORD_RT

- The program's exit status is rtprof's (3), and a program killed by a
  signal gives 128 + N (SIGTERM and SIGINT, Ctrl-C, sent to rtprof are
  forwarded to it, and the profile is still written: valid, with the
  program's threads, reported incomplete, with at least 20 samples of
  each cruncher in inner_work).
- The profile (and the dump kept next to it) exist; gecko_check.py accepts
  the profile; its threads are the main thread (GeckoMain) and the two
  threads the program created, named as the program named them after they
  started ("cruncher"), sampled with symbolized stacks in which
  outer_work calls inner_work.
- A cruncher that shares its CPU with a SCHED_FIFO hog (waiting for the
  CPU half of the time, so that sampling signals reach it late) still has
  a stack in inner_work in 95% of its samples, at least 0.4 per ms of CPU
  it used (the interval is 1 ms), and
  their CPU deltas add up to the CPU time it used, within 5%.
- Calls that block (read on a pipe, nanosleep, a contended mutex, fsync)
  are "Blocked" markers with the call's name, as long as the blocking, and
  the thread's samples meanwhile are idle. A marker carries the stack
  where the call blocked (data.cause.stack, and data.stack for the
  front-end) exactly when the call lasted at least the threshold (default
  100 us); the long ones name the function that made the call.
- One blocking call of each wrapped family (record_target calls: read,
  write, readv, writev, poll, select, epoll_wait, nanosleep,
  clock_nanosleep, accept, accept4, connect, recv, recvfrom, recvmsg,
  send, sendto, sendmsg, pthread_mutex_lock, pthread_cond_wait,
  pthread_cond_timedwait, sem_wait; woken by another thread 5 ms after it
  sleeps in the call) is one Blocked marker of at least 4 ms with the
  call's fd and bytes (and, when the schema has it, the path the fd
  names) and the stack where it blocked; fsync and fdatasync on a file are
  one marker each (pread/pwrite: one, or none under 1 us), fields right.
  No marker lasts under 1 us, and of 200 reads a pipe can serve at once
  and 1000 sem_waits that need no syscall, at most 10 each have one.
- --block-threshold off: the Blocked markers carry no stack.
- Processes started with posix_spawn get their own dumps (the launcher
  passes them a descriptor over RTPROF_SOCK) and are processes of the one
  profile, on one timeline: every child sample lies within the parent's
  span; an exec keeps the data of the image before it (2 processes);
  a child made by fork() without exec exits without hanging; a script
  starting three processes (one exits early, one execs, one stops itself)
  gives every process, the stopped one reported incomplete, in bounded
  time.
- Known hot functions (two threads, 30/70 by work): summarize's top self
  functions agree within 10 points. Exactly 100 fsyncs and 10 sleeps of 5 ms from
  known functions (--block-threshold 0: every call carries its stack):
  summarize counts 100 fsync calls and 10 nanosleeps totalling 50-80 ms;
  by stack, the 100 fsyncs are under io_sync_one < io_fsyncs and the
  sleeps under io_nap_one, none without a stack; the converted profile
  gives the same summary, and its Blocked markers' cause.stack name the
  same functions. Two recordings of it summarized together (two dumps, or
  a dump and a profile) add up: 200 fsyncs in one by-stack row.
- summarize --top N: N rows per table, the by-stack one the N biggest of
  the full list, then "(M more stacks)"; --top 0, x, -1, 2x: exit 2.
- --max-bytes: a program recording far more stops at the cap, which the
  gathering log reports. --max-total-bytes: the dumps of three processes
  together stay under the cap, the program is not disturbed, and the
  gathering log says the cap was reached and which dump it cut.
- The stopped process of the three-process script is named in the
  gathering log: pid, program, why ("stopped"), when.
- rtprof summarize: the blocked calls with their time, CPU time per
  thread, inner_work on top by self samples; --folded gives flame-graph
  stacks with outer_work;inner_work.
- Options: --interval 10 gives 100 samples per CPU-second of a busy
  thread, the default 1000 (x7.5-12.5), meta.interval 10;
  --memory 8 is the dump header's memory_limit (8 MiB; 32 by default, as
  rtprof-inspect prints it); with no -o, record_target.json.gz and
  record_target.rtprof.d/ in the current directory, the dumps in that
  folder (main.rtprof the program's, PID.rtprof the others'); a second
  run into the same folder leaves only its own dumps there.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import (  # noqa: E402
    check, fail, frames_of, load, markers)
from summarize_testlib import func, parse_summary, stack_names  # noqa: E402

RTPROF, TARGET, SRC, DIR, RT_TARGET = sys.argv[1:6]


def dump_of(name):
    """The dump of the program rtprof record ran with -o DIR/NAME.json.gz:
    in the run's dump folder, NAME.rtprof.d/main.rtprof."""
    return os.path.join(DIR, name + ".rtprof.d", "main.rtprof")


def summary(path, *opts):
    r = subprocess.run([RTPROF, "summarize", *opts, path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    text = r.stdout.decode()
    check(r.returncode == 0, f"summarize {path}: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    return text, parse_summary(text)


def near(a, b):
    return abs(a - b) <= 0.01 + 0.002 * max(abs(a), abs(b))


def gathering(lg):
    return lg.get("gathering") or []


def started(dump, timeout=20):
    """Wait until the program's dump has its header (the launcher copies
    it within 50 ms of the program's start): rtprof forwards signals and
    the program runs. A signal sent earlier, on a loaded host, could reach
    rtprof before it set its handlers."""
    t_end = time.monotonic() + timeout
    while time.monotonic() < t_end:
        if os.path.exists(dump) and os.path.getsize(dump) > 0:
            return
        time.sleep(0.02)
    fail(f"{dump}: still empty after {timeout} s")


def mdur(m):
    return m["end"] - m["start"]


def idle_flags(prof, th):
    """Whether each sample of `th` is Idle (its leaf frame's category)."""
    cats = [c["name"] for c in prof["meta"]["categories"]]
    sch = th["samples"]["schema"]
    sk, ft = th["stackTable"], th["frameTable"]
    out = []
    for row in th["samples"]["data"]:
        s = row[sch["stack"]]
        if s is None:
            out.append(False)
            continue
        f = ft["data"][sk["data"][s][sk["schema"]["frame"]]]
        out.append(cats[f[ft["schema"]["category"]]] == "Idle")
    return out


def child_cpu(pid):
    """CPU seconds used by the children of process `pid` (/proc)."""
    total = 0.0
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return 0.0
    for k in kids:
        try:
            with open(f"/proc/{k}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf(
                "SC_CLK_TCK")
        except (OSError, IndexError, ValueError):
            pass
    return total


def sample_times(th):
    col = th["samples"]["schema"]["time"]
    return [row[col] for row in th["samples"]["data"]]


def inspect_settings(dump):
    """The settings line of a dump's header, as rtprof-inspect prints it:
    {"memory_limit": "33554432", ...}."""
    inspect = os.path.join(os.path.dirname(RTPROF), "rtprof-inspect")
    check(os.access(inspect, os.X_OK), f"no rtprof-inspect next to {RTPROF}")
    r = subprocess.run([inspect, dump], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    line = [ln for ln in r.stdout.decode().splitlines()
            if ln.strip().startswith("settings ")]
    check(line, f"rtprof-inspect {dump}: no settings line "
          f"({r.stderr.decode()})")
    out = {}
    for kv in line[0].strip()[len("settings"):].split(","):
        k, v = kv.split()
        out[k] = v
    return out


# The wrapped calls record_target calls makes to block >= 5 ms, and those
# that take what they take (a marker: >= 1 us on a disk file), and those
# that may be under 1 us (pwrite, pread on a file: the wrapper cannot be
# made to block on a pipe or socket, ESPIPE).
BLOCKING = ["read", "write", "readv", "writev", "poll", "select",
            "epoll_wait", "nanosleep", "clock_nanosleep", "accept",
            "accept4", "connect", "recv", "recvfrom", "recvmsg", "send",
            "sendto", "sendmsg", "pthread_mutex_lock", "pthread_cond_wait",
            "pthread_cond_timedwait", "sem_wait"]
QUICK = ["fsync", "fdatasync"]
MAYBE = ["pwrite", "pread"]


def check_calls(out_c, stdout):
    said, took, fast_fd = {}, {}, None
    for ln in stdout.splitlines():
        f = ln.split()
        if f[:1] == ["call"]:
            said[f[1]] = (int(f[3]), int(f[5]), int(f[7]))
            took[f[1]] = int(f[9]) / 1000.0
        elif f[:2] == ["fast", "read"]:
            fast_fd = int(f[3])
    check(sorted(said) == sorted(BLOCKING + QUICK + MAYBE) and
          fast_fd is not None, f"calls: the program said {stdout}")
    p = load(out_c)
    caller = [t for t in p["threads"] if t["name"] == "caller"]
    check(len(caller) == 1, f"calls: threads "
          f"{[t['name'] for t in p['threads']]}")
    th = caller[0]
    by = {}
    for m in markers(th):
        if m["name"] == "Blocked":
            by.setdefault(m["data"]["call"], []).append(m)
    print("test_record: calls: " + ", ".join(
          f"{c} {max(mdur(m) for m in ms):.2f}"
          for c, ms in sorted(by.items())),
          file=sys.stderr)
    check(sorted(by) == sorted(BLOCKING + QUICK + [c for c in MAYBE
                                                   if c in by]),
          f"calls: Blocked markers for {sorted(by)}, want "
          f"{sorted(BLOCKING + QUICK)} (and maybe {MAYBE})")
    # 1 us: no marker of a call shorter than that (on any thread). Of 200
    # reads of a byte a pipe holds (~0.2 us) and 1000 sem_waits on a
    # semaphore above 0 (no syscall, ~30 ns), a few preempted ones may pass
    # 1 us; with no 1 us rule, all would be markers.
    for t in p["threads"]:
        for m in markers(t):
            if m["name"] == "Blocked":
                check(mdur(m) >= 0.00099, f"calls: a {mdur(m) * 1000:.3f} us "
                      f"{m['data']['call']} marker on {t['name']} "
                      "(under 1 us)")
    fast_reads = [m for m in by["read"] if m["data"]["fd"] == fast_fd]
    fast_sems = [m for m in by["sem_wait"] if mdur(m) < 4]
    check(len(fast_reads) <= 10, f"calls: {len(fast_reads)} of 200 reads "
          "of a byte a pipe holds have a marker (want at most 10: those "
          "preempted past 1 us)")
    check(len(fast_sems) <= 10 + said["sem_wait"][2],
          f"calls: {len(fast_sems)} of 1000 sem_waits that did not block "
          "have a marker")
    for call in BLOCKING:
        fd, nbytes, retried = said[call]
        ms = [m for m in by[call] if not (call == "read" and
                                          m["data"]["fd"] == fast_fd)]
        if call == "sem_wait":
            ms = [m for m in ms if m not in fast_sems]
        # The waker wakes the call 5 ms after it saw the caller asleep;
        # under load it may see it asleep on the way to the call, which
        # then blocks less: the bar is 80% of what the call took by the
        # program's clock, at most 4 ms (a call that did not block took
        # microseconds).
        bar = min(4, 0.8 * took[call])
        long_ = [m for m in ms if mdur(m) >= bar]
        # One marker per call; one more per retry (EINTR, spurious wake).
        check(len(long_) == 1 and len(ms) <= 1 + retried,
              f"calls: {call}: markers of "
              f"{[round(mdur(m), 3) for m in ms]} ms, want one >= "
              f"{bar:.3f} ms (the call took {took[call]:.3f} ms; "
              f"{retried} retries)")
        d = long_[0]["data"]
        check(d["fd"] == fd and d["bytes"] == nbytes,
              f"calls: {call}: fd {d['fd']}, bytes {d['bytes']}; the call "
              f"had fd {fd}, bytes {nbytes}")
        check("cause" in d and "calls_thread" in
              [func(n) for n in stack_names(th, d["cause"]["stack"])],
              f"calls: {call}: the stack where it blocked does not name "
              f"calls_thread: {d.get('cause')}")
    # When the schema has a path field: what the descriptor names, for a
    # call of at least the threshold (100 us) on a descriptor.
    schema = [m for m in p["meta"].get("markerSchema", [])
              if m.get("name") == "Blocked"]
    if schema and any(f.get("key") == "path"
                      for f in schema[0].get("data", [])):
        kinds = {"read": "pipe:[", "write": "pipe:[", "readv": "pipe:[",
                 "writev": "pipe:[", "epoll_wait": "anon_inode:[eventpoll]",
                 "fsync": "record-target-calls-",
                 "fdatasync": "record-target-calls-",
                 "pwrite": "record-target-calls-",
                 "pread": "record-target-calls-"}
        for ms in by.values():
            for m in ms:
                d, path = m["data"], m["data"].get("path") or ""
                if d["fd"] < 0 or abs(mdur(m) - 0.1) <= 0.0005:
                    continue
                want = kinds.get(d["call"], "socket:[")
                if mdur(m) < 0.1:
                    want = ""
                check(want in path and (want or not path),
                      f"calls: a {mdur(m):.3f} ms {d['call']} on fd "
                      f"{d['fd']}: path {path!r}, want {want!r}")
    for call in QUICK + MAYBE:
        fd, nbytes, _ = said[call]
        ms = by.get(call, [])
        check(len(ms) == 1 or (call in MAYBE and not ms),
              f"calls: {len(ms)} {call} markers, want 1")
        for m in ms:
            check(m["data"]["fd"] == fd and m["data"]["bytes"] == nbytes,
                  f"calls: {call}: fd {m['data']['fd']}, bytes "
                  f"{m['data']['bytes']}; the call had fd {fd}, bytes "
                  f"{nbytes}")


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    out = os.path.join(DIR, "rec.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out, "--", TARGET],
                       stderr=subprocess.PIPE)
    check(r.returncode == 3, f"exit status {r.returncode}, want the "
          f"program's 3: {r.stderr.decode()}")
    check(os.path.exists(dump_of("rec")), "dump not kept")
    g = subprocess.run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                        "--require-samples", out])
    check(g.returncode == 0, "gecko_check.py rejects the profile")
    p = load(out)
    names = sorted(t["name"] for t in p["threads"])
    check(names == ["GeckoMain", "cruncher", "cruncher", "rtprof sampler"],
          f"threads {names}")
    for th in p["threads"]:
        if th["name"] != "cruncher":
            continue
        # A cruncher that waits for a CPU (two busy crunchers and the
        # sampler share 2 vCPUs here, beside other tests) answers late,
        # but answers: its samples have stacks (the sampler collects late
        # answers; before it did, an idle host gave 14 to 353 of ~700).
        fr = frames_of(th)
        stacks = [s for s in fr if s != ["(no stack)"]]
        check(len(stacks) >= 50 and len(stacks) >= 0.9 * len(fr),
              f"only {len(stacks)} of {len(fr)} cruncher samples with a "
              "stack")
        good = sum(1 for s in stacks
                   if any(x.startswith("outer_work (in ") for x in s) and
                   any(x.startswith("inner_work (in ") for x in s) and
                   [x.split(" ")[0] for x in s].index("outer_work") <
                   [x.split(" ")[0] for x in s].index("inner_work"))
        check(good >= 0.5 * len(stacks), f"only {good} of {len(stacks)} "
              "cruncher samples show outer_work > inner_work")

    # A thread that waits for a CPU answers the sampling signal late: its
    # samples still carry its stack, and their CPU deltas add up to the
    # CPU time it used (a late answer loses nothing).
    out_s = os.path.join(DIR, "starved.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out_s, "--", TARGET,
                        "starved"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE)
    check(r.returncode == 0, f"starved: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    used = int(r.stdout.decode().split("cruncher-cpu-ns ")[1].split()[0])
    p = load(out_s)
    cr = [t for t in p["threads"] if t["name"] == "cruncher"]
    check(len(cr) == 1, f"starved: threads {[t['name'] for t in p['threads']]}")
    # Its samples on CPU (an Idle one is where it waited off CPU: with
    # perf events, moving to CPU 0 in pin_cpu0 while the hog holds it).
    fr = [s for s, idle in zip(frames_of(cr[0]), idle_flags(p, cr[0]))
          if not idle]
    inner = sum(1 for s in fr if any(x.startswith("inner_work (in ")
                                     for x in s))
    print(f"starved: {len(fr)} samples on CPU, {inner} in inner_work, "
          f"{sum(1 for s in fr if s == ['(no stack)'])} without a stack")
    # A sample per tick while it runs (~500 ms of the second, less on a
    # loaded machine), and one per time it waited for the CPU.
    check(len(fr) >= 0.4 * used / 1e6, f"starved: only {len(fr)} samples "
          f"for {used / 1e6:.0f} ms of CPU")
    check(inner >= 0.95 * len(fr), f"starved: {inner} of {len(fr)} samples "
          "in inner_work")
    smp = cr[0]["samples"]
    col = smp["schema"]["threadCPUDelta"]
    cpu = sum(row[col] or 0 for row in smp["data"])
    print(f"starved: CPU deltas {cpu / 1e6:.1f} ms, used {used / 1e6:.1f} ms")
    check(abs(cpu - used) <= 0.05 * used, f"starved: CPU deltas add up to "
          f"{cpu} ns, the thread used {used} ns")

    # Blocking calls become "Blocked" markers; the thread is idle in them.
    out3 = os.path.join(DIR, "block.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out3, "--", TARGET, "block"],
                       stderr=subprocess.PIPE)
    check(r.returncode == 0, f"block: exit {r.returncode}: {r.stderr.decode()}")
    p = load(out3)
    bl = [t for t in p["threads"] if t["name"] == "blocker"]
    check(len(bl) == 1, f"threads {[t['name'] for t in p['threads']]}")
    ms = {}
    for m in markers(bl[0]):
        if m["name"] == "Blocked":
            c = m["data"]["call"]
            ms[c] = max(ms.get(c, 0), m["end"] - m["start"])
    print(f"test_record: blocked calls {ms}", file=sys.stderr)
    for call, at_least in (("read", 40), ("nanosleep", 35),
                           ("pthread_mutex_lock", 30), ("fsync", 0)):
        check(call in ms and ms[call] >= at_least,
              f"no {call} of at least {at_least} ms among {ms}")
    cats = [c["name"] for c in p["meta"]["categories"]]
    idle = cats.index("Idle")
    th = bl[0]
    ft, sk = th["frameTable"], th["stackTable"]
    leaf_cats = [ft["data"][sk["data"][row[th["samples"]["schema"]["stack"]]]
                            [sk["schema"]["frame"]]][ft["schema"]["category"]]
                 for row in th["samples"]["data"]]
    check(leaf_cats.count(idle) >= 0.5 * len(leaf_cats),
          f"blocker: {leaf_cats.count(idle)} idle of {len(leaf_cats)} samples")
    # The default threshold, 100 us: a marker has the stack where the call
    # blocked exactly when it lasted that long (0.5 us of slack for the
    # tick -> ms conversion); the long calls' stacks name their caller.
    for th in p["threads"]:
        for m in markers(th):
            if m["name"] != "Blocked":
                continue
            dur, d = m["end"] - m["start"], m["data"]
            if abs(dur - 0.1) > 0.0005:
                check(("cause" in d) == (dur >= 0.1), f"block: a {dur:.4f} "
                      f"ms {d['call']} {'has' if 'cause' in d else 'lacks'} "
                      "a backtrace (threshold 0.1 ms)")
            if th["name"] == "blocker" and dur >= 30:
                check("cause" in d, f"block: {d['call']} without a stack")
                names = [func(n) for n in stack_names(th, d["cause"]["stack"])]
                check("blocker" in names, f"block: {d['call']} stack {names}")

    # --block-threshold off: the same calls are markers, none carries the
    # stack where it blocked.
    out_off = os.path.join(DIR, "off.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out_off, "--block-threshold",
                        "off", "--", TARGET, "block"], stderr=subprocess.PIPE,
                       timeout=60)
    check(r.returncode == 0, f"off: exit {r.returncode}: {r.stderr.decode()}")
    bm = [m for th in load(out_off)["threads"] for m in markers(th)
          if m["name"] == "Blocked"]
    check(any(m["data"]["call"] == "read" and mdur(m) >= 40 for m in bm),
          f"off: no read of at least 40 ms among "
          f"{[(m['data']['call'], round(mdur(m), 3)) for m in bm]}")
    with_stack = [m["data"]["call"] for m in bm
                  if "cause" in m["data"] or "stack" in m["data"]]
    check(not with_stack, f"off: {len(with_stack)} of {len(bm)} Blocked "
          f"markers carry a stack: {with_stack}")

    # One blocking call of each family the preload library wraps (another
    # thread wakes it 5 ms after it sleeps in the call): one Blocked
    # marker per call, >= 4 ms, with the call's fd and bytes, the stack
    # where it blocked (default threshold); nothing under 1 us.
    out_c = os.path.join(DIR, "calls.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out_c, "--", TARGET, "calls"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       cwd=DIR, timeout=60)
    check(r.returncode == 0, f"calls: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    check_calls(out_c, r.stdout.decode())

    # rtprof summarize on both dumps: blocked time by call, CPU per
    # thread, top self functions; --folded stacks.
    r = subprocess.run([RTPROF, "summarize", dump_of("rec"),
                        dump_of("block")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    text = r.stdout.decode()
    check(r.returncode == 0, f"summarize: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    rows = {ln.split()[0]: ln.split() for ln in text.splitlines()
            if ln.startswith("  ") and len(ln.split()) == 5}
    for call, at_least in (("read", 40), ("pthread_mutex_lock", 30)):
        check(call in rows and float(rows[call][2]) >= at_least,
              f"summarize: no {call} >= {at_least} ms in:\n{text}")
    cpu = [ln for ln in text.splitlines() if "/ cruncher (tid" in ln]
    check(len(cpu) == 2 and all(float(ln.split()[0]) > 300 for ln in cpu),
          f"summarize: cruncher CPU lines {cpu}")
    # Samples a loaded machine kept from being answered have no stack.
    top = [ln for ln in text.split("Top functions by self samples:")[1]
           .splitlines()[1:] if ln.strip() and "(no stack)" not in ln]
    check(top and top[0].split()[-1] == "inner_work",
          f"summarize: top functions {top[:3]}")
    r = subprocess.run([RTPROF, "summarize", "--folded",
                        dump_of("rec")],
                       stdout=subprocess.PIPE)
    folded = [ln.rsplit(" ", 1) for ln in r.stdout.decode().splitlines()]
    chain = [int(n) for st, n in folded
             if st.startswith("record_target;cruncher;") and
             st.endswith(";outer_work;inner_work")]
    check(r.returncode == 0 and chain and max(chain) > 100,
          f"summarize --folded: {folded[:3]}")

    # Processes the program starts are followed: one profile, 3 processes.
    out4 = os.path.join(DIR, "spawn.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out4, "--", TARGET, "spawn"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"spawn: exit {r.returncode}: {r.stderr.decode()}")
    p = load(out4)
    check(len(p["processes"]) == 2, f"spawn: {len(p['processes'])} "
          "sub-processes, want 2")
    pids = {p["threads"][0]["pid"]}
    for sp in p["processes"]:
        names = sorted(t["name"] for t in sp["threads"])
        check("cruncher" in names and "GeckoMain" in names,
              f"spawned process threads {names}")
        check(sp["meta"]["startTime"] >= p["meta"]["startTime"],
              "a spawned process starts before its parent")
        pids.add(sp["threads"][0]["pid"])
    check(len(pids) == 3, f"pids {pids}")
    dumps = [f for f in os.listdir(os.path.join(DIR, "spawn.rtprof.d"))
             if f.endswith(".rtprof")]
    check(len(dumps) == 3, f"dumps kept: {dumps}")
    # One timeline: each process's times are ms from its own
    # meta.startTime; on the parent's, every child sample lies within the
    # parent's span (its start to its last sample: it sleeps 10 ms before
    # it starts them and after they exit).
    t0 = p["meta"]["startTime"]
    par = [t for th in p["threads"] for t in sample_times(th)]
    lo, hi = min([0.0] + par), max(par)
    for sp in p["processes"]:
        ts = [sp["meta"]["startTime"] - t0 + t for th in sp["threads"]
              for t in sample_times(th)]
        check(ts and lo <= min(ts) and max(ts) <= hi,
              f"spawn: a child's samples at {min(ts or [0]):.3f}.."
              f"{max(ts or [0]):.3f} ms, outside the parent's {lo:.3f}.."
              f"{hi:.3f} ms")

    # Known hot functions, two threads: the top self functions follow the
    # 30/70 split.
    r = subprocess.run([RTPROF, "record", "-o",
                        os.path.join(DIR, "split.json.gz"), "--", TARGET,
                        "split"], stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"split: exit {r.returncode}")
    want = 0.3
    r = subprocess.run([RTPROF, "summarize", dump_of("split")],
                       stdout=subprocess.PIPE)
    top = {}
    for ln in r.stdout.decode().split("Top functions by self samples:")[1] \
            .splitlines():
        f = ln.split()
        if len(f) == 3:
            top[f[2]] = int(f[0])
    ab = top.get("hot_a", 0) + top.get("hot_b", 0)
    check(ab > 300, f"split: hot_a/hot_b samples {top}")
    share = top.get("hot_a", 0) / ab
    # Within 10 points: five runs of ~4400 samples on a quiet machine
    # spread 0.288-0.327, but with other work on both CPUs hot_a's share
    # drifts up (0.365 and 0.377 seen; the sampler before late answers
    # did the same, 0.30-0.36 under three spinners).
    tol = 0.1
    print(f"test_record: hot_a {share:.3f} of {ab} hot_a + hot_b samples, "
          f"want {want} +-{tol:.3f}", file=sys.stderr)
    check(abs(share - want) <= tol, f"split: hot_a {share:.3f} of the "
          f"samples, want {want} +-{tol:.3f}")

    # Exactly 100 fsyncs and 10 sleeps of 5 ms, from known functions:
    # summarize counts them, by call and by stack (--block-threshold 0:
    # every call carries the stack where it blocked).
    io_prof = os.path.join(DIR, "io.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", io_prof, "--block-threshold",
                        "0", "--", TARGET, "io"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"io: exit {r.returncode}")
    text, sd = summary(dump_of("io"))
    rows = sd["calls"]
    check("fsync" in rows and rows["fsync"][0] == 100,
          f"io: fsync row {rows.get('fsync')}\n{text}")
    # A sampling signal sent just before the thread entered a sleep can
    # interrupt it (EINTR): the program sleeps again for the rest, one
    # more call for the same 5 ms.
    # The blocked time lies between the 50 ms asked for and the time the
    # program itself measured around its naps (late wake-ups under load).
    m = re.search(rb"io: naps took ([0-9.]+) ms", r.stderr)
    took = float(m.group(1)) if m else 0.0
    check("nanosleep" in rows and 10 <= rows["nanosleep"][0] <= 13 and
          50 <= rows["nanosleep"][1] <= took,
          f"io: nanosleep row {rows.get('nanosleep')}, the naps took "
          f"{took:.3f} ms\n{text}")
    by = {}
    for call, n, total, frames in sd["stacks"]:
        c = by.setdefault(call, [0, 0.0])
        c[0] += n
        c[1] += total
        if call == "fsync":
            check(frames[:3] == ["io_sync_one", "io_fsyncs", "io_main"],
                  f"io: an fsync stack {frames}")
        if call == "nanosleep":
            check("io_nap_one" in frames and "io_naps" in frames,
                  f"io: a nanosleep stack {frames}")
    check(by.get("fsync", [0])[0] == 100 and
          by.get("nanosleep", [0])[0] == rows["nanosleep"][0] and
          50 <= by["nanosleep"][1] < 80 and sd["nostack"][0] == 0,
          f"io: by stack {by}, {sd['nostack']} without\n{text}")
    # The same summary from the converted profile.
    ptext, sp = summary(io_prof)
    check(set(sp["calls"]) == set(rows) and all(
          sp["calls"][c][0] == rows[c][0] and near(sp["calls"][c][1],
                                                  rows[c][1]) for c in rows),
          f"io: the profile's summary differs:\n{text}\n{ptext}")
    check(sorted((c, n, tuple(f)) for c, n, _, f in sp["stacks"]) ==
          sorted((c, n, tuple(f)) for c, n, _, f in sd["stacks"]) and
          sp["nostack"][0] == 0,
          f"io: the profile's by-stack differs:\n{text}\n{ptext}")
    # Its Blocked markers carry cause.stack naming the known functions.
    g = subprocess.run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                        io_prof])
    check(g.returncode == 0, "gecko_check.py rejects the io profile")
    main_th = [t for t in load(io_prof)["threads"] if t["name"] == "GeckoMain"]
    seen = {}
    for m in markers(main_th[0]):
        if m["name"] != "Blocked" or m["data"]["call"] not in ("fsync",
                                                               "nanosleep"):
            continue
        call = m["data"]["call"]
        check("cause" in m["data"], f"io: a {call} marker without cause")
        names = [func(n) for n in stack_names(main_th[0],
                                              m["data"]["cause"]["stack"])]
        want = "io_sync_one" if call == "fsync" else "io_nap_one"
        check(want in names, f"io: {call} cause stack {names}")
        seen[call] = seen.get(call, 0) + 1
    check(seen.get("fsync") == 100 and seen.get("nanosleep", 0) >= 10,
          f"io: Blocked markers with a cause {seen}")

    # Two recordings of io, summarized together (two dumps; a dump and a
    # profile): the same calls and stacks aggregate, 200 fsyncs in one
    # by-stack row.
    io2 = os.path.join(DIR, "io2.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", io2, "--block-threshold",
                        "0", "--", TARGET, "io"], stderr=subprocess.PIPE,
                       timeout=60)
    check(r.returncode == 0, f"io2: exit {r.returncode}")
    _, sd2 = summary(dump_of("io2"))
    for pair in ((dump_of("io"),
                  dump_of("io2")),
                 (dump_of("io"), io2)):
        text2, both = summary(*pair)
        rows2 = both["calls"]
        check(set(rows2) == set(rows) | set(sd2["calls"]) and all(
              rows2[c][0] == rows.get(c, (0,))[0] +
              sd2["calls"].get(c, (0,))[0] and
              abs(rows2[c][1] - rows.get(c, (0, 0))[1] -
                  sd2["calls"].get(c, (0, 0))[1]) <= 0.01 for c in rows2),
              f"io twice: the sum of\n{text}\nand\n{sd2}\nis not\n{text2}")
        check(rows2["fsync"][0] == 200, f"io twice: fsync row "
              f"{rows2['fsync']}\n{text2}")
        fs = [st for st in both["stacks"] if st[0] == "fsync"]
        check(len(fs) == 1 and fs[0][1] == 200 and
              fs[0][3][:3] == ["io_sync_one", "io_fsyncs", "io_main"],
              f"io twice: fsync by stack {fs}\n{text2}")
        check(both["nostack"][0] == 0 and both["more"] == 0,
              f"io twice: {both['nostack']} without a stack, "
              f"{both['more']} stacks left out\n{text2}")
    # --top N: N rows in every table, the by-stack one's the N biggest
    # (as without it), and how many more.
    _, full = summary(out_c, "--top", "1000")
    for n in (1, 3):
        ttext, topn = summary(out_c, "--top", str(n))
        check(len(full["stacks"]) > 3 and topn["stacks"] ==
              full["stacks"][:n] and topn["more"] ==
              len(full["stacks"]) - n and len(topn["calls"]) == n and
              len(topn["cpu"]) <= n and len(topn["self"]) <= n,
              f"--top {n}: {len(topn['stacks'])} stacks "
              f"({topn['more']} more) of {len(full['stacks'])}, "
              f"{len(topn['calls'])} calls\n{ttext}")
    for bad in ("0", "x", "-1", "2x"):
        r = subprocess.run([RTPROF, "summarize", "--top", bad, out_c],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        check(r.returncode == 2, f"summarize --top {bad}: exit "
              f"{r.returncode}")

    # exec: the image before it keeps its data (stopped before the exec),
    # the image after it gets its own dump: 2 processes, both crunching.
    out6 = os.path.join(DIR, "exec.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out6, "--", TARGET, "exec"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"exec: exit {r.returncode}: {r.stderr.decode()}")
    p = load(out6)
    procs = [p] + p["processes"]
    check(len(procs) == 2, f"exec: {len(procs)} processes, want 2")
    for proc in procs:
        cr = [t for t in proc["threads"] if t["name"] == "cruncher"]
        check(len(cr) == 1 and len(cr[0]["samples"]["data"]) > 50,
              "exec: a process without its cruncher samples")

    # A shell script starting three processes: one exits early, one execs
    # another program, one stops itself (SIGSTOP) and is never continued.
    # Every process is in the profile; the stopped one is reported as
    # incomplete in the gathering log; the whole thing ends in bounded time.
    script = os.path.join(DIR, "three.sh")
    with open(script, "w") as f:
        f.write(f"""#!/bin/sh
{TARGET} child &
a=$!
{TARGET} exec &
b=$!
sh -c 'echo $$ > {DIR}/stopped.pid; kill -STOP $$; exec {TARGET} child' &
wait $a $b
""")
    out7 = os.path.join(DIR, "three.json.gz")
    t0 = time.monotonic()
    try:
        # Not a pipe: the stopped process keeps its copy open forever.
        with open(os.path.join(DIR, "three.err"), "w") as err:
            r = subprocess.run([RTPROF, "record", "-o", out7, "--", "sh",
                                script], stderr=err, stdout=err, timeout=60)
    finally:
        try:
            with open(os.path.join(DIR, "stopped.pid")) as f:
                os.kill(int(f.read()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    took = time.monotonic() - t0
    check(r.returncode == 0, f"three: exit {r.returncode}: "
          f"{open(os.path.join(DIR, 'three.err')).read()}")
    check(took < 20, f"three: took {took:.1f} s")
    p = load(out7)
    procs = [p] + p["processes"]
    names = sorted(pr["meta"].get("product", "") for pr in procs)
    crunchers = sum(1 for pr in procs for t in pr["threads"]
                    if t["name"] == "cruncher")
    # sh (the script) + child + exec (2 images) + the stopped sh = 5.
    check(len(procs) == 5, f"three: {len(procs)} processes {names}")
    check(crunchers == 3, f"three: {crunchers} crunchers, want 3 (the early "
          "child and both images of the exec)")
    logs = [pr["profileGatheringLog"] for pr in procs]
    inc = [lg for lg in logs if "incomplete" in json.dumps(lg)]
    check(len(inc) == 1, f"three: {len(inc)} processes reported incomplete")
    # The launcher gave up on it and says so: which process, why, when (in
    # the top-level log and in the stopped process's own).
    with open(os.path.join(DIR, "stopped.pid")) as f:
        stopped = int(f.read())
    for lg in (logs[0], inc[0]):
        gave = [n for n in gathering(lg) if n.get("pid") == stopped]
        # Named with its argv, shortened: "sh -c echo $$ > ...".
        check(len(gave) == 1 and
              gave[0].get("program", "").startswith("sh -c ") and
              "stopped" in gave[0].get("reason", "") and
              isinstance(gave[0].get("time"), (int, float)) and
              gave[0].get("wallClock") and gave[0].get("dump"),
              f"three: the gathering log on pid {stopped}: {gathering(lg)}")
    check(not [n for n in gathering(logs[0]) if n.get("pid") != stopped],
          f"three: gave up on others too: {gathering(logs[0])}")
    print(f"test_record: three processes in {took:.1f} s", file=sys.stderr)

    # A byte cap per process: the dump stops at it, and it is reported.
    out8 = os.path.join(DIR, "cap.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out8, "--max-bytes", "30000",
                        "--", TARGET], stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 3, f"cap: exit {r.returncode}: {r.stderr.decode()}")
    size = os.path.getsize(dump_of("cap"))
    check(size <= 30000, f"cap: the dump has {size} bytes, cap 30000")
    lg = load(out8)["profileGatheringLog"]
    check('"limitReached": true' in json.dumps(lg),
          f"cap: the gathering log does not report the cap: {lg}")

    # A cap on all dumps together: three processes (~100 kB of dumps
    # without it) stay under 30000 bytes; the program runs as usual; the
    # gathering log says the cap was reached and which dump it cut.
    out9 = os.path.join(DIR, "total.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out9, "--max-total-bytes",
                        "30000", "--", TARGET, "spawn"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"total: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    tdir = os.path.join(DIR, "total.rtprof.d")
    sizes = {f: os.path.getsize(os.path.join(tdir, f))
             for f in os.listdir(tdir) if f.endswith(".rtprof")}
    check(0 < sum(sizes.values()) <= 30000,
          f"total: dumps {sizes}, {sum(sizes.values())} bytes, cap 30000")
    g = subprocess.run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                        out9])
    check(g.returncode == 0, "gecko_check.py rejects the capped profile")
    notes = gathering(load(out9)["profileGatheringLog"])
    what = [n["what"] for n in notes]
    check("total byte cap reached" in what and
          any(n["what"] == "dump cut by the total byte cap" and
              n.get("dump") and n.get("pid") for n in notes) and
          all(n.get("bytes") == 30000 for n in notes
              if n["what"].startswith("total byte cap")),
          f"total: the gathering log {notes}")
    print(f"test_record: total cap: dumps {sorted(sizes.values())}",
          file=sys.stderr)

    # A real-time thread's blocking calls are timed, but never unwound
    # (the unwinder may lock and costs microseconds on a thread whose next
    # cycle starts when the call returns); a plain thread's are.
    out11 = os.path.join(DIR, "rt.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out11, "--block-threshold",
                        "0", "--", RT_TARGET], stderr=subprocess.PIPE,
                       timeout=60)
    check(r.returncode == 0, f"rt: exit {r.returncode}: {r.stderr.decode()}")
    naps = {}
    for th in load(out11)["threads"]:
        # A real-time thread is shown as "Audio RT: NAME" (the front-end
        # keeps threads named Audio... visible and selects them).
        name = th["name"].replace("Audio RT: ", "")
        if name in ("rt", "plain", "record_rt"):
            naps[name] = [m for m in markers(th)
                                if m["name"] == "Blocked" and
                                m["data"]["call"] == "nanosleep"]
    plain = [ms for name, ms in naps.items() if name != "rt"]
    check(len(naps.get("rt", [])) >= 5 and
          not any("cause" in m["data"] or "stack" in m["data"]
                  for m in naps["rt"]),
          f"rt: the real-time thread's sleeps {naps.get('rt')}")
    check(plain and all(len(ms) >= 5 and all("cause" in m["data"]
                                             for m in ms) for ms in plain),
          f"rt: the plain thread's sleeps {plain}")

    # A cap on the number of processes: TARGET spawn starts children
    # (see record_target.c); with --max-processes 1 only TARGET itself is
    # recorded, the program runs as usual, and every child left out is
    # named in the gathering log.
    out10 = os.path.join(DIR, "nproc.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out10, "--max-processes",
                        "1", "--", TARGET, "spawn"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"nproc: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    prof = load(out10)
    check(not prof.get("processes"),
          f"nproc: {len(prof.get('processes', []))} sub-processes recorded")
    left = [n for n in gathering(prof["profileGatheringLog"])
            if n["what"] == "process not recorded"]
    check(left and all("--max-processes" in n.get("why", json.dumps(n))
                       and n.get("pid") for n in left),
          f"nproc: the gathering log {gathering(prof['profileGatheringLog'])}")
    r = subprocess.run([RTPROF, "record", "--max-processes", "0", "--",
                        TARGET], stderr=subprocess.PIPE)
    check(r.returncode == 2, f"--max-processes 0: exit {r.returncode}")

    # fork() without exec: the child is not recorded, and its exit does
    # not hang (no writer thread in it to wait for).
    out5 = os.path.join(DIR, "fork.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out5, "--", TARGET, "fork"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"fork: exit {r.returncode}: {r.stderr.decode()}")

    # SIGTERM, and Ctrl-C's SIGINT, to rtprof reach the program (128 + N),
    # and the profile is written: a valid one, with the program's three
    # threads, that says it is incomplete (no trailer: the program died),
    # with the crunchers' samples up to about 200 ms before it died (the
    # writer copies out the chunks not yet full every 200 ms: before it
    # did, it had none).
    for sig, name in ((signal.SIGTERM, "term"), (signal.SIGINT, "int")):
        out_i = os.path.join(DIR, name + ".json.gz")
        pr = subprocess.Popen([RTPROF, "record", "-o", out_i, "--", TARGET],
                              stderr=subprocess.PIPE)
        started(dump_of(name))
        # 0.3 s, and on a loaded machine until the program has used
        # 0.4 s of CPU (its crunchers' samples come per CPU time).
        time.sleep(0.3)
        deadline = time.monotonic() + 10
        while child_cpu(pr.pid) < 0.4 and time.monotonic() < deadline:
            time.sleep(0.05)
        pr.send_signal(sig)
        err = pr.communicate(timeout=60)[1].decode()
        what = signal.Signals(sig).name
        check(pr.returncode == 128 + sig,
              f"exit status {pr.returncode} after {what}: {err}")
        check(os.path.exists(out_i), f"no profile after {what}: {err}")
        g = subprocess.run([sys.executable,
                            os.path.join(SRC, "gecko_check.py"), out_i],
                           stdout=subprocess.PIPE)
        check(g.returncode == 0, f"gecko_check.py rejects the {what} "
              "profile")
        prof = load(out_i)
        names = sorted(t["name"] for t in prof["threads"])
        check(len(names) == 4 and "GeckoMain" in names and
              "rtprof sampler" in names, f"{what}: threads {names}")
        check(prof["profileGatheringLog"].get("trailer") is False and
              prof["profileGatheringLog"].get("incomplete"),
              f"{what}: the gathering log {prof['profileGatheringLog']}")
        # (Named after the program: a name set after registration is
        # written when the thread unregisters, and these were killed.)
        crs = [t for t in prof["threads"]
               if t["name"] not in ("GeckoMain", "rtprof sampler")]
        nstack = [sum(1 for s in frames_of(t) if any(
            x.startswith("inner_work (in ") for x in s)) for t in crs]
        print(f"{what}: cruncher samples in inner_work {nstack}")
        check(len(crs) == 2 and all(n >= 20 for n in nstack),
              f"{what}: cruncher samples in inner_work {nstack}")

    # Bad --interval and --memory values are refused before the program
    # runs (out of range, it ran unprofiled; a huge --memory had it killed
    # for want of memory, as every process preallocates it).
    marker = os.path.join(DIR, "ran")
    for bad in (["--interval", "abc"], ["--interval", "0.01"],
                ["--interval", "5000"], ["--memory", "abc"],
                ["--memory", "0"], ["--memory", "-1"],
                ["--memory", "100000000"]):
        r = subprocess.run([RTPROF, "record", *bad, "-o",
                            os.path.join(DIR, "bad.json.gz"), "--", "touch",
                            marker], stderr=subprocess.PIPE)
        err = r.stderr.decode()
        check(r.returncode == 2 and bad[0] in err and
              not os.path.exists(marker),
              f"{bad}: exit {r.returncode}, {err!r}")

    # Options. The default (1 ms, 32 MiB) into -o; --interval 10 and
    # --memory 8 with no -o: record_target.json.gz (and its dump) in the
    # current directory.
    r = subprocess.run([RTPROF, "record", "-o", os.path.join(DIR,
                        "dflt.json.gz"), "--", TARGET, "child"],
                       stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"dflt: exit {r.returncode}")
    # A previous run's dump in the folder is removed (runs do not mix);
    # another file there is left alone; no dump in the directory itself.
    stale_dir = os.path.join(DIR, "record_target.rtprof.d")
    os.makedirs(stale_dir, exist_ok=True)
    for f in ("4242.rtprof", "notes.txt"):
        with open(os.path.join(stale_dir, f), "w") as fh:
            fh.write("old")
    before = {f for f in os.listdir(DIR) if f.endswith(".rtprof")}
    r = subprocess.run([RTPROF, "record", "--interval", "10", "--memory", "8",
                        "--", TARGET, "child"], stderr=subprocess.PIPE,
                       cwd=DIR, timeout=60)
    check(r.returncode == 0, f"--interval 10: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    named = os.path.join(DIR, "record_target.json.gz")
    check(os.path.exists(named) and os.path.exists(dump_of("record_target")),
          f"no -o: no record_target.json.gz and .rtprof.d/ in {DIR}: "
          f"{sorted(os.listdir(DIR))}")
    left = sorted(os.listdir(stale_dir))
    check("4242.rtprof" not in left and "notes.txt" in left,
          f"dump folder after a second run: {left}")
    after = {f for f in os.listdir(DIR) if f.endswith(".rtprof")}
    check(after == before, f"dumps left in {DIR}: {sorted(after - before)}")
    # Samples per CPU-second of the CPU-bound cruncher: with perf events
    # one per interval of its own CPU time; with signals one per tick it
    # ran through. Against its own CPU time, not the wall clock: on a
    # loaded host a thread gets a part of a CPU (and a signal sampler's
    # ticks come late), which moved a wall-clock rate x5.7-12 apart.
    rates = {}
    for name, path, iv in (("1", os.path.join(DIR, "dflt.json.gz"), 1),
                           ("10", named, 10)):
        prof = load(path)
        cr = [t for t in prof["threads"] if t["name"] == "cruncher"]
        check(len(cr) == 1, f"--interval {name}: threads "
              f"{[t['name'] for t in prof['threads']]}")
        smp = cr[0]["samples"]
        col = smp["schema"]["threadCPUDelta"]
        cpu = [row[col] or 0 for row in smp["data"]]
        busy = [c for c in cpu if c > 0]
        check(len(busy) >= 10, f"--interval {name}: {len(busy)} samples")
        rates[name] = (len(busy) / (sum(cpu) / 1e9), prof["meta"]["interval"])
    (r1, i1), (r10, i10) = rates["1"], rates["10"]
    print(f"test_record: --interval 10: {r10:.1f} samples per CPU-second,"
          f" by default {r1:.1f} (x{r1 / r10:.2f})", file=sys.stderr)
    check(i1 == 1 and i10 == 10, f"--interval: meta.interval {i1}, {i10}")
    check(75 <= r10 <= 125 and 750 <= r1 <= 1250 and
          7.5 <= r1 / r10 <= 12.5,
          f"--interval 10: {r10:.1f} samples per CPU-second, the default "
          f"{r1:.1f} (x{r1 / r10:.2f}, want x7.5-12.5)")
    # --memory ends up in the dump header's session settings.
    st1 = inspect_settings(dump_of("dflt"))
    st10 = inspect_settings(dump_of("record_target"))
    check(st1.get("memory_limit") == str(32 << 20) and
          st10.get("memory_limit") == str(8 << 20) and
          st10.get("sample_interval_us") == "10000",
          f"--memory 8: the dump's settings {st10}, by default {st1}")

    # A program that does not exist: 2 (as --help says: rtprof could not
    # run it), said, no dump left behind.
    r = subprocess.run([RTPROF, "record", "-o", os.path.join(DIR, "x.json"),
                        "--", "/nonexistent/program"], stderr=subprocess.PIPE)
    check(r.returncode == 2 and b"cannot run it" in r.stderr,
          f"exit status {r.returncode} for a missing program: {r.stderr}")
    check(not os.path.exists(os.path.join(DIR, "x.rtprof.d")),
          "dump folder left for a program that never ran")
    print("test_record: ok", file=sys.stderr)


main()
