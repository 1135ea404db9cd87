#!/usr/bin/env python3
"""Sampling cost side by side with `perf record` (BENCHMARKS.md, "Sampling
side by side with perf").

    bench/perf_compare.py BUILD_DIR [--rounds N] [--work ITER]

BUILD_DIR holds bench/sampling_work (one busy thread at depth 10 doing a
fixed amount of work) and msgpack2gecko. Rounds interleave, in a shuffled
order each round:
  plain   the workload alone
  rtprof  linked with librtprof, RTPROF_FD to a file (1 kHz)
  perf-g  perf record -F 1000 -g (frame pointers: the workload has them)
  perf-dw perf record -F 1000 --call-graph dwarf,16384 (stack copies, as
          rtprof takes them)
Whole-process CPU of a run is user + system time of every process it
started (getrusage of the children: the workload and, for perf, perf
itself), medians over the rounds; "added" is the median minus plain's.
Then the same workload pinned to CPU 0 next to a CPU-bound competitor on
CPU 0 (it gets about half the CPU): rtprof's samples per CPU-second of the
busy thread against the requested 1000.

Targets (exit 1 when one fails, or when a run dropped samples):
  rtprof's added CPU <= 2 x perf -g's
  samples per CPU-second of the thread >= 0.97 x 1000, with a competitor
  sampler CPU per sample <= 15 us (the sampler thread's schedstat)
"""

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile


def children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(cmd, env=None, pass_fds=()):
    c0 = children_cpu()
    p = subprocess.run(cmd, env=env, pass_fds=pass_fds, capture_output=True,
                       text=True, check=True)
    vals = dict(re.findall(r"^(\S+) (\d+)$", p.stdout, re.M))
    return children_cpu() - c0, {k: int(v) for k, v in vals.items()}


def info(m2g, dump):
    out = subprocess.run([m2g, "--info", dump], capture_output=True,
                         text=True).stdout
    main = re.search(r'"main" main: \d+ records, (\d+) samples', out)
    drops = re.search(r"dropped at the source: (\d+)", out)
    method = re.search(r"^sampling: (\S+)", out, re.M)
    return (int(main.group(1)) if main else 0,
            int(drops.group(1)) if drops else -1,
            method.group(1) if method else "?")


def rtprof_run(work, m2g, iters, tmp, cpu_list=None):
    dump = os.path.join(tmp, "w.rtprof")
    with open(dump, "wb") as f:
        env = dict(os.environ, RTPROF_FD=str(f.fileno()))
        env.pop("RTPROF_SAMPLER", None)
        cmd = [work, str(iters)]
        if cpu_list is not None:
            cmd = ["taskset", "-c", cpu_list] + cmd
        cpu, vals = run(cmd, env=env, pass_fds=(f.fileno(),))
    samples, drops, method = info(m2g, dump)
    return cpu, vals, samples, drops, method


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--work", type=int, default=3000000000)
    a = ap.parse_args()
    work = os.path.join(a.build, "bench", "sampling_work")
    m2g = os.path.join(a.build, "msgpack2gecko")
    tmp = tempfile.mkdtemp(prefix="rtprof-perfcmp-")
    perf_data = os.path.join(tmp, "perf.data")
    res = {k: [] for k in ("plain", "rtprof", "perf-g", "perf-dw")}
    per_sample, rates, fails = [], [], []
    for rnd in range(a.rounds):
        order = list(res)
        random.shuffle(order)
        for k in order:
            if k == "plain":
                cpu, _ = run([work, str(a.work)])
            elif k == "rtprof":
                cpu, vals, n, drops, method = rtprof_run(work, m2g, a.work,
                                                         tmp)
                if drops != 0:
                    fails.append(f"round {rnd}: rtprof dropped {drops}")
                per_sample.append(vals["sampler-cpu-ns"] / max(1, n))
                rates.append(n / (vals["thread-cpu-ns"] / 1e9))
            else:
                cg = ["-g"] if k == "perf-g" else ["--call-graph",
                                                   "dwarf,16384"]
                cpu, _ = run(["perf", "record", "-q", "-F", "1000"] + cg +
                             ["-o", perf_data, "--", work, str(a.work)])
            res[k].append(cpu)
    med = {k: statistics.median(v) for k, v in res.items()}
    add = {k: med[k] - med["plain"] for k in res}
    print(f"whole-process CPU, median of {a.rounds} interleaved rounds"
          f" (sampling: {method}):")
    for k in res:
        print(f"  {k:8s} {med[k]:7.3f} s  added {add[k]:+7.3f} s"
              f" ({100 * add[k] / med['plain']:+5.1f}%)"
              f"  runs {' '.join(f'{x:.3f}' for x in res[k])}")
    ps = statistics.median(per_sample) / 1e3
    rate = statistics.median(rates)
    print(f"  rtprof: {rate:.0f} samples per CPU-second of the thread,"
          f" sampler {ps:.1f} us per sample")
    # With a competitor on the same CPU.
    comp = subprocess.Popen(["taskset", "-c", "0", "sh", "-c",
                             "while :; do :; done"])
    crates = []
    try:
        for _ in range(3):
            _, vals, n, drops, _ = rtprof_run(work, m2g, a.work // 2, tmp,
                                              cpu_list="0")
            crates.append(n / (vals["thread-cpu-ns"] / 1e9))
            if drops != 0:
                fails.append(f"competitor run dropped {drops}")
    finally:
        comp.kill()
        comp.wait()
    crate = statistics.median(crates)
    print(f"  with a CPU-bound competitor on its CPU: {crate:.0f} samples"
          f" per CPU-second of the thread (runs"
          f" {' '.join(f'{x:.0f}' for x in crates)})")
    targets = [
        ("added CPU <= 2 x perf -g's", add["rtprof"] <= 2 * max(add["perf-g"],
                                                                 0.001)),
        ("samples per CPU-second >= 970 with a competitor", crate >= 970),
        ("sampler CPU per sample <= 15 us", ps <= 15),
    ]
    for name, ok in targets:
        print(f"  target {name}: {'pass' if ok else 'FAIL'}")
        if not ok:
            fails.append(name)
    for f in fails:
        print(f"FAIL: {f}", file=sys.stderr)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
