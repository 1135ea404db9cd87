#!/usr/bin/env python3
"""test_pprof.py - msgpack2gecko --format pprof, read by Go's pprof.

    python3 tests/test_pprof.py MSGPACK2GECKO RTPROF DEMO GECKO_SAMPLES_GEN \
        WORKDIR

Dumps each converted twice (Gecko JSON, pprof):
- the demo (rtprof-demo -s 1): a real-time thread sampled from its
  labels, native stacks with debug info, threads asleep;
- tests/gecko_samples_gen's dumps: native frames merged with labels,
  a C++ function (demangled), SAME records (one without its SAMPLE:
  "(unknown stack)"), samples without frames, a thread never sampled,
  and a real recording of a real-time thread;
- `rtprof record` of a process tree nobody here wrote: sh running gzip
  and sort at once, so one profile of several processes (stripped
  programs: functions named lib+0x<start>; libc with its symbols).
`go tool pprof` (Debian's golang-go: scripts/deps.sh installs it) reads
each pprof profile:
- -raw: every sample's stack, frame by frame, equals the Gecko profile's
  (a native frame "name (in lib)" is pprof's function name with its
  mapping's file name; a label or "(no stack)" is the function alone),
  with the same count and the same CPU time (sum of threadCPUDelta) per
  (pid, tid, stack); the labels name the thread, process and host as
  the dump does, and the same dump given twice has a second session of
  its pid, labelled session 2; every mapping has a file and a build id;
- -top (by samples): every function's flat and cum counts equal those
  computed from the Gecko profile (leaf frames; stacks holding it);
- --from/--to and --thread keep the same samples in both formats.
A profile converted with --no-symbols has mappings without functions,
for pprof to symbolize. Threads the sampler never sampled (Gecko's
placeholder samples, without threadCPUDelta) have no pprof sample.
Standard library only, plus the go command.
"""
import collections
import os
import re
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, fail, load  # noqa: E402

M2G, RTPROF, DEMO, GEN, DIR = sys.argv[1:6]
PID_STEP = 4194304
GO = shutil.which("go")


def run(args, want=0, **kw):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300, **kw)
    if r.returncode != want:
        fail(f"{' '.join(args)}: exit {r.returncode}, want {want}: "
             f"{r.stderr.decode(errors='replace')[-2000:]}")
    return r.stdout.decode(errors="replace")


def pprof(*args):
    """go tool pprof's output; pprof symbolizes nothing itself here."""
    env = dict(os.environ, HOME=DIR, PPROF_TMPDIR=DIR, GOCACHE=os.path.join(
        DIR, "gocache"), GOFLAGS="-mod=mod")
    return run([GO, "tool", "pprof", "-symbolize=none", *args], env=env)


# ---------------------------------------------------------------- Gecko side

def gecko_samples(path):
    """{(pid, tid, stack): [count, cpu_ns]} of every sampled thread of a
    Gecko profile (stack outermost first, as its location strings)."""
    p = load(path)
    out = collections.defaultdict(lambda: [0, 0])
    for pr in [p] + p.get("processes", []):
        for th in pr["threads"]:
            sch = th["samples"]["schema"]
            if "threadCPUDelta" not in sch:
                continue        # placeholder samples: not the sampler's
            st, ft, sk = th["stringTable"], th["frameTable"], th["stackTable"]
            for row in th["samples"]["data"]:
                s, names = row[sch["stack"]], []
                while s is not None:
                    srow = sk["data"][s]
                    f = ft["data"][srow[sk["schema"]["frame"]]]
                    names.append(st[f[ft["schema"]["location"]]])
                    s = srow[sk["schema"]["prefix"]]
                key = (int(th["pid"]) % PID_STEP, int(th["tid"]),
                       tuple(reversed(names)))
                out[key][0] += 1
                out[key][1] += row[sch["threadCPUDelta"]] or 0
    return out


def top_of(samples):
    """{function: [flat, cum]} as pprof -top counts them, by name."""
    top = collections.defaultdict(lambda: [0, 0])
    for (_, _, stack), (n, _) in samples.items():
        names = [short(x) for x in stack]
        top[names[-1]][0] += n
        for x in set(names):
            top[x][1] += n
    return top


def short(loc):
    """A Gecko location without its " (in lib)"."""
    m = re.match(r"^(.*) \(in [^()]*\)$", loc)
    return m.group(1) if m else loc


# ---------------------------------------------------------------- pprof side

LOC = re.compile(r"^\s*(\d+): 0x([0-9a-f]+)(?: M=(\d+))?"
                 r"(?: (.*) (\S*):(-?\d+) s=(\d+).*| ?)$")
MAP = re.compile(r"^(\d+): 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S*) "
                 r"(\S*)(.*)$")
SAMPLE = re.compile(r"^\s*(\d+)\s+(\d+): ([\d ]+)$")
LABEL = re.compile(r"(\w+):\[([^\]]*)\]")


