"""What the tools say about their inputs (issue 16, item 4).

    test_cli_inputs.py RTPROF MSGPACK2GECKO GEN_DUMP WORKDIR

Dumps from gen_dump (two sessions of pid 9201, each of four threads:
"audio", "main", "worker 2", "worker 3"), converted together. Checked:
- `rtprof summarize` on JSON that is not a profile (an object without
  meta.version and threads), on a profile cut short (plain and gzip):
  exit 2, a message naming the file and saying why, nothing on stdout;
- `rtprof view` on the same files and on a file that is no dump: exit 2,
  the same message, no address printed (nothing served);
- `--thread nosuch` (msgpack2gecko, rtprof view): exit 2, a message
  naming the thread and listing the threads there are, no output file;
  `--thread audio` still converts;
- summarize's CPU table cut at --top 3 of 8 threads: the 3 rows, "(5
  more threads)" with their time, and the total of all 8 (sums right);
- `--info` on a whole dump "session ends with a trailer", on a cut one
  "session has no trailer";
- a reused pid: the second process is "synthapp (pid 9201, profile pid
  P)", never "(pid 9201) (pid P)", and the two processes stay apart.
"""

import gzip
import os
import re
import subprocess
import sys

from gecko_testlib import check, load

RTPROF, M2G, GEN, WORK = sys.argv[1:5]


def run(args, timeout=60):
    p = subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout, p.stderr


def path(name):
    return os.path.join(WORK, name)


