"""Hostile dumps, hostile neighbours (issue 18): what the tools do with
dumps and streams made to hurt them (tests/hostile_gen.c).

    test_hostile.py HOSTILE_GEN MSGPACK2GECKO RTPROF RTPROF_INSPECT WORKDIR

1. A module map naming a FIFO, devices, /proc files, a directory, a
   symlink to /dev/zero, a non-ELF file and a missing file: msgpack2gecko
   and `rtprof summarize` (with and without --no-symbols) finish within a
   time limit (a FIFO opened for reading used to block them for ever),
   exit 0 as documented, and every module gets the same "not usable":
   nothing tells which of those files exist or what they are.
2. Extreme clocks and pids, native frames with no module map, HEADER
   frames that are not headers: every tool exits as documented. In the
   ASan+UBSan build (-fno-sanitize-recover=all) undefined behaviour aborts
   the tool, so these runs fail on it.
3. Terminal escapes in every string of a dump: the outputs of
   rtprof-inspect (-v too), `rtprof summarize` (dump and profile, folded
   too) and msgpack2gecko --info hold no ESC, no other C0 control but
   newline and tab, no DEL and no C1 control, and do show the strings,
   escaped.
4. 20000 frame headers claiming 16 MiB each, then 16 MiB of zeros and one
   intact session: rtprof-inspect and `rtprof capture` find the session
   within a few seconds of CPU (the scanner's hunt used to cost 16 MiB of
   CRC per header: minutes). 5000 sessions: capture writes 1000 files (the
   default --max-sessions) and exits 1; --max-sessions 7 writes 7.
5. Growth (item 3): dumps whose size is modest but whose shape made the
   converter or summarize grow far faster than the input run under a
   256 MiB address-space limit and a CPU-time limit, each sized so that
   the code before the fix failed it: 20000 sessions each declaring one
   marker schema (a 65536-entry table each: ENOMEM), 8000 sessions of one
   pid (the pid search was O(N^3): > 15 s), 100000 thread ids in one
   session (per-thread tables of 64 slots, and eviction scanning every
   stream: ENOMEM), and for summarize 300000 thread ids and 400000
   strings (linear lookups: both killed at 10 s of CPU). The outputs are
   checked: every session a process, the pids distinct, every thread
   shown. In an
   ASan build (whose shadow memory needs terabytes of address space) only
   the CPU time is limited, to 60 s.
8. Names that are not UTF-8 (a process, a thread, a label): the Gecko
   profile writes each bad sequence as U+FFFD, and the pprof profile
   (its strings read by `go tool pprof -raw`) holds the same names.
7. The pprof writer (msgpack2gecko --format pprof, issue 19) on the
   dumps of 1, 2, 3, 5 and 6, with and without --no-symbols and a time
   window: the same exit status as the Gecko conversion (no sanitizer
   report in the ASan+UBSan build), within the growth runs' limits, and
   where `go` is installed `go tool pprof -raw` reads every profile of
   1, 2, 3 and 6.
6. Profiles the front-end would reject (item 5), each accepted by
   tests/gecko_check.py now (the code before failed it): clock rates of
   1e-300, a denormal and 1e300 (times were null; now at 1e9 with a
   clockNote in the gathering log); a sub-process with 41 categories
   under a top level with 2 (indexes past the top level's list; now
   mapped by name or to its default); an empty category, schema and
   field name (now named); a session recording across the wrap of the
   tick counter (samples out of time order; now in order).
"""

import json
import os
import re
import resource
import shutil
import subprocess
import sys

GEN, M2G, RTPROF, INSPECT, DIR = sys.argv[1:6]
TIME_LIMIT = 60          # wall seconds for any one run (a hang fails)
CPU_LIMIT = 10.0         # CPU seconds for a scan of the bogus headers
BAD_BYTES = re.compile(rb"[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]")


