#!/bin/sh
# The soak test (issue 8; not in CI, see RELIABILITY.md):
#   scripts/soak.sh [--minutes N] [--memory BYTES] [--churn MS]
#                   [--interval S] [--build DIR]
#     --minutes N     how long to record (default 60)
#     --memory BYTES  the session's memory limit (default 524288: 122 chunks
#                     of 4 KiB)
#     --churn MS      a new short-lived thread every MS ms (default 50; 0:
#                     none)
#     --interval S    seconds between two RSS samples (default 5)
#     --build DIR     the -O2 build tree to use (default build-soak)
#
# Records tests/soak_rec.c (a real-time audio callback thread, three
# workers, a new short-lived thread every 50 ms (--churn), sampling every
# 1 ms, a dump
# request every 10 s) for the whole time with a small memory limit; the dump
# streams through a FIFO into tests/soak_check.c, which decodes it as it
# comes (nothing is stored). Every INTERVAL seconds the script samples the
# resident memory (VmRSS) of the recorder and of the reader. Then it checks:
#   - memory stayed flat: after a warm-up (the first fifth of the run, at
#     most 2 minutes), the highest RSS of the last quarter is at most the
#     highest of the first quarter plus 2% (at least 1 MiB); the same for
#     the profiler's own memory as the dump reports it (VALUES frames,
#     counter 65535; margin 256 KiB) and for the RSS the sampler reports
#     (counter 65534); the reader is allowed 16 MiB (its table of thread
#     ids grows with the churn, up to pid_max entries);
#   - every event and chunk is accounted for: per thread id, records
#     decoded == attempts - dropped - outside - late - recycled (from the
#     recorder's rtprof_thread_stats_get() lines), chunks in the dump ==
#     chunks taken (stats), the dump's counts (exited threads' THREAD
#     frame totals and the trailer's entries, added up per tid):
#     `recorded` == records decoded and drops == the threads' drops (>=
#     the DATA frames', which miss the drops after a thread's last chunk);
#     the session status: chunks written == DATA frames in the dump, bytes
#     written == bytes read, no chunk lost, no sink error; the dump whole
#     (a trailer, no damage, no chunk part missing or repeated, no EVENT);
#   - the trailer has at most 64 entries (exited threads are settled in
#     their THREAD frames: the recorder keeps no table of every thread).
# Prints the figures and "soak: OK", or what failed (exit 1). Everything
# (the samples, both programs' output) stays in DIR/soak/.
set -eu
cd "$(dirname "$0")/.."
minutes=60
memory=524288
interval=5
churn=50
build="build-soak"
while [ $# -gt 0 ]; do
	case $1 in
	--minutes) minutes=$2; shift 2 ;;
	--memory) memory=$2; shift 2 ;;
	--interval) interval=$2; shift 2 ;;
	--churn) churn=$2; shift 2 ;;
	--build) build=$2; shift 2 ;;
	*) sed -n '2,11p' "$0" >&2; exit 2 ;;
	esac
done
for v in "$minutes" "$memory" "$interval" "$churn"; do
	case $v in
	'' | *[!0-9]*) echo "soak.sh: not a number: $v" >&2; exit 2 ;;
	esac
done
if [ "$minutes" -lt 1 ] || [ "$interval" -lt 1 ]; then
	echo "soak.sh: --minutes and --interval must be at least 1" >&2
	exit 2
fi
command -v python3 >/dev/null || { echo "soak.sh: needs python3" >&2; exit 2; }

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DRTPROF_BUILD_BENCH=OFF >/dev/null
cmake --build "$build" --target soak_rec soak_check -j"$(nproc)" >/dev/null
work=$build/soak
rm -rf "$work"
mkdir -p "$work"
mkfifo "$work/dump.fifo"
secs=$((minutes * 60))
echo "soak.sh: recording for $minutes min, memory limit $memory bytes," \
    "a new thread every $churn ms, RSS every $interval s (in $work/)"

"$build/tests/soak_check" <"$work/dump.fifo" >"$work/check.txt" \
    2>"$work/check.err" &
