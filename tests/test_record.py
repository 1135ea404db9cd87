"""rtprof record on an unmodified program (tests/record_target.c).

    test_record.py RTPROF RECORD_TARGET TESTS_DIR WORKDIR RECORD_RT

- The program's exit status is rtprof's (3), and a program killed by a
  signal gives 128 + N (SIGTERM sent to rtprof is forwarded to it, and the
  profile is still written).
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
- Processes started with posix_spawn get their own dumps (the launcher
  passes them a descriptor over RTPROF_SOCK) and are processes of the one
  profile; an exec keeps the data of the image before it (2 processes);
  a child made by fork() without exec exits without hanging; a script
  starting three processes (one exits early, one execs, one stops itself)
  gives every process, the stopped one reported incomplete, in bounded
  time.
- Known hot functions (two threads, 30/70 by work): summarize's top self
  functions agree within 10% (or 3.5 sigma, when too few samples resolve
  10%). Exactly 100 fsyncs and 10 sleeps of 5 ms from
  known functions (--block-threshold 0: every call carries its stack):
  summarize counts 100 fsync calls and 10 nanosleeps totalling 50-80 ms;
  by stack, the 100 fsyncs are under io_sync_one < io_fsyncs and the
  sleeps under io_nap_one, none without a stack; the converted profile
  gives the same summary, and its Blocked markers' cause.stack name the
  same functions.
- --max-bytes: a program recording far more stops at the cap, which the
  gathering log reports. --max-total-bytes: the dumps of three processes
  together stay under the cap, the program is not disturbed, and the
  gathering log says the cap was reached and which dump it cut.
- The stopped process of the three-process script is named in the
  gathering log: pid, program, why ("stopped"), when.
- rtprof summarize: the blocked calls with their time, CPU time per
  thread, inner_work on top by self samples; --folded gives flame-graph
  stacks with outer_work;inner_work.
"""

import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, load, markers  # noqa: E402
from summarize_testlib import func, parse_summary, stack_names  # noqa: E402

RTPROF, TARGET, SRC, DIR, RT_TARGET = sys.argv[1:6]


def frames_of(th):
    st = th["stringTable"]
    ft = th["frameTable"]
    sk = th["stackTable"]
    out = []
    for row in th["samples"]["data"]:
        s = row[th["samples"]["schema"]["stack"]]
        names = []
        while s is not None:
            srow = sk["data"][s]
            f = ft["data"][srow[sk["schema"]["frame"]]]
            names.append(st[f[ft["schema"]["location"]]])
            s = srow[sk["schema"]["prefix"]]
        out.append(list(reversed(names)))
    return out


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


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    out = os.path.join(DIR, "rec.json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out, "--", TARGET],
                       stderr=subprocess.PIPE)
    check(r.returncode == 3, f"exit status {r.returncode}, want the "
          f"program's 3: {r.stderr.decode()}")
    check(os.path.exists(os.path.join(DIR, "rec.rtprof")), "dump not kept")
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
    fr = frames_of(cr[0])
    inner = sum(1 for s in fr if any(x.startswith("inner_work (in ")
                                     for x in s))
    print(f"starved: {len(fr)} samples, {inner} in inner_work, "
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

    # rtprof summarize on both dumps: blocked time by call, CPU per
    # thread, top self functions; --folded stacks.
    r = subprocess.run([RTPROF, "summarize", os.path.join(DIR, "rec.rtprof"),
                        os.path.join(DIR, "block.rtprof")],
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
                        os.path.join(DIR, "rec.rtprof")],
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
    dumps = [f for f in os.listdir(DIR) if f.startswith("spawn.")
             and f.endswith(".rtprof")]
    check(len(dumps) == 3, f"dumps kept: {dumps}")

    # Known hot functions, two threads: the top self functions follow the
    # 30/70 split.
    r = subprocess.run([RTPROF, "record", "-o",
                        os.path.join(DIR, "split.json.gz"), "--", TARGET,
                        "split"], stderr=subprocess.PIPE, timeout=60)
    check(r.returncode == 0, f"split: exit {r.returncode}")
    want = 0.3
    r = subprocess.run([RTPROF, "summarize", os.path.join(DIR, "split.rtprof")],
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
    # Within 10%, unless too few samples to tell (3.5 sigma of a binomial:
    # ~3000 samples resolve 10% of 0.3; a loaded machine gives fewer).
    tol = max(0.1 * want, 3.5 * (want * (1 - want) / ab) ** 0.5)
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
    text, sd = summary(os.path.join(DIR, "io.rtprof"))
    rows = sd["calls"]
    check("fsync" in rows and rows["fsync"][0] == 100,
          f"io: fsync row {rows.get('fsync')}\n{text}")
    # A sampling signal sent just before the thread entered a sleep can
    # interrupt it (EINTR): the program sleeps again for the rest, one
    # more call for the same 5 ms.
    check("nanosleep" in rows and 10 <= rows["nanosleep"][0] <= 13 and
          50 <= rows["nanosleep"][1] < 80,
          f"io: nanosleep row {rows.get('nanosleep')}\n{text}")
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
        check(len(gave) == 1 and gave[0].get("program") == "sh" and
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
    size = os.path.getsize(os.path.join(DIR, "cap.rtprof"))
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
    sizes = {f: os.path.getsize(os.path.join(DIR, f))
             for f in os.listdir(DIR)
             if f.startswith("total.") and f.endswith(".rtprof")}
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
        if th["name"] in ("rt", "plain", "record_rt"):
            naps[th["name"]] = [m for m in markers(th)
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

    # SIGTERM to rtprof reaches the program; the profile is written.
    out2 = os.path.join(DIR, "term.json.gz")
    pr = subprocess.Popen([RTPROF, "record", "-o", out2, "--", TARGET],
                          stderr=subprocess.PIPE)
    time.sleep(0.4)
    pr.send_signal(signal.SIGTERM)
    err = pr.communicate(timeout=60)[1].decode()
    check(pr.returncode == 128 + signal.SIGTERM,
          f"exit status {pr.returncode} after SIGTERM: {err}")
    check(os.path.exists(out2), f"no profile after SIGTERM: {err}")

    # A program that does not exist: 127, no dump left behind.
    r = subprocess.run([RTPROF, "record", "-o", os.path.join(DIR, "x.json"),
                        "--", "/nonexistent/program"], stderr=subprocess.PIPE)
    check(r.returncode == 127, f"exit status {r.returncode} for a missing "
          "program")
    check(not os.path.exists(os.path.join(DIR, "x.rtprof")),
          "dump left for a program that never ran")
    print("test_record: ok", file=sys.stderr)


main()