def make_inputs():
    os.makedirs(WORK, exist_ok=True)
    for seed, name in ((1, "a.rtprof"), (2, "b.rtprof")):
        rc, _, err = run([GEN, "--size", "64K", "--pid", "9201", "--seed",
                          str(seed), "-o", path(name)])
        check(rc == 0, f"gen_dump: {rc} {err}")
    rc, _, err = run([M2G, "-q", path("a.rtprof"), path("b.rtprof"), "-o",
                      path("ab.json")])
    check(rc == 0, f"msgpack2gecko: {rc} {err}")
    with open(path("ab.json"), "rb") as f:
        whole = f.read()
    with open(path("cut.json"), "wb") as f:
        f.write(whole[:len(whole) // 2])
    with open(path("cut.json.gz"), "wb") as f:
        f.write(gzip.compress(whole)[:len(gzip.compress(whole)) // 2])
    with open(path("foreign.json"), "w") as f:
        f.write('{"name": "not a profile", "threads": 3}\n')
    with open(path("foreign.txt"), "w") as f:
        f.write("hello, this is no dump\n" * 10)
    with open(path("a.rtprof"), "rb") as f:
        dump = f.read()
    with open(path("cut.rtprof"), "wb") as f:
        f.write(dump[:len(dump) - 100])


BAD = {"foreign.json": "no meta.version", "cut.json": "cut short",
       "cut.json.gz": "cut short"}


def check_summarize_refuses():
    for name, why in BAD.items():
        rc, out, err = run([RTPROF, "summarize", path(name)])
        check(rc == 2, f"summarize {name}: exit {rc}, want 2 ({err!r})")
        check(path(name) in err and why in err,
              f"summarize {name}: message {err!r} does not say {why!r}")
        check(out == "", f"summarize {name}: printed tables {out[:200]!r}")


def check_view_refuses():
    bad = dict(BAD, **{"foreign.txt": "not an rtprof dump"})
    for name, why in bad.items():
        rc, out, err = run([RTPROF, "view", "--no-open", "--grace", "0",
                            path(name)], timeout=20)
        check(rc == 2, f"view {name}: exit {rc}, want 2 ({err!r})")
        check(path(name) in err and why in err,
              f"view {name}: message {err!r} does not say {why!r}")
        check("from-url" not in out + err, f"view {name}: served: {out!r}")


def check_thread_filter():
    names = ['"audio"', '"main"', '"worker 2"', '"worker 3"']
    out_file = path("nosuch.json")
    for cmd in ([M2G, path("a.rtprof"), "--thread", "nosuch", "-o", out_file],
                [M2G, path("a.rtprof"), path("b.rtprof"), "--thread",
                 "nosuch", "-o", out_file],
                [RTPROF, "view", "--no-open", "--grace", "0", "--thread",
                 "nosuch", path("a.rtprof")]):
        rc, out, err = run(cmd, timeout=20)
        what = " ".join(os.path.basename(c) for c in cmd)
        check(rc == 2, f"{what}: exit {rc}, want 2 ({err!r})")
        check("--thread nosuch: no thread of that name" in err,
              f"{what}: message {err!r}")
        check(all(n in err for n in names),
              f"{what}: the message does not list every thread: {err!r}")
        check(not os.path.exists(out_file), f"{what}: left {out_file}")
        check("from-url" not in out + err, f"{what}: served: {out!r}")
    rc, _, err = run([M2G, "-q", path("a.rtprof"), "--thread", "audio", "-o",
                      path("audio.json")])
    check(rc == 0, f"--thread audio: exit {rc} {err!r}")
    kept = [t["name"] for t in load(path("audio.json"))["threads"]]
    check(sorted(kept) == ["Audio", "GeckoMain"], f"--thread audio: {kept}")


CPU_ROW = re.compile(r"^\s+([0-9.]+) ms  (.*)$")


def cpu_rows(text):
    """(ms, label) rows of the CPU-by-thread table."""
    lines = text.split("\nCPU time by thread")[1].split("\n\n")[0]
    return [(float(m.group(1)), m.group(2)) for m in
            map(CPU_ROW.match, lines.splitlines()[1:]) if m]


def check_summarize_table():
    rc, out, err = run([RTPROF, "summarize", path("ab.json")])
    check(rc == 0, f"summarize ab.json: {rc} {err!r}")
    full = cpu_rows(out)
    threads = [r for r in full if " / " in r[1]]
    check(len(threads) == 8, f"{len(threads)} thread rows: {full}")
    check(full[-1][1] == "total, 8 threads", f"no total row: {full[-1]}")
    check(abs(full[-1][0] - sum(ms for ms, _ in threads)) < 0.01,
          f"total {full[-1][0]} is not the rows' sum")
    for _, label in threads:
        check(not re.search(r"\(pid \d+\) \(pid", label),
              f"a doubled pid suffix: {label!r}")
    procs = {label.split(" / ")[0] for _, label in threads}
    check(len(procs) == 2 and "synthapp (pid 9201)" in procs and
          any(re.fullmatch(r"synthapp \(pid 9201, profile pid \d+\)", p)
              for p in procs),
          f"the two processes of pid 9201: {sorted(procs)}")

    rc, out, err = run([RTPROF, "summarize", "--top", "3", path("ab.json")])
    check(rc == 0, f"summarize --top 3: {rc} {err!r}")
    rows = cpu_rows(out)
    check(len(rows) == 5 and rows[:3] == threads[:3],
          f"--top 3: rows {rows}, the first 3 of {threads}")
    check(rows[3][1] == "(5 more threads)" and
          abs(rows[3][0] - sum(ms for ms, _ in threads[3:])) < 0.01,
          f"--top 3: {rows[3]}, want the 5 others' time")
    check(rows[4] == full[-1], f"--top 3: total {rows[4]}, want {full[-1]}")


def check_info():
    for name, want in (("a.rtprof", "session ends with a trailer"),
                       ("cut.rtprof", "session has no trailer")):
        rc, out, err = run([M2G, "--info", path(name)])
        check(rc in (0, 1), f"--info {name}: exit {rc} {err!r}")
        check(want in out, f"--info {name}: no {want!r} in {out!r}")
        check("no a trailer" not in out, f"--info {name}: {out!r}")


def main():
    make_inputs()
    check_summarize_refuses()
    check_view_refuses()
    check_thread_filter()
    check_summarize_table()
    check_info()
    print("test_cli_inputs: ok", file=sys.stderr)


main()