def fail(msg):
    print(f"test_hostile: FAIL: {msg}")
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def run(args, want=None, stdin=None):
    """Runs @args under the time limit; checks the exit status is in
    @want. Returns (stdout + stderr bytes, CPU seconds of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        r = subprocess.run(args, stdin=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=TIME_LIMIT)
    except subprocess.TimeoutExpired:
        fail(f"{args}: still running after {TIME_LIMIT} s")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    out = r.stdout + r.stderr
    check(b"runtime error" not in out and b"Sanitizer" not in out,
          f"{args}: sanitizer report:\n{r.stderr.decode(errors='replace')}")
    if want is not None:
        check(r.returncode in want, f"{args}: exit {r.returncode}, want "
              f"{want}:\n{r.stderr.decode(errors='replace')[-2000:]}")
    return out, cpu


def gen(*args):
    run([GEN] + [str(a) for a in args], want=(0,))


GO = shutil.which("go")


def pprof_too(dump, want, *opts):
    """@dump converted to pprof (with @opts and without symbols too):
    exit status in @want; read by go tool pprof where go is."""
    for extra in ([], ["--no-symbols"]):
        prof = dump + ".pb.gz"
        run([M2G, "--quiet", "--format", "pprof", *extra, *opts, dump, "-o",
             prof], want=want)
        if GO is None or not os.path.exists(prof):
            continue
        env = dict(os.environ, HOME=DIR, PPROF_TMPDIR=DIR)
        r = subprocess.run([GO, "tool", "pprof", "-symbolize=none", "-raw",
                            prof], stdout=subprocess.DEVNULL,
                           stderr=subprocess.PIPE, env=env,
                           timeout=TIME_LIMIT)
        check(r.returncode == 0, f"go tool pprof -raw {prof} ({extra} "
              f"{opts}): {r.stderr.decode(errors='replace')[-1000:]}")


def hostile_modules():
    d = os.path.join(DIR, "mods")
    os.makedirs(d)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    os.mkdir(os.path.join(d, "subdir"))
    with open(os.path.join(d, "notelf.so"), "w") as f:
        f.write("not an ELF file\n")
    os.symlink("/dev/zero", os.path.join(d, "to-zero.so"))
    paths = [fifo, "/dev/zero", "/dev/urandom", "/dev/tty", "/proc/self/mem",
             "/proc/kmsg", os.path.join(d, "subdir"),
             os.path.join(d, "to-zero.so"), os.path.join(d, "notelf.so"),
             os.path.join(d, "missing.so")]
    dump = os.path.join(d, "mods.rtprof")
    gen("modules", dump, *paths)
    prof = os.path.join(d, "mods.json")
    out, _ = run([M2G, "--quiet", dump, "-o", prof], want=(0,))
    with open(prof) as f:
        probs = json.load(f)["profileGatheringLog"]["symbolication"][
            "moduleProblems"]
    check(sorted(probs) == sorted(f"{p}: not usable" for p in paths),
          f"module problems differ: {probs}")
    leaks = (b"not found", b"No such", b"ermission", b"ELF", b"directory",
             b"device", b"FIFO", b"fifo:", b"regular")
    check(not any(w in out for w in leaks), f"msgpack2gecko says: {out}")
    out, _ = run([M2G, "--quiet", "--format", "pprof", dump, "-o",
                  prof + ".pb.gz"], want=(0,))
    check(not any(w in out for w in leaks), f"--format pprof says: {out}")
    pprof_too(dump, (0,))
    for opts in ([], ["--no-symbols"]):
        out, _ = run([RTPROF, "summarize"] + opts + [dump], want=(0,))
        check(not any(w in out for w in leaks), f"summarize says: {out}")
        # The samples' frames stay addresses (nothing to symbolize from).
        check(b"0x400901234" in out, f"summarize {opts}: no hex frame: {out}")
    print(f"test_hostile: {len(paths)} hostile module paths: not usable, "
          "alike; no tool blocked")


def undefined_behaviour():
    for name in ("extremes", "badheader"):
        dump = os.path.join(DIR, f"{name}.rtprof")
        gen(name, dump)
        prof = os.path.join(DIR, f"{name}.json")
        m2g_ok = (0,) if name == "extremes" else (1,)  # damage: exit 1
        run([M2G, "--quiet", dump, "-o", prof], want=m2g_ok)
        run([M2G, "--quiet", "--from", "1", "--to", "5", dump, "-o", prof],
            want=m2g_ok)
        run([M2G, "--info", dump], want=m2g_ok)
        pprof_too(dump, m2g_ok)
        pprof_too(dump, m2g_ok, "--from", "1", "--to", "5")
        run([INSPECT, dump], want=(0, 1))
        run([INSPECT, "-v", dump], want=(0, 1))
        run([RTPROF, "summarize", dump], want=(0, 1))
        run([RTPROF, "summarize", "--folded", dump], want=(0, 1))
    print("test_hostile: extreme clocks and pids, module-less native "
          "frames, bad headers: exits as documented")


def escapes():
    dump = os.path.join(DIR, "escapes.rtprof")
    gen("escapes", dump)
    prof = os.path.join(DIR, "escapes.json")
    conv, _ = run([M2G, dump, "-o", prof], want=(0,))
    pprof_too(dump, (0,))
    outs = {
        "msgpack2gecko": conv,
        "msgpack2gecko --format pprof": run([
            M2G, "--format", "pprof", dump, "-o", prof + ".pb.gz"],
            want=(0,))[0],
        "msgpack2gecko --info": run([M2G, "--info", dump], want=(0,))[0],
        "rtprof-inspect": run([INSPECT, dump], want=(0,))[0],
        "rtprof-inspect -v": run([INSPECT, "-v", dump], want=(0,))[0],
        "summarize dump": run([RTPROF, "summarize", dump], want=(0,))[0],
        "summarize profile": run([RTPROF, "summarize", prof], want=(0,))[0],
        "summarize --folded": run([RTPROF, "summarize", "--folded", dump],
                                  want=(0,))[0],
    }
    for what, out in outs.items():
        m = BAD_BYTES.search(out)
        check(m is None, f"{what}: raw control {m and m.group()!r} at "
              f"{m and m.start()}: {out[:2000]!r}")
    shown = rb"\x1b]0;pwned\x07\x1b[2J\x7f\xc2\x9b31m"
    for what in ("msgpack2gecko --info", "rtprof-inspect", "rtprof-inspect -v",
                 "summarize dump", "summarize profile", "summarize --folded"):
        # Folded stacks use ';' between frames: a ';' in a name is ':'.
        want = shown.replace(b";", b":") if "folded" in what else shown
        check(want in outs[what], f"{what}: the escaped names are not "
              f"shown: {outs[what][:2000]!r}")
    for word in (b"worker", b"proc"):
        check(word + shown in outs["rtprof-inspect"],
              f"rtprof-inspect: {word} not shown escaped")
    for word in (b"marker", b"counter", b"Schema", b"/nonexistent/lib"):
        check(word + shown in outs["rtprof-inspect -v"],
              f"rtprof-inspect -v: {word} not shown escaped")
    for word in (b"read", b"worker", b"label"):
        check(word + shown in outs["summarize dump"],
              f"summarize: {word} not shown escaped")
    print("test_hostile: escapes: no raw control in "
          f"{len(outs)} outputs, every string shown escaped")


def bogus_headers():
    dump = os.path.join(DIR, "bogus.rtprof")
    gen("bogus", dump, 20000)
    out, cpu = run([INSPECT, dump], want=(1,))
    check(b"20000 bad frames" in out and b"1 sessions" in out,
          f"rtprof-inspect: {out[-600:]}")
    print(f"test_hostile: rtprof-inspect: 20000 bogus 16 MiB headers in "
          f"{cpu:.2f} s of CPU")
    check(cpu < CPU_LIMIT, f"rtprof-inspect took {cpu:.1f} s of CPU")
    cap = os.path.join(DIR, "cap-bogus")
    with open(dump, "rb") as f:
        out, cpu = run([RTPROF, "capture", "-", "-o", cap], want=(1,),
                       stdin=f)
    print(f"test_hostile: rtprof capture: the same in {cpu:.2f} s of CPU")
    check(cpu < CPU_LIMIT, f"rtprof capture took {cpu:.1f} s of CPU")
    check(os.listdir(cap) == ["capture-1-600d0001.rtprof"],
          f"capture wrote {os.listdir(cap)}")


def many_sessions():
    dump = os.path.join(DIR, "sessions.rtprof")
    gen("sessions", dump, 5000)
    for opts, files in (([], 1000), (["--max-sessions", "7"], 7)):
        cap = os.path.join(DIR, f"cap-sessions-{files}")
        with open(dump, "rb") as f:
            out, _ = run([RTPROF, "capture", "-", "-o", cap] + opts,
                         want=(1,), stdin=f)
        n = len(os.listdir(cap))
        check(n == files, f"capture {opts}: {n} files, want {files}")
        check(f"--max-sessions {files} reached".encode() in out and
              f"{5000 - files} more session(s)".encode() in out,
              f"capture {opts}: no cap message: {out[-800:]}")
    out, _ = run([RTPROF, "capture", "--max-sessions", "0", "-", "-o",
                  os.path.join(DIR, "cap-0")], want=(2,))
    out, _ = run([RTPROF, "capture", "--help"], want=(0,))
    check(b"--max-sessions N" in out, "capture --help lacks --max-sessions")
    out, _ = run([RTPROF, "summarize", "--help"], want=(0,))
    check(b"--no-symbols" in out, "summarize --help lacks --no-symbols")
    print("test_hostile: 5000 sessions: capture stops writing at the cap")


def sanitized(path):
    """Whether @path is an ASan or TSan build: they reserve terabytes of shadow
    address space, so RLIMIT_AS cannot bound it (and it runs slower)."""
    with open(path, "rb") as f:
        data = f.read()
        return b"__asan_init" in data or b"__tsan_init" in data


SANITIZED = sanitized(M2G)
GROW_AS = 256 << 20      # address space of one growth run
GROW_CPU = 60 if SANITIZED else 10      # CPU seconds of one growth run


def limited():
    if not SANITIZED:
        resource.setrlimit(resource.RLIMIT_AS, (GROW_AS, GROW_AS))
    resource.setrlimit(resource.RLIMIT_CPU, (GROW_CPU, GROW_CPU))


def run_limited(args, what):
    """Runs @args under GROW_AS and GROW_CPU; fails unless it exits 0.
    Returns stdout and the CPU seconds it took."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=limited, timeout=TIME_LIMIT)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    check(r.returncode == 0, f"{what}: exit {r.returncode} under "
          f"{GROW_AS >> 20} MiB / {GROW_CPU} s of CPU:\n"
          f"{r.stderr.decode(errors='replace')[-1000:]}")
    print(f"test_hostile: {what}: {cpu:.2f} s of CPU within " +
          ("no memory limit (ASan)" if SANITIZED else
           f"{GROW_AS >> 20} MiB of address space"))
    return r.stdout, cpu