cpid=$!
"$build/tests/soak_rec" "$secs" "$work/stats.txt" "$memory" "$churn" \
    >"$work/dump.fifo" 2>"$work/rec.err" &
rpid=$!
start=$(date +%s)
rss() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || true
}
while kill -0 "$rpid" 2>/dev/null; do
	r=$(rss "$rpid")
	c=$(rss "$cpid")
	[ -n "$r" ] && echo "$(($(date +%s) - start)) $r ${c:-0}" >>"$work/rss.txt"
	sleep "$interval"
done
rrc=0
wait "$rpid" || rrc=$?
crc=0
wait "$cpid" || crc=$?

python3 - "$work" "$rrc" "$crc" "$secs" <<'EOF'
import sys

work, rrc, crc, secs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
fails = []

def lines(name):
    try:
        with open(f"{work}/{name}") as f:
            return [l.split() for l in f if l.strip()]
    except OSError:
        return []

if rrc != 0:
    fails.append(f"soak_rec exited {rrc} (see {work}/rec.err)")
if crc != 0:
    fails.append(f"soak_check exited {crc} (see {work}/check.err)")

# The recorder's accounting, per tid (a tid may be reused by a later thread).
stats, session = {}, None
for l in lines("stats.txt"):
    if l[0] == "thread":
        v = [int(x) for x in l[1:]]
        s = stats.setdefault(v[0], [0] * 7)
        for i in range(7):
            s[i] += v[1 + i]
    elif l[0] == "session":
        session = [int(x) for x in l[1:]]
check, mem, csess, stream, counts = {}, [], None, None, [0, 0]
for l in lines("check.txt"):
    if l[0] == "tid":
        check[int(l[1])] = [int(x) for x in l[2:]]
    elif l[0] == "mem":
        mem.append((int(l[1]), int(l[2]), int(l[3])))
    elif l[0] == "session":
        csess = [int(x) for x in l[1:]]
    elif l[0] == "stream":
        stream = [float(x) for x in l[1:]]
    elif l[0] == "counts":
        counts = [int(x) for x in l[1:]]
if session is None or csess is None or stream is None:
    fails.append("incomplete output (no session or stream line)")
    session = session or [0] * 6
    csess = csess or [0] * 6
    stream = stream or [0] * 7

# The dump is whole.
nsess, trailers, lost, limit, events, gaps = csess
if nsess != 1 or trailers != 1:
    fails.append(f"{nsess} sessions, {trailers} trailers (want 1, 1)")
for what, v in (("chunks lost (trailer)", lost), ("limit reached", limit),
                ("EVENT frames", events), ("chunk parts missing or repeated", gaps),
                ("damage reports", int(stream[3]))):
    if v != 0:
        fails.append(f"{what}: {v}")

# Every event and chunk accounted for, per tid.
attempts = decoded = dropped = outside = late = recycled = chunks = 0
sampler = 0
for tid, c in check.items():
    recs, dframes, dchunks, dfull, dnested, intr, trrec, trfull, trnested, trrecy, flags = c
    if intr and trrec != recs:
        fails.append(f"tid {tid}: trailer recorded {trrec}, decoded {recs}")
    if not intr and recs:
        fails.append(f"tid {tid}: {recs} records, no counts for it "
                     "(THREAD totals or trailer)")
    if intr and (dfull > trfull or dnested > trnested):
        fails.append(f"tid {tid}: trailer drops {trfull}/{trnested} < "
                     f"DATA frames' {dfull}/{dnested}")
    if flags & 4:
        sampler += recs
        continue
    if recs and tid not in stats:
        fails.append(f"tid {tid}: {recs} records, no thread reported it")
for tid, s in stats.items():
    a, full, nested, out, lt, rec, taken = s
    c = check.get(tid, [0] * 11)
    want = a - full - nested - out - lt - rec
    if c[0] != want:
        fails.append(f"tid {tid}: decoded {c[0]}, attempts {a} - dropped "
                     f"{full}+{nested} - outside {out} - late {lt} - "
                     f"recycled {rec} = {want}")
    if c[2] != taken:
        fails.append(f"tid {tid}: {c[2]} chunks in the dump, {taken} taken")
    if (c[7], c[8]) != (full, nested):
        fails.append(f"tid {tid}: trailer drops {c[7]}/{c[8]}, the threads "
                     f"counted {full}/{nested}")
    attempts += a
    decoded += c[0]
    dropped += full + nested
    outside += out
    late += lt
    recycled += rec
    chunks += taken

