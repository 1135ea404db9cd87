"""rtprof record follows the whole process tree (tests/record_tree.c).

    test_record_tree.py RTPROF RECORD_TREE TESTS_DIR WORKDIR

- fork() without exec: the child (its pid printed by the parent) is a
  process of the profile, with samples in tree_fork_work, the function it
  works in for 200 ms (at least 5: a loaded machine's sampler gets few
  ticks); the parent is one too, and nothing else.
- system(): the program started by `sh -c` (a grandchild) is a process of
  the profile with samples in tree_system_work; sh is one too.
- Blocked markers carry the descriptor's path when the call blocked at
  least the threshold: a read() that waits 60 ms on a named FIFO has the
  FIFO's path; an fsync() of a known file has that file's path when it
  took the threshold (100 us) or more, none otherwise; no call under the
  threshold has a path.
- A process still working when the program has exited (`orphan`: the
  program starts `late` and exits at once): rtprof record waits for it;
  its samples in tree_late_work span at least 600 of its 800 ms, and no
  gathering note says it was cut or given up.
- --max-bytes is enforced by the launcher: a child started without
  RTPROF_MAX_BYTES in its environment (it does not know the cap; ~170 kB
  without it) still ends under the cap, its dump converts, and the
  gathering log says the per-process cap cut that dump (pid, dump).
- SIGKILL: `sh -c 'CHILD & sleep .3; kill -9 $!; wait'`: the killed
  process is in the profile with its samples in tree_spin_work (deep
  stacks in three threads: ~3 kB a tick, so that the sampler's chunks fill
  and reach the dump before the kill; what the chunks not yet full got in
  the last 200 ms dies with the process), its
  dump converts up to its last complete frame (no truncated tail), and the
  gathering log reports it truncated (pid, dump, "no trailer").
"""

import json
import os
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, frames_of, load, markers  # noqa: E402

RTPROF, TREE, SRC, DIR = sys.argv[1:5]


def procs(p):
    """{pid: process} of a multi-process profile."""
    out = {}
    for pr in [p] + p.get("processes", []):
        pids = {t.get("pid") for t in pr["threads"]}
        check(len(pids) == 1, f"a process with threads of pids {pids}")
        out[int(pids.pop())] = pr
    return out


def samples_in(pr, fn):
    return sum(1 for th in pr["threads"]
               for f in frames_of(th, short=True) if fn in f)


def gathering(pr):
    return pr["profileGatheringLog"].get("gathering") or []