def convert_limited(mode, n):
    dump = os.path.join(DIR, f"grow-{mode}.rtprof")
    gen(mode, dump, n)
    prof = os.path.join(DIR, f"grow-{mode}.json")
    size = os.path.getsize(dump) >> 20
    run_limited([M2G, "--quiet", dump, "-o", prof],
                f"msgpack2gecko, {mode} {n} ({size} MiB)")
    run_limited([M2G, "--quiet", "--format", "pprof", dump, "-o",
                 prof + ".pb.gz"],
                f"msgpack2gecko --format pprof, {mode} {n} ({size} MiB)")
    with open(prof) as f:
        return json.load(f)


def growth():
    p = convert_limited("schemas", 20000)
    procs = p["processes"]
    check(len(procs) == 19999, f"schemas: {len(procs)} sub-processes")
    check(all(q["meta"]["markerSchema"][0]["name"] == "Typed"
              for q in procs), "schemas: a session lost its schema")
    p = convert_limited("samepid", 8000)
    pids = [p["threads"][0]["pid"]] + [q["threads"][0]["pid"]
                                       for q in p["processes"]]
    check(len(set(pids)) == 8000, f"samepid: {len(set(pids))} pids")
    check(all((int(x) - 7000) % 4194304 == 0 for x in pids),
          "samepid: a pid not of the form 7000 + k * 4194304")
    p = convert_limited("threads", 100000)
    tids = {t["tid"] for t in p["threads"]}
    check(len(tids) >= 100000, f"threads: {len(tids)} threads shown")
    for mode, n, want in (("threads", 300000, b"(tid 300999)"),
                          ("strings", 400000, b"call399999")):
        dump = os.path.join(DIR, f"grow-sum-{mode}.rtprof")
        gen(mode, dump, n)
        out, _ = run_limited([RTPROF, "summarize", "--top", "1000000",
                              dump], f"summarize, {mode} {n}")
        check(want in out, f"summarize {mode}: {want} not in the output")


CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                       "gecko_check.py")


def converted(mode):
    """The profile of hostile_gen @mode, checked by gecko_check.py."""
    dump = os.path.join(DIR, f"{mode}.rtprof")
    gen(mode, dump)
    prof = os.path.join(DIR, f"{mode}.json")
    run([M2G, "--quiet", dump, "-o", prof], want=(0,))
    pprof_too(dump, (0,))
    r = subprocess.run([sys.executable, CHECKER, "--quiet", prof],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=TIME_LIMIT)
    check(r.returncode == 0, f"{mode}: gecko_check.py:\n"
          f"{r.stdout.decode(errors='replace')[:3000]}")
    with open(prof) as f:
        return json.load(f)


def all_processes(p):
    return [p] + p["processes"]


def rejected_profiles():
    p = converted("clocks")
    for q in all_processes(p):
        note = q["profileGatheringLog"].get("clockNote", "")
        check("not a plausible" in note, f"clocks: no clockNote: {note!r}")
        times = [row[1] for row in q["threads"][0]["samples"]["data"]]
        check(times and all(isinstance(t, (int, float)) for t in times),
              f"clocks: sample times {times}")
    p = converted("categories")
    top = [c["name"] for c in p["meta"]["categories"]]
    sub = p["processes"][0]
    check(all(c["name"] for c in sub["meta"]["categories"]),
          "categories: an unnamed category")
    for th in sub["threads"]:
        for m in th["markers"]["data"]:
            check(m[4] < len(top), f"categories: marker category {m[4]} "
                  f"of {len(top)}")
    schemas = sub["meta"]["markerSchema"]
    named = [s for s in schemas if s["name"] == "Marker type 5"]
    check(all(s["name"] for s in schemas) and len(named) == 1 and
          [(f["key"], f["label"]) for f in named[0]["data"]] ==
          [("field1", "Field 1")],
          f"categories: the unnamed schema and field: {schemas}")
    p = converted("wrap")
    times = [row[1] for row in p["threads"][0]["samples"]["data"]]
    check(len(times) >= 6 and times == sorted(times),
          f"wrap: sample times {times}")
    print("test_hostile: absurd clock rates, categories past the top "
          "level's, empty names, a wrapping tick counter: accepted by "
          "gecko_check.py")


