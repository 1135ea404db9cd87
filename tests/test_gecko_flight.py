#!/usr/bin/env python3
"""test_gecko_flight.py - recycled data of a real flight-recorder dump in
the converted profile (tests/CMakeLists.txt, test_gecko_flight).

    test_gecko_flight.py REC MSGPACK2GECKO TESTS_DIR WORKDIR

REC is test_gecko_flight_rec (keep the two in step): it records N "Seq"
markers (field n = 0..N-1) into a flight recorder far smaller than them and
prints what it counted (tid, n, recycled, dropped_full, dropped_nested).
The dump is converted (exit 0, accepted by gecko_check.py) and:
- profileGatheringLog.threads for the thread: recycled equals the
  recorder's count and is > 0; the trailer's drops equal the recorder's;
  recordsDecoded == recorded (nothing kept was lost), recordsMissing 0;
- the Seq markers in the profile are exactly the records kept: recorded
  of them, in order, the newest (N-1) present, the oldest (0) absent, and
  kept + recycled + dropped == N (every marker is kept, recycled or counted
  as dropped); with no drop, they are exactly N-kept .. N-1.
Standard library only.
"""
import os
import shutil
import subprocess
import sys

from gecko_testlib import check, fail, load, markers


def main():
    rec, m2g, src, work = sys.argv[1:5]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    dump = os.path.join(work, "flight.rtprof")
    prof = os.path.join(work, "flight.json")

    r = subprocess.run([rec, dump], stdout=subprocess.PIPE, text=True,
                       timeout=90)
    check(r.returncode == 0, f"test_gecko_flight_rec exit {r.returncode}")
    got = {k: int(v) for k, v in
           (line.split(" ", 1) for line in r.stdout.splitlines())}
    n, recycled = got["n"], got["recycled"]
    dropped = got["dropped_full"] + got["dropped_nested"]
    check(recycled > 0, f"the recorder recycled nothing: {got}")

    r = subprocess.run([m2g, dump, "-o", prof], stderr=subprocess.PIPE,
                       text=True, timeout=90)
    check(r.returncode == 0,
          f"msgpack2gecko exit {r.returncode}: {r.stderr}")
    r = subprocess.run([sys.executable, os.path.join(src, "gecko_check.py"),
                        prof], timeout=90)
    check(r.returncode == 0, "gecko_check.py rejects the profile")

    p = load(prof)
    log = p["profileGatheringLog"]
    check(log["trailer"] is True and log["damageReports"] == 0,
          f"trailer {log['trailer']}, damage {log['damage']}")
    rows = [t for t in log["threads"] if t["tid"] == got["tid"]]
    check(len(rows) == 1, f"thread {got['tid']} in the log: {log['threads']}")
    t = rows[0]
    check(t["recycled"] == recycled,
          f"log recycled {t['recycled']}, the recorder counted {recycled}")
    check(t["trailerDroppedFull"] == got["dropped_full"] and
          t["trailerDroppedNested"] == got["dropped_nested"],
          f"log drops {t}, the recorder counted {got}")
    kept = t["recorded"]
    check(kept > 0 and t["recordsDecoded"] == kept and
          t["recordsMissing"] == 0, f"log records {t}")
    check(kept + recycled + dropped == n,
          f"kept {kept} + recycled {recycled} + dropped {dropped} != {n}")

    th = [x for x in p["threads"] if x["tid"] == got["tid"]]
    check(len(th) == 1, "no profile thread for the recording thread")
    seq = [m["data"]["n"] for m in markers(th[0]) if m["name"] == "Seq"]
    check(len(seq) == kept, f"{len(seq)} Seq markers, {kept} kept")
    check(seq == sorted(set(seq)), "Seq markers out of order or repeated")
    check(seq[-1] >= n - 1 - dropped,
          f"newest marker {seq[-1]}, want {n - 1} ({dropped} dropped)")
    check(seq[0] > 0, "the oldest marker was kept")
    if dropped == 0:
        check(seq == list(range(n - kept, n)),
              f"kept markers are not {n - kept}..{n - 1}")
    else:
        check(seq[0] >= n - kept - dropped,
              f"oldest kept {seq[0]}: older than recycling allows")
    print(f"test_gecko_flight: ok (kept {kept}, recycled {recycled}, "
          f"dropped {dropped} of {n})")


if __name__ == "__main__":
    try:
        main()
    except subprocess.TimeoutExpired as e:
        fail(f"timeout: {e}")