def parse_raw(text):
    """-raw's samples [(count, cpu, [loc ids leaf first], labels)],
    locations {id: (mapping, [function names, innermost first])} and
    mappings {id: (file, build id, flags)}."""
    samples, locs, maps, part, last = [], {}, {}, None, None
    for line in text.splitlines():
        if line.startswith("Samples:"):
            part = "s"
            continue
        if line.startswith("Locations"):
            part = "l"
            continue
        if line.startswith("Mappings"):
            part = "m"
            continue
        if part == "s":
            m = SAMPLE.match(line)
            if m:
                samples.append((int(m.group(1)), int(m.group(2)),
                                [int(x) for x in m.group(3).split()], {}))
            elif samples and LABEL.search(line):
                samples[-1][3].update(LABEL.findall(line))
        elif part == "l":
            m = LOC.match(line)
            if m and re.match(r"^\s*\d+:", line):
                last = int(m.group(1))
                locs[last] = (int(m.group(3) or 0), [m.group(4) or ""])
            elif line.strip():
                # An inlined frame's line under its location.
                m2 = re.match(r"^\s+(.*) (\S*):(-?\d+) s=(\d+)", line)
                check(m2 and last is not None, f"-raw line: {line!r}")
                locs[last][1].append(m2.group(1))
        elif part == "m":
            m = MAP.match(line)
            if m:
                maps[int(m.group(1))] = (m.group(5), m.group(6),
                                         m.group(7))
    return samples, locs, maps


def pprof_samples(path):
    """{(pid, tid, stack): [count, cpu_ns]} from -raw, each frame named as
    the Gecko profile names it; and the threads' labels."""
    samples, locs, maps = parse_raw(pprof("-raw", path))
    check(samples, f"{path}: -raw shows no sample")
    # A profile whose locations have no mapping gets a made-up one from
    # pprof: 0x0/0x0/0x0, no file.
    maps = {k: v for k, v in maps.items() if v[0] != "" or k != 1 or
            len(maps) != 1}
    for mid, (f, bid, flags) in maps.items():
        check(f, f"mapping {mid} has no file")
        check(re.fullmatch(r"[0-9a-f]{16,}", bid),
              f"mapping {mid} ({f}): build id {bid!r}")
    out = collections.defaultdict(lambda: [0, 0])
    names = {}
    for n, cpu, ids, lab in samples:
        stack = []
        for i in reversed(ids):         # outermost first
            mid, fns = locs[i]
            check(len(fns) == 1, f"location {i}: inlined frames {fns}")
            fn = fns[0]
            if mid in maps and not re.fullmatch(r"0x[0-9a-f]+", fn):
                fn += f" (in {os.path.basename(maps[mid][0])})"
            stack.append(fn)
        for k in ("pid", "tid", "thread", "process", "host"):
            check(k in lab, f"a sample without the label {k}: {lab}")
        check(HOST[0] is None or lab["host"] == HOST[0], f"host label {lab}")
        SESSIONS.add(int(lab.get("session", 1)))
        key = (int(lab["pid"]), int(lab["tid"]), tuple(stack))
        out[key][0] += n
        out[key][1] += cpu
        names[(int(lab["pid"]), int(lab["tid"]))] = (lab["process"],
                                                     lab["thread"])
    return out, names


SESSIONS = set()       # "session" labels seen (1: none)
HOST = [os.uname().nodename]    # the host label wanted (None: any)
TOP = re.compile(r"^\s*(\d+)\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+(.*)$")


def pprof_top(path):
    top = collections.defaultdict(lambda: [0, 0])
    text = pprof("-top", "-sample_index=samples", "-nodecount=1000000",
                 "-nodefraction=0", "-edgefraction=0", path)
    for line in text.splitlines():
        m = TOP.match(line)
        if m:
            top[m.group(3)][0] += int(m.group(1))
            top[m.group(3)][1] = max(top[m.group(3)][1], int(m.group(2)))
    check(top, f"{path}: no -top rows:\n{text}")
    return top


# ---------------------------------------------------------------- checks

def same(what, g, p):
    """The two {key: [count, cpu]} tables are equal."""
    gk, pk = set(g), set(p)
    for k in sorted(gk - pk, key=str)[:5]:
        print(f"only in Gecko: {k} {g[k]}", file=sys.stderr)
    for k in sorted(pk - gk, key=str)[:5]:
        print(f"only in pprof: {k} {p[k]}", file=sys.stderr)
    check(gk == pk, f"{what}: {len(gk - pk)} stacks only in the Gecko "
          f"profile, {len(pk - gk)} only in pprof's")
    for k in g:
        check(g[k] == p[k], f"{what}: {k}: Gecko {g[k]}, pprof {p[k]}")