def not_utf8():
    dump = os.path.join(DIR, "utf8.rtprof")
    gen("utf8", dump)
    prof = os.path.join(DIR, "utf8.json")
    run([M2G, "--quiet", dump, "-o", prof], want=(0,))
    with open(prof, encoding="utf-8") as f:
        p = json.load(f)
    fix = "\ufffda\ufffdb\ufffd\ufffdc\ufffd\ufffd\ufffdd\ufffd\ufffd"
    want = {"proc" + fix, "worker" + fix, "label" + fix}
    th = [t for t in p["threads"] if t["name"] == "worker" + fix]
    check(th and th[0]["processName"] == "proc" + fix and
          "label" + fix in th[0]["stringTable"],
          f"utf8: the Gecko profile's names: {p['threads']!r:.2000}")
    pprof_too(dump, (0,))
    if GO is None:
        return
    env = dict(os.environ, HOME=DIR, PPROF_TMPDIR=DIR)
    r = subprocess.run([GO, "tool", "pprof", "-symbolize=none", "-raw",
                        dump + ".pb.gz"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, env=env, timeout=TIME_LIMIT)
    raw = r.stdout.decode("utf-8")      # strict: the profile is UTF-8
    check(all(w in raw for w in want), f"utf8: pprof -raw: {raw[:2000]}")
    print("test_hostile: names not UTF-8: U+FFFD in both profiles")


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    hostile_modules()
    undefined_behaviour()
    escapes()
    bogus_headers()
    many_sessions()
    growth()
    rejected_profiles()
    not_utf8()
    print("test_hostile: ok")


if __name__ == "__main__":
    main()
