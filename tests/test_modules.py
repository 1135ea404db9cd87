"""Every module named (issue 16): the module map over time, the vDSO and
stripped binaries (tests/module_host.c, tests/module_plugin.c).

    test_modules.py RTPROF MODULE_HOST PLUGIN_A PLUGIN_B MSGPACK2GECKO WORKDIR

Sampled with perf events (the default) and with the signal fallback
(RTPROF_SAMPLER=signal); module_host linked with librtprof (RTPROF_FD,
the dump converted by msgpack2gecko and summarized) and under
`rtprof record`.

- plugin: a library dlopen'ed after the session started: its spin
  function is the top self function by name, in the profile and in
  `rtprof summarize`; no sample's leaf is a raw address near it (a
  library is announced within a writer round of its loading, and the
  samples before that are named from the next map), also when it was
  dlopen'ed by a relative path. The second build,
  loaded after the first was unloaded (usually at the same address), is
  named by its own symbol: where both were at one address, every
  plugin_a_spin sample comes before every plugin_b_spin one.
- stripped: a stripped copy of module_host (no .symtab): the leaves of its
  hot function read module_host_stripped+0x<start of exe_spin> (the
  symbol's address in the unstripped file: the function's start, not the
  instruction's), and those samples are one function, at least 90% of
  the executable's leaves, in the profile and in summarize.
- vdso: a thread reading its CPU clock in a loop: its leaves in the vDSO
  are named (in linux-vdso.so.1), none is a raw address in its range.
"""

import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gecko_testlib import check, load, run_clean as run  # noqa: E402
from summarize_testlib import func, parse_summary, stack_names  # noqa: E402

RTPROF, HOST, LIBA, LIBB, M2G, WORK = sys.argv[1:7]
STRIPPED = os.path.join(os.path.dirname(HOST), "module_host_stripped")
MODES = {"perf": {}, "signal": {"RTPROF_SAMPLER": "signal"}}
os.makedirs(WORK, exist_ok=True)




def linked(mode, args, tag, **kw):
    """RTPROF_FD: (stdout, profile, the dump for summarize)."""
    dump = os.path.join(WORK, f"{tag}.rtprof")
    out = os.path.join(WORK, f"{tag}.json.gz")
    with open(dump, "wb") as f:
        r = run(args, dict(MODES[mode], RTPROF_FD=str(f.fileno())),
                stdin=subprocess.DEVNULL, pass_fds=(f.fileno(),), **kw)
    check(r.returncode == 0, f"{tag}: exit {r.returncode}: {r.stderr[-2000:]}")
    c = run([M2G, dump, "-o", out], {})
    check(c.returncode == 0, f"{tag}: msgpack2gecko: {c.stderr[-2000:]}")
    return r.stdout, load(out), dump


def record(mode, args, tag, **kw):
    """rtprof record: (stdout, profile, the profile for summarize)."""
    out = os.path.join(WORK, f"{tag}.json.gz")
    r = run([RTPROF, "record", "-o", out, "--"] + args, MODES[mode], **kw)
    check(r.returncode == 0, f"{tag}: rtprof record exit {r.returncode}:"
          f" {r.stderr[-2000:]}")
    return r.stdout, load(out), out


def values(out):
    return {ln.split()[0]: ln.split()[1:] for ln in out.splitlines()
            if ln.strip()}


def leaves(prof):
    """(time, leaf location) of every sample with a stack, all threads."""
    ths = list(prof["threads"])
    for p in prof.get("processes", []):
        ths += p["threads"]
    out = []
    for th in ths:
        sch = th["samples"]["schema"]
        for row in th["samples"]["data"]:
            s = row[sch["stack"]]
            if s is not None:
                out.append((row[sch["time"]], stack_names(th, s)[0]))
    return out


def self_counts(lv):
    n = {}
    for _, loc in lv:
        n[func(loc)] = n.get(func(loc), 0) + 1
    return n


def summarize_self(path, tag):
    r = run([RTPROF, "summarize", "--top", "1000", path], {})
    check(r.returncode == 0, f"{tag}: summarize exit {r.returncode}:"
          f" {r.stderr[-1000:]}")
    return parse_summary(r.stdout)["self"]


def top(counts):
    return max(counts, key=counts.get) if counts else None


def hex_in(loc, lo, hi):
    name = loc.split(" ")[0]
    return re.fullmatch(r"0x[0-9a-f]+", name) is not None and \
        lo <= int(name, 16) < hi