def record(name, *cmd, opts=()):
    out = os.path.join(DIR, name + ".json.gz")
    r = subprocess.run([RTPROF, "record", "-o", out, *opts, "--", *cmd],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    check(r.returncode == 0, f"{name}: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    g = subprocess.run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                        out])
    check(g.returncode == 0, f"{name}: gecko_check.py rejects the profile")
    return load(out), r.stdout.decode(), r.stderr.decode()


def main():
    shutil.rmtree(DIR, ignore_errors=True)
    os.makedirs(DIR)

    # 1. fork() without exec: the child records on its own.
    p, out, err = record("fork", TREE, "fork")
    child = int(out.split()[1])
    ps = procs(p)
    check(child in ps, f"fork: child {child} not in the profile's "
          f"processes {sorted(ps)}: {err}")
    n = samples_in(ps[child], "tree_fork_work")
    check(n >= 5, f"fork: {n} samples of the child in tree_fork_work")
    check(len(ps) == 2, f"fork: {len(ps)} processes, want 2")
    print(f"test_record_tree: fork child: {n} samples in tree_fork_work",
          file=sys.stderr)

    # 2. system(): sh, then the program it runs (a grandchild).
    p, out, err = record("system", TREE, "system")
    ps = procs(p)
    grand = [pid for pid, pr in ps.items()
             if samples_in(pr, "tree_system_work") >= 5]
    check(len(grand) == 1 and len(ps) == 3, f"system: {len(ps)} processes, "
          f"{len(grand)} with samples in tree_system_work (want sh, the "
          "program and the program it ran)")

    # 2b. A process still writing when the program has exited: the
    # launcher waits for it, and its data is in the profile whole.
    t0 = time.monotonic()
    p, out, err = record("orphan", TREE, "orphan")
    took = time.monotonic() - t0
    late = int(out.split()[1])
    ps = procs(p)
    check(late in ps, f"orphan: {late} not in the profile's processes "
          f"{sorted(ps)}: {err}")
    n = samples_in(ps[late], "tree_late_work")
    times = [row[th["samples"]["schema"]["time"]]
             for th in ps[late]["threads"]
             for row, f in zip(th["samples"]["data"],
                               frames_of(th, short=True))
             if "tree_late_work" in f]
    span = max(times) - min(times) if times else 0
    print(f"test_record_tree: orphan: {n} samples in tree_late_work over "
          f"{span:.0f} ms, record took {took:.2f} s", file=sys.stderr)
    check(took >= 0.8 and n >= 20 and span >= 600, f"orphan: {n} samples "
          f"in tree_late_work over {span:.0f} ms, record took {took:.2f} s "
          "(it works 800 ms after its parent exited)")
    check(not gathering(ps[late]) and not gathering(p),
          f"orphan: gathering notes {gathering(ps[late])} {gathering(p)}")

    # 3. Blocked markers name what the descriptor is.
    fifo = os.path.join(DIR, "fifo")
    p, out, err = record("fifo", TREE, "fifo", fifo)
    bl = [m for th in p["threads"] for m in markers(th)
          if m["name"] == "Blocked"]
    reads = [m for m in bl if m["data"]["call"] == "read" and
             m["end"] - m["start"] >= 40]
    check(len(reads) == 1 and reads[0]["data"].get("path") == fifo,
          f"fifo: the blocked read {[m['data'] for m in reads]}")
    fs = [m for m in bl if m["data"]["call"] == "fsync"]
    check(len(fs) == 1, f"fifo: {len(fs)} fsync markers")
    slow = fs[0]["end"] - fs[0]["start"] >= 0.1
    check(fs[0]["data"].get("path") == (fifo + ".f" if slow else ""),
          f"fifo: fsync of {fs[0]['end'] - fs[0]['start']:.3f} ms, path "
          f"{fs[0]['data'].get('path')!r}")
    fast = [m["data"] for m in bl if m["end"] - m["start"] < 0.09 and
            m["data"].get("path")]
    check(not fast, f"fifo: calls under the threshold with a path {fast}")
    schema = [s for s in p["meta"]["markerSchema"] if s["name"] == "Blocked"]
    check(schema and any(f["key"] == "path" and f["format"] == "file-path"
                         for f in schema[0]["data"]),
          f"fifo: the Blocked schema {schema}")

    # 4. The per-process cap holds for a process that does not know it.
    cap = 30000
    p, out, err = record("cap", TREE, "nocap", opts=("--max-bytes",
                                                      str(cap)))
    cdir = os.path.join(DIR, "cap.rtprof.d")
    sizes = {f: os.path.getsize(os.path.join(cdir, f))
             for f in os.listdir(cdir) if f.endswith(".rtprof")}
    check(len(sizes) == 2 and max(sizes.values()) <= cap,
          f"cap: dumps {sizes}, cap {cap}")
    ps = procs(p)
    check(len(ps) == 2, f"cap: {len(ps)} processes, want 2")
    notes = [n for n in gathering(p)
             if n["what"] == "dump cut by the per-process byte cap"]
    check(len(notes) == 1 and notes[0].get("pid") in ps and
          notes[0]["pid"] != min(ps) and notes[0].get("dump") and
          notes[0].get("bytes") == cap and "--max-bytes" in
          notes[0].get("reason", ""),
          f"cap: the gathering log {gathering(p)}")
    print(f"test_record_tree: cap: dumps {sorted(sizes.values())}",
          file=sys.stderr)

    # 5. SIGKILL: the killed process keeps what it wrote.
    pidf = os.path.join(DIR, "killed.pid")
    p, out, err = record("kill", "sh", "-c",
                         f"'{TREE}' spin & echo $! > '{pidf}'; sleep .3; "
                         "kill -9 $!; wait")
    with open(pidf) as f:
        killed = int(f.read())
    ps = procs(p)
    check(killed in ps, f"kill: {killed} not in {sorted(ps)}: {err}")
    n = samples_in(ps[killed], "tree_spin_work")
    check(n >= 5, f"kill: {n} samples in tree_spin_work")
    lg = ps[killed]["profileGatheringLog"]
    check(lg.get("truncatedTailBytes") == 0 and lg.get("frames", 0) > 2,
          f"kill: the dump does not end at a whole frame: "
          f"{json.dumps(lg)[:600]}")
    tr = [n for n in gathering(p) if n["what"] == "dump truncated"]
    check(len(tr) == 1 and tr[0].get("pid") == killed and
          tr[0].get("dump") and "no trailer" in tr[0].get("reason", ""),
          f"kill: the gathering log {gathering(p)}")
    print(f"test_record_tree: killed process: {n} samples", file=sys.stderr)
    print("test_record_tree: ok", file=sys.stderr)


main()
