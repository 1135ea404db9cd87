#!/usr/bin/env python3
"""record_cost.py - what `rtprof record` costs a program, side by side with
the same command unrecorded in the same run (issue 15, part 5).

Usage: bench/record_cost.py RTPROF [RUNS]

1. A shell running /bin/true 40 times: wall time plain vs recorded
   (conversion included), and the added time per recorded process.
2. A small process (grep reading its own VmHWM): max RSS plain vs under
   the library.
3. make -j2 of a generated 20-file C project: wall plain vs recorded, and
   the CPU time (user + system) of the whole process tree, which a loaded
   machine does not change much: on 2 CPUs that make -j2 keeps busy, the
   CPU ratio is what the wall ratio tends to.
Each figure is the median of RUNS runs (3 by default).
"""
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

RTPROF = os.path.abspath(sys.argv[1])
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 3
WORK = tempfile.mkdtemp(prefix="rtprof-cost-")


def timed(cmd, cwd=WORK):
    t = time.monotonic()
    subprocess.run(cmd, cwd=cwd, check=False, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.monotonic() - t


def rec(out, cmd):
    return [RTPROF, "record", "-o", os.path.join(WORK, out), "--"] + cmd


def median(f):
    return statistics.median(f() for _ in range(RUNS))


def cpu_timed(cmd, cwd):
    """(wall s, CPU s of the process tree): the launcher is a subreaper
    and waits for every process, so their times reach it."""
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = timed(cmd, cwd=cwd)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)


def hwm_kib(env):
    """VmHWM (max RSS) of a small process, `grep VmHWM /proc/self/status`,
    read by itself after the library's constructor started its session."""
    out = subprocess.run(["grep", "VmHWM", "/proc/self/status"], env=env,
                         stdout=subprocess.PIPE, text=True,
                         pass_fds=[int(env["RTPROF_FD"])] if "RTPROF_FD" in
                         env else []).stdout
    return int(out.split()[1])


def main():
    loop = ["sh", "-c", "for i in $(seq 40); do /bin/true; done"]
    plain = median(lambda: timed(loop))
    recd = median(lambda: timed(rec("loop.json.gz", loop)))
    per = (recd - plain) / 41 * 1000
    print(f"sh running /bin/true x40: plain {plain:.3f} s, recorded "
          f"{recd:.3f} s: {per:.1f} ms per recorded process (41 processes)")

    # A small process's own max RSS under the library, with RTPROF_FD as
    # the launcher gives it (a pipe: its dump fits).
    pre = os.path.join(os.path.dirname(RTPROF), "librtprof-preload.so")
    r, w = os.pipe()
    plain_rss = median(lambda: hwm_kib(dict(os.environ)))
    rec_rss = median(lambda: hwm_kib(dict(os.environ, LD_PRELOAD=pre,
                                          RTPROF_FD=str(w))))
    os.close(w)
    os.close(r)
    print(f"grep's max RSS (VmHWM): plain {plain_rss / 1024:.1f} MiB, "
          f"recorded {rec_rss / 1024:.1f} MiB "
          f"(+{(rec_rss - plain_rss) / 1024:.1f} MiB)")

    proj = os.path.join(WORK, "proj")
    os.makedirs(proj)
    for i in range(20):
        with open(os.path.join(proj, f"f{i}.c"), "w") as f:
            f.write("#include <stdio.h>\n#include <stdlib.h>\n"
                    "#include <string.h>\n")
            for k in range(40):
                f.write(f"int f{i}_{k}(int x) {{ char b[64]; "
                        f"snprintf(b, sizeof b, \"%d\", x * {k}); "
                        f"return (int)strlen(b) + atoi(b); }}\n")
    objs = " ".join(f"f{i}.o" for i in range(20))
    with open(os.path.join(proj, "Makefile"), "w") as f:
        f.write(f"all: {objs}\n%.o: %.c\n\tcc -O2 -c $< -o $@\n"
                f"clean:\n\trm -f {objs}\n")

    def make(cmd):
        subprocess.run(["make", "-s", "clean"], cwd=proj,
                       stdout=subprocess.DEVNULL)
        return cpu_timed(cmd, cwd=proj)
    plain, recd = [], []
    for _ in range(RUNS):       # side by side, alternating
        plain.append(make(["make", "-s", "-j2"]))
        recd.append(make(rec("make.json.gz", ["make", "-s", "-j2"])))
    mplain = statistics.median(w for w, _ in plain)
    mrec = statistics.median(w for w, _ in recd)
    cplain = statistics.median(c for _, c in plain)
    crec = statistics.median(c for _, c in recd)
    print(f"make -j2, 20 C files: plain {mplain:.2f} s, recorded "
          f"{mrec:.2f} s ({mrec / mplain:.2f}x); CPU of the tree: plain "
          f"{cplain:.2f} s, recorded {crec:.2f} s ({crec / cplain:.2f}x)")
    shutil.rmtree(WORK, ignore_errors=True)


main()
