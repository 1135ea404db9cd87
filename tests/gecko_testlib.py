"""Helpers shared by the converter's content checks (test_gecko_content.py,
test_gecko_multi.py) and the record tests: load a profile (gzip sniffed),
fail/check, samples' stacks, markers."""

import gzip
import json
import os
import subprocess
import sys


def load(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))


def fail(msg):
    name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
    print(f"{name}: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


def frames_of(th, short=False):
    """Each sample's stack, outermost frame first, as location strings
    (short: the function name alone, without " (in lib)")."""
    st = th["stringTable"]
    ft = th["frameTable"]
    sk = th["stackTable"]
    out = []
    for row in th["samples"]["data"]:
        s = row[th["samples"]["schema"]["stack"]]
        names = []
        while s is not None:
            srow = sk["data"][s]
            f = ft["data"][srow[sk["schema"]["frame"]]]
            loc = st[f[ft["schema"]["location"]]]
            names.append(loc.split(" ")[0] if short else loc)
            s = srow[sk["schema"]["prefix"]]
        out.append(list(reversed(names)))
    return out


def markers(th):
    """A thread's markers as dicts, names resolved through its stringTable."""
    sch = th["markers"]["schema"]
    st = th["stringTable"]
    out = []
    for row in th["markers"]["data"]:
        row = row + [None] * (6 - len(row))
        out.append({
            "name": st[row[sch["name"]]],
            "start": row[sch["startTime"]],
            "end": row[sch["endTime"]],
            "phase": row[sch["phase"]],
            "category": row[sch["category"]],
            "data": row[sch["data"]],
        })
    return out


def run_clean(cmd, env_extra, **kw):
    """Run @cmd with this environment less RTPROF_SAMPLER, plus @env_extra
    (text output captured, 240 s at most)."""
    env = dict(os.environ)
    env.pop("RTPROF_SAMPLER", None)
    env.update(env_extra)
    return subprocess.run(cmd, env=env, capture_output=True, text=True,
                          timeout=240, **kw)