def compare(dumps, name, *opts):
    """Convert @dumps both ways with @opts; return (Gecko samples, pprof
    names)."""
    js = os.path.join(DIR, f"{name}.json")
    pb = os.path.join(DIR, f"{name}.pb.gz")
    run([M2G, "-q", *opts, *dumps, "-o", js])
    run([M2G, "-q", "--format", "pprof", *opts, *dumps, "-o", pb])
    with open(pb, "rb") as f:
        check(f.read(2) == b"\x1f\x8b", f"{pb} is not gzipped")
    g = gecko_samples(js)
    p, names = pprof_samples(pb)
    same(f"{name} -raw", g, p)
    gt, pt = top_of(g), pprof_top(pb)
    check(set(gt) == set(pt), f"{name} -top: functions differ: "
          f"{sorted(set(gt) ^ set(pt))[:10]}")
    for fn in gt:
        check(gt[fn] == pt[fn], f"{name} -top {fn!r}: flat/cum Gecko "
              f"{gt[fn]}, pprof {pt[fn]}")
    total = sum(v[0] for v in g.values())
    print(f"test_pprof: {name}: {total} samples, {len(g)} stacks of "
          f"{len({k[:2] for k in g})} threads, {len(gt)} functions: "
          "the same in both profiles")
    return g, names


def demo():
    dump = os.path.join(DIR, "demo.rtprof")
    run([DEMO, "-o", dump, "-s", "1"])
    g, names = compare([dump], "demo")
    threads = {t for _, t in names.values()}
    check({"audio", "worker", "main"} <= threads, f"demo threads {threads}")
    # A window and a thread: the same samples in both.
    mid = compare([dump], "demo-window", "--from", "300", "--to", "700")[0]
    n = sum(v[0] for v in mid.values())
    check(0 < n < sum(v[0] for v in g.values()), f"window: {n} samples")
    # The same dump twice: a second session of the pid, labelled so.
    SESSIONS.clear()
    compare([dump, dump], "demo-twice")
    check(SESSIONS == {1, 2}, f"twice: session labels {SESSIONS}")
    w = compare([dump], "demo-worker", "--thread", "worker")[1]
    check({t for _, t in w.values()} == {"worker", "main"},
          f"--thread worker: {w} (the main thread is always kept)")
    # Without symbols, pprof is told to symbolize (no function in a
    # mapping's locations).
    pb = os.path.join(DIR, "nosym.pb.gz")
    run([M2G, "-q", "--format", "pprof", "--no-symbols", dump, "-o", pb])
    _, locs, maps = parse_raw(pprof("-raw", pb))
    check(maps and all("[FN]" not in fl for _, _, fl in maps.values()),
          f"--no-symbols: mappings {maps}")
    check(all(fns == [""] for mid, fns in locs.values() if mid != 0),
          "--no-symbols: a native location has a function")


def generated():
    """gecko_samples_gen's dumps: every kind of frame and sample."""
    d = os.path.join(DIR, "gen")
    os.makedirs(d)
    HOST[0] = None          # made-up hostnames
    run([GEN, d])
    g, _ = compare([os.path.join(d, "samples.rtprof")], "samples")
    frames = {f for k in g for f in k[2]}
    check("(unknown stack)" in frames, "samples: no (unknown stack)")
    check(any(f.startswith("rtprof_test::Mixer::process(int) (in ")
              for f in frames), f"samples: no demangled C++ name: {frames}")
    check(any(any(" (in " in f for f in s) and
              any(" (in " not in f and not f.startswith(("(", "0x"))
                  for f in s) for _, _, s in g),
          "samples: no stack of native and label frames together")
    compare([os.path.join(d, "real.rtprof")], "real")
    HOST[0] = os.uname().nodename


def tree():
    """A process tree of programs nobody here wrote, under rtprof record."""
    data = os.path.join(DIR, "words.txt")
    with open(data, "w") as f:
        for i in range(400000):
            f.write(f"{(i * 7919) % 100003} line {i * 31 % 977}\n")
    out = os.path.join(DIR, "tree.json.gz")
    sh = (f"gzip -9 -c {data} > /dev/null & sort -n {data} > /dev/null; "
          "wait")
    run([RTPROF, "record", "-o", out, "--", "sh", "-c", sh])
    d = os.path.join(DIR, "tree.rtprof.d")
    dumps = sorted(os.path.join(d, x) for x in os.listdir(d))
    g, names = compare(dumps, "tree")
    procs = {p for p, _ in names.values()}
    check(any(p.startswith("gzip") for p in procs) and
          any(p.startswith("sort") for p in procs),
          f"tree: processes {procs}")
    check(len({pid for pid, _ in names}) >= 2, f"tree: pids {names}")


def main():
    if GO is None:
        fail("the go command is missing (Debian's golang-go: "
             "scripts/deps.sh installs it)")
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)
    demo()
    generated()
    tree()
    print("test_pprof: ok")


if __name__ == "__main__":
    main()
