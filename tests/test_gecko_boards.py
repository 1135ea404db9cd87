"""Several boards in one profile (msgpack2gecko), lined up by the clock pair
each session records.

    test_gecko_boards.py GEN_DUMP MSGPACK2GECKO TESTS_DIR WORKDIR

Two "boards" (gen_dump): board A booted 5 hours before its session, board
B 100 seconds before; their wall clocks say B's session started 1.25 s
after A's. The converted profile has both processes, B's startTime 1250 ms
after A's (exactly: the wall clocks, not the monotonic clocks, which are
5 h apart), whichever dump comes first on the command line; each board's
samples lie within its own session, at the same offsets from its start as
in the dump. gecko_check.py accepts the profile.
"""

import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, load  # noqa: E402

GEN, M2G, SRC, DIR = sys.argv[1:5]
WALL = 1700000000000000000
BOARDS = {  # pid: (monotonic ns at the start, wall ns at the start)
    4101: (5 * 3600 * 10**9, WALL),
    4102: (100 * 10**9, WALL + 1250 * 10**6),
}


def run(args):
    r = subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    check(r.returncode == 0, f"{args[0]}: exit {r.returncode}: "
          f"{r.stderr.decode()}")
    return r


def main():
    os.makedirs(DIR, exist_ok=True)
    dumps = {}
    for pid, (mono, wall) in BOARDS.items():
        dumps[pid] = os.path.join(DIR, f"board-{pid}.rtprof")
        run([GEN, "--size", "256K", "--threads", "2", "--pid", str(pid),
             "--mono", str(mono), "--wall", str(wall), "-o", dumps[pid]])
    for order in ((4101, 4102), (4102, 4101)):
        out = os.path.join(DIR, f"boards-{order[0]}.json")
        run([M2G, "--quiet", dumps[order[0]], dumps[order[1]], "-o", out])
        g = subprocess.run([sys.executable, os.path.join(SRC, "gecko_check.py"),
                            "--werror", "--expect-processes", "2", out])
        check(g.returncode == 0, f"gecko_check.py rejects {out}")
        p = load(out)
        procs = [p] + p["processes"]
        starts = {}
        for pr in procs:
            pids = {int(t["pid"]) for t in pr["threads"]}
            check(len(pids) == 1, f"threads of several pids {pids}")
            starts[pids.pop()] = pr["meta"]["startTime"]
        check(sorted(starts) == sorted(BOARDS), f"processes {sorted(starts)}")
        d = starts[4102] - starts[4101]
        print(f"test_gecko_boards: {order}: B starts {d:.3f} ms after A")
        check(abs(d - 1250) < 0.01, f"B starts {d} ms after A, want 1250 "
              "(the wall clocks; the monotonic clocks are 5 h apart)")
        # Each board's samples are at the same offsets from its own start
        # as in its dump (gen_dump: the first sampler tick 10 ms into the
        # session, the samples just after it).
        for pr in procs:
            for th in pr["threads"]:
                sm = th["samples"]
                if th["name"] in ("GeckoMain", "audio"):
                    t0 = sm["data"][0][sm["schema"]["time"]]
                    check(10 <= t0 <= 12, f"pid {th['pid']} {th['name']}: "
                          f"first sample at {t0} ms, want 10-12")
    print("test_gecko_boards: ok")


main()