written, slost, sbytes, pool, selfmem, sinkerr = session
dataframes = sum(c[1] for c in check.values())
if written != dataframes:
    fails.append(f"status: {written} chunks written, {dataframes} DATA frames in the dump")
if slost != 0 or sinkerr != 0:
    fails.append(f"status: {slost} chunks lost, sink error {sinkerr}")
if sbytes != int(stream[0]):
    fails.append(f"status: {sbytes} bytes written, {int(stream[0])} read")

# Memory stayed flat.
def flat(name, series, margin_min):
    """series: [(t, value)]; returns (q1max, q4max, ok)"""
    warm = min(120, secs // 5)
    s = [(t, v) for t, v in series if t >= warm]
    if len(s) < 8:
        fails.append(f"{name}: only {len(s)} samples after the warm-up")
        return None
    t0, t1 = s[0][0], s[-1][0]
    q = (t1 - t0) / 4
    q1 = max(v for t, v in s if t <= t0 + q)
    q4 = max(v for t, v in s if t >= t1 - q)
    lo, hi = min(v for _, v in s), max(v for _, v in s)
    ok = q4 <= q1 + max(margin_min, q1 * 0.02)
    if not ok:
        fails.append(f"{name}: last-quarter max {q4} > first-quarter max {q1} + margin")
    return q1, q4, lo, hi, len(s)

rss = [tuple(int(x) for x in l) for l in lines("rss.txt")]
r_rec = flat("recorder RSS (KiB)", [(t, r) for t, r, _ in rss], 1024)
# The reader keeps a table of thread ids (up to pid_max entries, a few MiB
# over an hour of thread churn): a leak in the decoder would show as far
# more than that.
r_chk = flat("reader RSS (KiB)", [(t, c) for t, _, c in rss], 16 << 10)
r_self = flat("profiler memory (bytes)", [(t, s) for t, s, _ in mem], 256 << 10)
r_srss = flat("RSS seen by the sampler (bytes)", [(t, r) for t, _, r in mem], 1 << 20)

print(f"soak: {stream[6]:.0f} s recorded; {len(stats)} thread ids reported, "
      f"{sum(1 for c in check.values() if c[0])} with records in the dump")
print(f"soak: events attempted {attempts}, decoded {decoded}, dropped {dropped}, "
      f"outside {outside}, late {late}, recycled {recycled}; sampler records "
      f"{sampler} (samples {int(stream[4])}, overhead {int(stream[5])})")
print(f"soak: chunks taken {chunks}, DATA frames {dataframes} (status: {written} "
      f"written, {slost} lost), {int(stream[0])} bytes, {int(stream[1])} frames, "
      f"pool {pool} chunks, profiler memory {selfmem} bytes at the end")
print(f"soak: counts of {counts[0]} exited threads settled in THREAD frames, "
      f"{counts[1]} trailer entries")
# An exited thread's counts go out with it: the trailer (and the session's
# table behind it) holds the threads alive at the stop, not every one seen.
if counts[1] > 64:
    fails.append(f"the trailer has {counts[1]} entries (the threads alive at "
                 "the stop are a handful)")
for name, r, unit in (("recorder RSS", r_rec, "KiB"), ("reader RSS", r_chk, "KiB"),
                      ("profiler memory", r_self, "B"),
                      ("RSS seen by the sampler", r_srss, "B")):
    if r:
        q1, q4, lo, hi, n = r
        print(f"soak: {name}: first-quarter max {q1} {unit}, last-quarter max "
              f"{q4} {unit} (min {lo}, max {hi} over {n} samples after warm-up)")
if fails:
    for f in fails[:40]:
        print("soak: FAIL:", f)
    sys.exit(1)
print("soak: OK")
EOF