def case_plugin(how, mode, tag, relative=False):
    """relative: dlopen("./lib.so") from the libraries' directory (the
    loader's name for it is relative: the dump's must not be)."""
    if relative:
        libs = ["./" + os.path.basename(LIBA), "./" + os.path.basename(LIBB)]
        out, prof, path = how(mode, [HOST, "plugin"] + libs, tag,
                              cwd=os.path.dirname(LIBA))
    else:
        out, prof, path = how(mode, [HOST, "plugin", LIBA, LIBB], tag)
    v = values(out)
    a, b = int(v["a-spin"][0], 16), int(v["b-spin"][0], 16)
    lv = leaves(prof)
    n = self_counts(lv)
    raw = sum(hex_in(loc, min(a, b) - (1 << 20), max(a, b) + (1 << 20))
              for _, loc in lv)
    print(f"{tag}: plugin_a_spin {n.get('plugin_a_spin', 0)},"
          f" plugin_b_spin {n.get('plugin_b_spin', 0)} of {len(lv)} samples,"
          f" {raw} raw addresses near them; top {top(n)};"
          f" same address {a == b}, a unloaded {v['a-unloaded'][0]}")
    check(top(n) == "plugin_a_spin", f"{tag}: top self {top(n)}")
    check(n.get("plugin_b_spin", 0) >= 100,
          f"{tag}: plugin_b_spin {n.get('plugin_b_spin', 0)} samples")
    check(raw <= 0.01 * n["plugin_a_spin"], f"{tag}: {raw} raw addresses")
    if a == b and v["a-unloaded"][0] == "1":
        ta = [t for t, loc in lv if func(loc) == "plugin_a_spin"]
        tb = [t for t, loc in lv if func(loc) == "plugin_b_spin"]
        check(max(ta) < min(tb), f"{tag}: one address, the two builds'"
              f" samples interleave: a until {max(ta)}, b from {min(tb)}")
    s = summarize_self(path, tag)
    check(top(s) == "plugin_a_spin", f"{tag}: summarize top {top(s)}")
    check(s.get("plugin_b_spin", 0) >= 100, f"{tag}: summarize"
          f" plugin_b_spin {s.get('plugin_b_spin', 0)}")


def exe_spin_vaddr():
    r = subprocess.run(["nm", HOST], capture_output=True, text=True,
                       check=True)
    for ln in r.stdout.splitlines():
        f = ln.split()
        if len(f) == 3 and f[2] == "exe_spin":
            return int(f[0], 16)
    check(False, "nm: no exe_spin in module_host")


def case_stripped(how, mode, tag):
    want = f"module_host_stripped+{exe_spin_vaddr():#x}"
    _, prof, path = how(mode, [STRIPPED, "spin"], tag)
    lv = leaves(prof)
    exe = [func(loc) for _, loc in lv
           if loc.endswith("(in module_host_stripped)")]
    n = self_counts(lv)
    print(f"{tag}: {n.get(want, 0)} of {len(exe)} leaves in the executable"
          f" are {want}; {len(set(exe))} names there; top {top(n)}")
    check(top(n) == want, f"{tag}: top self {top(n)}, not {want}")
    check(n[want] >= 0.9 * len(exe), f"{tag}: {n[want]} of {len(exe)}")
    s = summarize_self(path, tag)
    check(top(s) == want, f"{tag}: summarize top {top(s)}")


def case_vdso(how, mode, tag):
    out, prof, _ = how(mode, [HOST, "vdso"], tag)
    lo, hi = (int(x) for x in values(out)["vdso-range"])
    lv = leaves(prof)
    named = [func(loc) for _, loc in lv
             if loc.endswith("(in linux-vdso.so.1)")]
    raw = sum(hex_in(loc, lo, hi) for _, loc in lv)
    print(f"{tag}: {len(named)} of {len(lv)} leaves named in the vDSO"
          f" ({sorted(set(named))}), {raw} raw")
    check(len(named) >= 20, f"{tag}: {len(named)} named vDSO leaves")
    check(raw == 0, f"{tag}: {raw} raw addresses in the vDSO")
    check(any("clock_gettime" in x for x in named), f"{tag}: {set(named)}")


def main():
    for mode in MODES:
        case_plugin(linked, mode, f"plugin-linked-{mode}",
                    relative=mode == "signal")
        case_vdso(linked, mode, f"vdso-linked-{mode}")
    case_plugin(record, "perf", "plugin-record-perf")
    case_stripped(record, "perf", "stripped-record-perf")
    case_stripped(linked, "signal", "stripped-linked-signal")
    print("test_modules: ok")


main()
