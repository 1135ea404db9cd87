"""Helpers for the tests of `rtprof summarize` and of marker backtraces
(test_record.py, test_backtrace.py): the report parsed back into data, and
a profile thread's stacks as function names."""

import re

_CALL_ROW = re.compile(r"^  (\S+)\s+(\d+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")
_STACK_HEAD = re.compile(r"^  (\S+): (\d+) calls?, ([\d.]+) ms \(mean ([\d.]+) ms, "
                         r"max ([\d.]+) ms\)$")
_NOSTACK = re.compile(r"^  \(without a stack: (\d+) calls?, ([\d.]+) ms")
_MORE = re.compile(r"^  \((\d+) more stacks?\)$")
_CPU_ROW = re.compile(r"^\s+([\d.]+) ms  (.*)$")
_SELF_ROW = re.compile(r"^\s+(\d+)\s+([\d.]+)%  (.*)$")
_REASON_ROW = re.compile(r"^  (\S.*?)\s+(\d+)\s+([\d.]+)$")
_PLACE_ROW = re.compile(r"^\s+([\d.]+) ms  (.*)$")


def parse_summary(text):
    """The sections of a summarize report:
    calls   {call: (count, total_ms, mean_ms, max_ms)}
    stacks  [(call, count, total_ms, [frame, ...] innermost first)]
    nostack (count, ms) of Blocked calls without a stack, or (0, 0.0)
    more    how many stacks --top left out ("(N more stacks)"), or 0
    cpu     {"process (pid P) / thread (tid T)": ms}; samples: their number
    cpu_more  (threads, ms) that --top left out, or (0, 0.0)
    cpu_total (threads, ms) of every thread, or (0, 0.0)
    self    {function: samples}
    reasons {kernel reason: (samples, ms, [place, ...])}: time off CPU
    reasons_text  that section's text"""
    out = {"calls": {}, "stacks": [], "nostack": (0, 0.0), "more": 0,
           "cpu": {}, "cpu_more": (0, 0.0), "cpu_total": (0, 0.0),
           "samples": 0, "self": {}, "reasons": {}, "reasons_text": ""}
    section = None
    for ln in text.splitlines():
        if ln.startswith("Time blocked, by call"):
            section = "calls"
            continue
        if ln.startswith("Time blocked, by stack"):
            section = "stacks"
            continue
        if ln.startswith("Time off CPU, by the kernel's reason"):
            section = "reasons"
            continue
        if ln.startswith("CPU time by thread"):
            section = "cpu"
            out["samples"] = int(re.search(r"from (\d+) samples", ln).group(1))
            continue
        if ln.startswith("Top functions by self samples"):
            section = "self"
            continue
        if section == "calls":
            m = _CALL_ROW.match(ln)
            if m and m.group(1) != "call":
                out["calls"][m.group(1)] = (int(m.group(2)), float(m.group(3)),
                                            float(m.group(4)), float(m.group(5)))
        elif section == "stacks":
            m = _STACK_HEAD.match(ln)
            if m:
                out["stacks"].append((m.group(1), int(m.group(2)),
                                      float(m.group(3)), []))
                continue
            m = _NOSTACK.match(ln)
            if m:
                out["nostack"] = (int(m.group(1)), float(m.group(2)))
                continue
            m = _MORE.match(ln)
            if m:
                out["more"] = int(m.group(1))
                continue
            if ln.startswith("        ") and out["stacks"]:
                out["stacks"][-1][3].append(ln.strip())
        elif section == "reasons":
            out["reasons_text"] += ln + "\n"
            m = _REASON_ROW.match(ln)
            if m and m.group(1) != "reason":
                out["reasons"][m.group(1)] = (int(m.group(2)),
                                              float(m.group(3)), [])
                last = out["reasons"][m.group(1)]
                continue
            m = _PLACE_ROW.match(ln)
            if m and out["reasons"]:
                last[2].append(m.group(2))
        elif section == "cpu":
            m = _CPU_ROW.match(ln)
            more = m and re.fullmatch(r"\((\d+) more threads?\)", m.group(2))
            total = m and re.fullmatch(r"total, (\d+) threads?", m.group(2))
            if more:
                out["cpu_more"] = (int(more.group(1)), float(m.group(1)))
            elif total:
                out["cpu_total"] = (int(total.group(1)), float(m.group(1)))
            elif m:
                out["cpu"][m.group(2)] = float(m.group(1))
        elif section == "self":
            m = _SELF_ROW.match(ln)
            if m:
                out["self"][m.group(3)] = int(m.group(1))
    return out


def func(location):
    """'name (in lib)' -> 'name' (as summarize names functions)."""
    i = location.rfind(" (in ")
    return location[:i] if i > 0 and location.endswith(")") else location


def stack_names(th, stack):
    """Frame locations of stack index `stack` of a profile thread, innermost
    first."""
    st = th["stringTable"]
    ft = th["frameTable"]
    sk = th["stackTable"]
    names = []
    while stack is not None:
        row = sk["data"][stack]
        f = ft["data"][row[sk["schema"]["frame"]]]
        names.append(st[f[ft["schema"]["location"]]])
        stack = row[sk["schema"]["prefix"]]
    return names
