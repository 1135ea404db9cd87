#!/usr/bin/env python3
"""test_view.py - `rtprof view` end to end (see tests/CMakeLists.txt).

    python3 tests/test_view.py RTPROF GECKO_REC TESTS_DIR WORKDIR [--chromium]

Without --chromium (test_view): a real HTTP client (http.client, raw
sockets) fetches the profile served from a gecko_rec dump, from the plain
JSON profile and from the gzipped one, and checks status, headers (content
type, gzip, CORS, no-store), the bytes (gecko_check.py and
test_gecko_content.py on what was served), the CORS preflight, 404 for
every other path (traversal attempts included), 405, 400, 421, 431 for a
64 KiB header with the server still serving, a silent client that blocks
nobody, a partial request answered 408 after the request timeout, the stop
after the grace period and on SIGINT, and the usage errors. Then:
- the opener: with DISPLAY (or WAYLAND_DISPLAY) set and a fake xdg-open
  first in PATH, the opener's only argument is the path of a page that
  sends the browser to the printed from-url address: neither its argv
  nor its environment holds the secret path (any local user reads them
  in ps), the page is ours, mode 0600 in a 0700 directory, and is gone
  once the server stopped; a request without the secret path is refused
  (404); the opener runs in a session of its own with SIGPIPE not
  ignored, and does not hold the server up (it hangs; the server stops
  after the grace period all the same); with --no-open, with no display
  variable, or empty ones, it is never run (and the tool says why not);
- two dumps (two gecko_rec runs) become one profile with exactly the two
  recorders' pids; one of them read from a slow stdin: the converter's
  progress line is drawn on stderr when stderr is a terminal (a pty), not
  when it is a file, nor with -q;
- --port N: the server listens on exactly N and the URLs carry it;
- loopback only: /proc/net/tcp has one listener on the port, 127.0.0.1
  (none in /proc/net/tcp6), and connections to 127.0.0.2, ::1 and this
  host's other IPv4 addresses are refused.

With --chromium (test_view_chromium): a page served by a second local
server (another origin) fetch()es the profile in headless Chromium and
writes what it read into the DOM: the plain GET and a GET that needs a CORS
preflight succeed for the allowed origin, and the browser refuses the
response of a server that does not allow that origin. Exit 77 (skipped)
when there is no chromium.

Standard library only. Every server is started and stopped here, and
killed on failure.
"""
import fcntl
import gzip
import http.client
import http.server
import json
import os
import queue
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

RTPROF, REC, SRC, WORK = sys.argv[1:5]
SRC = os.path.abspath(SRC)
CHROMIUM = "--chromium" in sys.argv[5:]
PY = sys.executable
PROFILER = "https://profiler.firefox.com"
procs = []
openers = []            # pids of fake openers left sleeping (killed at the end)


def fail(msg):
    print(f"test_view: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check(cond, msg):
    if not cond:
        fail(msg)


class View:
    """One `rtprof view` process; its stdout is read by a thread."""

    def __init__(self, *args, grace="30", origins=(), no_open=True,
                 verbose=True, env=None, tty=False, feed=None):
        """@env: the environment (default: ours); @tty: stderr is a pty
        (read by a thread, self.tty); @feed: bytes written to stdin by a
        thread, after 0.5 s without a byte (stdin is /dev/null without)."""
        cmd = [RTPROF, "view", "--grace", grace]
        cmd += ["--no-open"] if no_open else []
        cmd += ["-v"] if verbose else []
        for o in origins:
            cmd += ["--allow-origin", o]
        cmd += list(args)
        self.err_path = os.path.join(WORK, f"view-{len(procs)}.err")
        self.err = open(self.err_path, "w")
        self.tty = None
        master = None
        stderr = self.err
        if tty:
            master, stderr = os.openpty()
            self.tty = bytearray()
        self.p = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=stderr, text=True, env=env,
            stdin=subprocess.PIPE if feed is not None else subprocess.DEVNULL)
        procs.append(self.p)
        if tty:
            os.close(stderr)
            self.tty_done = threading.Event()
            threading.Thread(target=self._pump_tty, args=(master,),
                             daemon=True).start()
        if feed is not None:
            threading.Thread(target=self._feed, args=(feed,),
                             daemon=True).start()
        self.lines = queue.Queue()
        self.out = []
        threading.Thread(target=self._pump, daemon=True).start()
        self.url = None
        deadline = time.time() + 30
        while self.url is None:
            line = self.line(deadline - time.time())
            m = re.search(r"serving the profile .* at "
                          r"(http://127\.0\.0\.1:(\d+)(/\S+))$", line)
            if m:
                self.url, self.port, self.path = (m.group(1),
                                                  int(m.group(2)), m.group(3))
        self.from_url = self.line(10)
        check(self.from_url.endswith(
            "open it in the Firefox Profiler: " + PROFILER + "/from-url/" +
            urllib.parse.quote(self.url, safe="") + "/"),
            f"from-url address: {self.from_url}")
        self.address = self.from_url.split("Firefox Profiler: ", 1)[1]

    def until_ready(self):
        """The lines after the from-url address, up to "Ctrl-C stops"."""
        got = []
        while True:
            line = self.line(10)
            if "Ctrl-C stops" in line:
                return got
            got.append(line)

    def _feed(self, data):
        time.sleep(0.5)
        try:
            self.p.stdin.buffer.write(data)
            self.p.stdin.close()
        except (BrokenPipeError, ValueError):
            pass

    def _pump_tty(self, master):
        while True:
            try:
                b = os.read(master, 4096)
            except OSError:         # EIO: the last writer closed it
                break
            if not b:
                break
            self.tty += b
        os.close(master)
        self.tty_done.set()

    def _pump(self):
        for line in self.p.stdout:
            self.out.append(line)
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def line(self, timeout):
        try:
            line = self.lines.get(timeout=max(timeout, 0.1))
        except queue.Empty:
            fail(f"no line from rtprof view in time; stderr:\n{self.stderr()}")
        if line is None:
            fail(f"rtprof view exited ({self.p.wait()}); stderr:\n"
                 f"{self.stderr()}")
        return line

    def stderr(self):
        if self.tty is not None:
            return self.tty.decode(errors="replace")
        self.err.flush()
        with open(self.err_path, errors="replace") as f:
            return f.read()

    def request(self, method, path=None, headers=None, body=None):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        # skip_host: the Host header is the caller's when it gives one.
        c.putrequest(method, self.path if path is None else path,
                     skip_host=headers is not None and "Host" in headers,
                     skip_accept_encoding=True)
        for k, v in (headers or {}).items():
            c.putheader(k, v)
        if body is not None:
            c.putheader("Content-Length", str(len(body)))
        c.endheaders(body)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r, data

    def wait(self, timeout):
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            fail(f"rtprof view did not stop within {timeout} s")
        time.sleep(0.2)         # let the pump thread take the last lines
        return rc, "".join(self.out)


def raw(port, data, timeout=10):
    """Send @data on a new connection; return everything received."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    got = b""
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            got += b
    except ConnectionResetError:
        pass
    s.close()
    return got


def cpu_seconds(pid):
    """User + system CPU time of process @pid (/proc/PID/stat)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                          **kw)


def check_profile_headers(r, body, origin, head=False):
    h = {k.lower(): v for k, v in r.getheaders()}
    check(r.status == 200, f"GET status {r.status}")
    check(h.get("content-type") == "application/json", f"type {h}")
    check(h.get("content-encoding") == "gzip", f"encoding {h}")
    check(h.get("cache-control") == "no-store", f"cache-control {h}")
    check(h.get("access-control-allow-origin") == origin,
          f"allow-origin {h.get('access-control-allow-origin')} != {origin}")
    check("origin" in h.get("vary", "").lower(), "no Vary: Origin")
    check(head or int(h.get("content-length", -1)) == len(body),
          "content-length")
    return h


def gecko_check(path, content):
    r = run([PY, os.path.join(SRC, "gecko_check.py"), path])
    check(r.returncode == 0, f"gecko_check.py rejects {path}:\n{r.stdout}")
    if content:
        r = run([PY, os.path.join(SRC, "test_gecko_content.py"), path],
                cwd=SRC)
        check(r.returncode == 0,
              f"test_gecko_content.py rejects {path}:\n{r.stdout}{r.stderr}")


def test_http(dump):
    allowed = "http://127.0.0.1:1"         # a made-up extra origin
    slow = None
    v = View(dump, grace="2", origins=[allowed])
    # A client that connects and sends nothing: the others go on.
    slow = socket.create_connection(("127.0.0.1", v.port))

    t0 = time.time()
    r, body = v.request("HEAD")
    check(time.time() - t0 < 3, "HEAD blocked behind a silent client")
    check(body == b"", "HEAD has a body")
    h = check_profile_headers(r, body, PROFILER, head=True)
    size = int(h["content-length"])

    # CORS: the allowed origins are reflected, others are not.
    r, _ = v.request("HEAD", headers={"Origin": allowed})
    check(r.getheader("Access-Control-Allow-Origin") == allowed,
          "allowed origin not reflected")
    r, _ = v.request("HEAD", headers={"Origin": "http://evil.example"})
    check(r.getheader("Access-Control-Allow-Origin") == PROFILER,
          "a foreign origin was reflected")
    # The preflight (Chrome's Private Network Access included).
    r, body = v.request("OPTIONS", headers={
        "Origin": PROFILER, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-test",
        "Access-Control-Request-Private-Network": "true"})
    check(r.status == 204 and body == b"", f"OPTIONS status {r.status}")
    check(r.getheader("Access-Control-Allow-Origin") == PROFILER, "pf origin")
    check("GET" in r.getheader("Access-Control-Allow-Methods", ""),
          "preflight methods")
    check(r.getheader("Access-Control-Allow-Headers") == "x-test",
          "preflight headers")
    check(r.getheader("Access-Control-Allow-Private-Network") == "true",
          "private network access")

    # Nothing else is served: no listing, no traversal.
    hexdir = v.path.split("/")[1]
    for p in ["/", "/profile.json", f"/{hexdir}", f"/{hexdir}/",
              f"/{hexdir}/profile.json/", f"/{hexdir}/../{hexdir}/profile.json",
              f"/{hexdir}/./profile.json", f"//{hexdir}/profile.json",
              f"/{hexdir}/profile%2ejson", f"/{hexdir.upper()}/profile.json",
              "/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd",
              "/..%2f..%2fetc%2fpasswd", f"/{hexdir}/%2e%2e/%2e%2e/etc/passwd",
              "/" + "a" * 8000]:
        r, body = v.request("GET", p)
        check(r.status == 404, f"GET {p[:60]}: status {r.status}, want 404")
        check(b"root:" not in body, "a file was served")
    # Methods.
    for m in ["POST", "PUT", "DELETE", "PATCH", "TRACE", "CONNECT"]:
        r, _ = v.request(m, body=b"x" * 100000 if m == "POST" else None)
        check(r.status == 405, f"{m}: status {r.status}, want 405")
        check("GET" in r.getheader("Allow", ""), f"{m}: no Allow")
    # Malformed requests, another Host.
    for bad in [b"GARBAGE\r\n\r\n", b"GET\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n",
                b"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
                b"get / HTTP/1.1\r\n\r\n", b"GET /\0 HTTP/1.1\r\n\r\n"]:
        got = raw(v.port, bad)
        check(got.startswith(b"HTTP/1.1 400 "), f"{bad!r}: {got[:40]!r}")
    # Random garbage and mutated requests (fixed seed): any answer or a
    # close, never a crash (the sanitizer builds run this too).
    rnd = random.Random(9)
    good = (b"GET " + v.path.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Origin: " + PROFILER.encode() + b"\r\n\r\n")
    for i in range(150):
        if i % 2:
            data = bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 600)))
        else:
            data = bytearray(good)
            for _ in range(rnd.randrange(1, 6)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
            data = bytes(data[:rnd.randrange(1, len(data) + 1)])
        s = socket.create_connection(("127.0.0.1", v.port), timeout=5)
        s.sendall(data + (b"\r\n\r\n" if i % 3 else b""))
        s.shutdown(socket.SHUT_WR)
        try:
            s.recv(65536)
        except (socket.timeout, ConnectionResetError):
            pass
        s.close()
    check(v.p.poll() is None, "the server died on garbage")
    r, _ = v.request("GET", headers={"Host": "rebound.example:80"})
    check(r.status == 421, f"foreign Host: status {r.status}")
    # A 64 KiB header line: 431, and the server keeps serving.
    got = raw(v.port, b"GET " + v.path.encode() + b" HTTP/1.1\r\nX-Big: " +
              b"a" * 65536 + b"\r\n\r\n")
    check(got.startswith(b"HTTP/1.1 431 "), f"64 KiB header: {got[:60]!r}")
    r, _ = v.request("HEAD")
    check(r.status == 200, "not serving after the 431")

    # The profile, last: it starts the grace period.
    r, body = v.request("GET", headers={"Origin": allowed,
                                        "Accept-Encoding": "gzip"})
    check_profile_headers(r, body, allowed)
    check(len(body) == size, "GET and HEAD disagree on the length")
    check(body[:2] == b"\x1f\x8b", "body not gzip")
    raw_json = gzip.decompress(body)
    json.loads(raw_json)
    served = os.path.join(WORK, "served.json.gz")
    with open(served, "wb") as f:
        f.write(body)
    with open(os.path.join(WORK, "served.json"), "wb") as f:
        f.write(raw_json)
    gecko_check(served, True)

    # Stops by itself after the grace period (2 s) once fetched.
    t0 = time.time()
    rc, out = v.wait(30)
    slow.close()
    check(rc == 0, f"exit {rc} after the grace period:\n{v.stderr()}")
    check("the profile was fetched" in out and "grace period passed" in out,
          f"stop not reported:\n{out}")
    check(time.time() - t0 < 15, "stopped too late")
    return served, os.path.join(WORK, "served.json")


def test_profiles(gz_path, json_path):
    # An already converted profile, gzipped: served as it is.
    v = View(gz_path, grace="30")
    r, body = v.request("GET")
    check_profile_headers(r, body, PROFILER)
    with open(gz_path, "rb") as f:
        check(body == f.read(), "gzip profile not served byte for byte")
    v.p.send_signal(signal.SIGTERM)
    rc, out = v.wait(15)
    check(rc == 0 and "stopped by SIGTERM" in out, f"SIGTERM: {rc} {out}")

    # Plain JSON: served gzip-compressed. A partial request is answered
    # 408 after the request timeout, while the server stays responsive.
    v = View(json_path, grace="30")
    loris = socket.create_connection(("127.0.0.1", v.port), timeout=20)
    loris.sendall(b"GET " + v.path.encode() + b" HTTP/1.1\r\nX-Slow: 1")
    t0 = time.time()
    r, body = v.request("GET")
    check(time.time() - t0 < 3, "GET blocked behind a slow client")
    check_profile_headers(r, body, PROFILER)
    with open(json_path, "rb") as f:
        check(gzip.decompress(body) == f.read(), "JSON profile bytes differ")
    # More silent clients than the server has slots (64): it neither
    # spins (the CPU time it uses meanwhile stays small) nor fails; the
    # slots free as the clients leave.
    cpu0 = cpu_seconds(v.p.pid)
    crowd = [socket.create_connection(("127.0.0.1", v.port))
             for _ in range(70)]
    time.sleep(1.5)
    used = cpu_seconds(v.p.pid) - cpu0
    check(used < 0.5, f"server used {used:.2f} s of CPU with a full table")
    for c in crowd:
        c.close()
    time.sleep(0.3)
    r, _ = v.request("HEAD")
    check(r.status == 200, "not serving after the crowd left")
    # A second rtprof view on the same port: exit 3.
    r2 = run([RTPROF, "view", "--no-open", "--port", str(v.port), json_path])
    check(r2.returncode == 3 and "cannot listen" in r2.stderr,
          f"port in use: exit {r2.returncode} {r2.stderr}")
    got = b""
    try:
        while True:
            b = loris.recv(4096)
            if not b:
                break
            got += b
    except (socket.timeout, ConnectionResetError):
        pass
    check(got.startswith(b"HTTP/1.1 408 "),
          f"slow client: {got[:40]!r} after {time.time() - t0:.1f} s")
    check(time.time() - t0 < 15, "slow client kept too long")
    loris.close()
    v.p.send_signal(signal.SIGINT)
    rc, out = v.wait(15)
    check(rc == 0 and "stopped by Ctrl-C" in out, f"SIGINT: {rc} {out}")


def test_usage(dump, json_path):
    def view(*a):
        return run([RTPROF, "view", "--no-open", "--grace", "0"] + list(a))

    r = view(dump, json_path)
    check(r.returncode == 2 and "dumps only" in r.stderr,
          f"dump + profile: {r.returncode} {r.stderr}")
    r = view(os.path.join(WORK, "missing.rtprof"))
    check(r.returncode == 2 and "cannot open" in r.stderr, "missing file")
    junk = os.path.join(WORK, "junk.bin")
    with open(junk, "wb") as f:
        # Not a profile's first byte ('{', white space, a BOM, gzip's
        # 0x1f): random bytes began with '{' once in ~250 runs and were
        # then refused as JSON, not as a dump.
        f.write(b"\0" + os.urandom(4095))
    r = view(junk)
    check(r.returncode == 2 and "not an rtprof dump" in r.stderr,
          f"junk: {r.returncode} {r.stderr}")
    for a in (["--port", "70000", dump], ["--allow-origin", "x", dump],
              ["--grace", "-1", dump], ["--bogus", dump], []):
        r = view(*a)
        check(r.returncode == 2, f"{a}: exit {r.returncode}, want 2")
    r = run([RTPROF, "view", "--help"])
    check(r.returncode == 0 and "exit status" in r.stdout, "view --help")
    r = run([RTPROF, "help"])
    check(r.returncode == 0 and "view" in r.stdout, "rtprof help")
    for c in ("record", "summarize", "capture"):   # no arguments: usage, 2
        r = run([RTPROF, c])
        check(r.returncode == 2 and "usage" in r.stderr, c)
    r = run([RTPROF, "frobnicate"])
    check(r.returncode == 2, "unknown command")


FAKE_OPENER = r"""#!/bin/sh
# A fake xdg-open (tests/test_view.py): records its arguments (NUL after
# each) and its /proc stat and status, then hangs as a browser would.
out="$RTPROF_TEST_OPENER_OUT"
printf '%s\0' "$@" > "$out.tmp"
cat /proc/$$/stat /proc/$$/status > "$out.proc"
cat /proc/$$/environ > "$out.environ"
cat "$1" > "$out.page"
stat -c '%u %a' "$1" "$(dirname "$1")" > "$out.mode"
mv "$out.tmp" "$out.argv"
exec sleep 60
"""


def opener_env(tag, **display):
    """Our environment without DISPLAY/WAYLAND_DISPLAY, plus @display,
    with the fake xdg-open first in PATH; and where it would write."""
    bindir = os.path.join(WORK, "fakebin")
    fake = os.path.join(bindir, "xdg-open")
    if not os.path.exists(fake):
        os.makedirs(bindir, exist_ok=True)
        with open(fake, "w") as f:
            f.write(FAKE_OPENER)
        os.chmod(fake, 0o755)
    out = os.path.join(WORK, "opener-" + tag)
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    env.update(display)
    env["PATH"] = bindir + os.pathsep + env.get("PATH", "")
    env["RTPROF_TEST_OPENER_OUT"] = out
    return env, out + ".argv", out + ".proc"


def kill_opener(pid):
    """Kill a fake opener still sleeping (pid checked: still one of ours,
    with our RTPROF_TEST_OPENER_OUT in its environment)."""
    mark = ("RTPROF_TEST_OPENER_OUT=" + os.path.join(WORK, "opener-")).encode()
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")[0]
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read().split(b"\0")
        if cmd == b"sleep" and any(e.startswith(mark) for e in env):
            os.kill(pid, signal.SIGKILL)
    except (OSError, ValueError):
        pass


def fetch_and_stop(v, what):
    """GET the profile from @v (grace 0): it must stop by itself."""
    r, body = v.request("GET")
    check(r.status == 200, f"{what}: GET status {r.status}")
    rc, out = v.wait(15)
    check(rc == 0 and "grace period passed" in out,
          f"{what}: exit {rc}:\n{out}\n{v.stderr()}")
    return body, out


def check_page(tag, v, args, out):
    """What the opener got (@args, and what it recorded at @out.*) gives
    nobody else the profile: the secret path is in no argument and in no
    environment variable, only in a page only we can read."""
    secret = v.path.split("/")[1].encode()
    check(len(secret) == 32, f"{tag}: secret path {v.path!r}")
    check(len(args) == 1 and secret not in args[0] and
          args[0].startswith(b"/") and args[0].endswith(b".html"),
          f"{tag}: opener arguments {args!r}")
    with open(out + ".environ", "rb") as f:
        check(secret not in f.read(), f"{tag}: the secret in the "
              "opener's environment")
    with open(out + ".page", "rb") as f:
        page = f.read().decode()
    check(v.address in page and "location.replace" in page,
          f"{tag}: the page does not lead to {v.address}: {page}")
    with open(out + ".mode") as f:
        (fu, fm), (du, dm) = (x.split() for x in f.read().splitlines())
    check(int(fu) == os.getuid() and int(du) == os.getuid() and
          fm == "600" and dm == "700",
          f"{tag}: page {fu} {fm}, its directory {du} {dm}")
    for other in ("/profile.json", "/", f"/{secret.decode()}",
                  f"/{secret.decode()[:31]}/profile.json"):
        r, _ = v.request("GET", other)
        check(r.status == 404, f"{tag}: GET {other}: {r.status}")
    return args[0].decode()


def test_opener(dump):
    sigpipe_bit = 1 << (signal.SIGPIPE - 1)
    sigint_bit = 1 << (signal.SIGINT - 1)
    for tag, display in (("x11", {"DISPLAY": ":99"}),
                         ("wayland", {"WAYLAND_DISPLAY": "wayland-test"})):
        env, argv_path, proc_path = opener_env(tag, **display)
        v = View(dump, grace="0", no_open=False, env=env)
        said = v.until_ready()
        check(any("opening it with xdg-open" in x for x in said),
              f"{tag}: no 'opening it' message: {said}")
        deadline = time.time() + 10
        while not os.path.exists(argv_path) and time.time() < deadline:
            time.sleep(0.05)
        check(os.path.exists(argv_path),
              f"{tag}: the opener was not run:\n{v.stderr()}")
        with open(argv_path, "rb") as f:
            args = f.read().split(b"\0")[:-1]
        check_page(tag, v, args, argv_path[:-len(".argv")])
        with open(proc_path) as f:
            stat, status = f.read().split("\n", 1)
        pid = int(stat.split()[0])
        openers.append(pid)
        ppid, pgrp, sid = (int(x) for x in stat.rsplit(")", 1)[1].split()[1:4])
        sigign = int(re.search(r"^SigIgn:\s*([0-9a-f]+)$", status,
                               re.M).group(1), 16)
        check(ppid == v.p.pid, f"{tag}: opener's parent {ppid}, not rtprof")
        # Its own session: the Ctrl-C that stops the server (the
        # terminal's foreground group) does not reach the browser.
        check(sid == pid and pgrp == pid and sid != os.getsid(v.p.pid),
              f"{tag}: opener pid {pid} pgrp {pgrp} sid {sid}, rtprof's "
              f"sid {os.getsid(v.p.pid)}")
        check(sigign & (sigpipe_bit | sigint_bit) == 0,
              f"{tag}: opener starts with SigIgn {sigign:x}")
        # The opener still runs (it sleeps): the server is not held up.
        t0 = time.time()
        fetch_and_stop(v, tag)
        check(time.time() - t0 < 5, f"{tag}: stopped late (opener?)")
        page = args[0].decode()
        check(not os.path.exists(page) and
              not os.path.exists(os.path.dirname(page)),
              f"{tag}: {page} left behind")
        check(os.path.exists(f"/proc/{pid}"), f"{tag}: opener gone early")
        kill_opener(pid)

    # Never run: --no-open (with a display), no display, empty ones.
    for tag, display, no_open, says in (
            ("no-open", {"DISPLAY": ":99", "WAYLAND_DISPLAY": "w"}, True, None),
            ("no-display", {}, False, "no display"),
            ("empty-display", {"DISPLAY": "", "WAYLAND_DISPLAY": ""}, False,
             "no display")):
        env, argv_path, proc_path = opener_env(tag, **display)
        v = View(dump, grace="0", no_open=no_open, env=env)
        said = v.until_ready()
        fetch_and_stop(v, tag)
        time.sleep(0.5)         # a late opener would have written by now
        ran = os.path.exists(proc_path)
        if ran:
            with open(proc_path) as f:
                openers.append(int(f.read().split()[0]))
        check(not ran and not os.path.exists(argv_path),
              f"{tag}: the opener was run")
        check(not any("opening" in x for x in said),
              f"{tag}: says it opens: {said}")
        check(says is None or any(says in x for x in said),
              f"{tag}: does not say '{says}': {said}")


def profile_pids(p):
    """Top-level pids and each sub-process's, as sets of strings."""
    top = {str(t["pid"]) for t in p["threads"]}
    subs = [{str(t["pid"]) for t in sp["threads"]} for sp in p["processes"]]
    return top, subs


def test_multi(dump, dump2, pids):
    want = {str(x) for x in pids}
    v = View(dump, dump2, grace="0", verbose=False)
    body, _ = fetch_and_stop(v, "two dumps")
    served = os.path.join(WORK, "multi.json.gz")
    with open(served, "wb") as f:
        f.write(body)
    r = run([PY, os.path.join(SRC, "gecko_check.py"), "--expect-processes",
             "2", served])
    check(r.returncode == 0, f"two dumps: gecko_check.py:\n{r.stdout}")
    top, subs = profile_pids(json.loads(gzip.decompress(body)))
    check(len(subs) == 1 and len(top) == 1 and len(subs[0]) == 1 and
          top | subs[0] == want, f"two dumps: pids {top} {subs}, want {want}")
    check("\r" not in v.stderr() and "MB read" not in v.stderr(),
          f"progress drawn on a file:\n{v.stderr()!r}")

    # The first dump from stdin, after 0.5 s without a byte: a conversion
    # that lasts, so the progress line (drawn after 0.1 s) is due.
    with open(dump, "rb") as f:
        data = f.read()
    bar = re.compile(rb"\rrtprof view: <stdin> [0-9.]+ MB read\x1b\[K")
    for tty, quiet in ((True, False), (False, False), (True, True)):
        what = f"stdin + dump, stderr {'a tty' if tty else 'a file'}" + \
            (", -q" if quiet else "")
        v = View("-", dump2, *(["-q"] if quiet else []), grace="0",
                 verbose=False, tty=tty, feed=data)
        body, _ = fetch_and_stop(v, what)
        top, subs = profile_pids(json.loads(gzip.decompress(body)))
        check(top | set().union(*subs) == want, f"{what}: pids {top} {subs}")
        if tty:
            check(v.tty_done.wait(10), f"{what}: the pty stays open")
            err = bytes(v.tty)
        else:
            with open(v.err_path, "rb") as f:
                err = f.read()
        drawn = bar.search(err) is not None
        check(drawn == (tty and not quiet),
              f"{what}: progress {'drawn' if drawn else 'not drawn'}: "
              f"{err!r}")
        if drawn:
            check(err.endswith(b"\r\x1b[K"), f"{what}: line not erased: "
                  f"{err!r}")


def ipv4_addresses():
    """This host's IPv4 addresses (SIOCGIFADDR on every interface)."""
    got = set()
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        for _, name in socket.if_nameindex():
            try:
                r = fcntl.ioctl(s.fileno(), 0x8915,       # SIOCGIFADDR
                                struct.pack("256s", name.encode()[:15]))
            except OSError:
                continue        # no IPv4 address
            got.add(socket.inet_ntoa(r[20:24]))
    finally:
        s.close()
    return got


def listeners(port):
    """(table, local address) of every TCP socket listening on @port."""
    got = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                rows = f.read().splitlines()[1:]
        except FileNotFoundError:
            continue
        for row in rows:
            fields = row.split()
            addr, p = fields[1].split(":")
            if int(p, 16) == port and fields[3] == "0A":   # TCP_LISTEN
                got.append((table, addr))
    return got


def connects(family, addr, port):
    """None when a connection to @addr:@port was made, else the error."""
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((addr, port))
        return None
    except OSError as e:
        return e
    finally:
        s.close()


def test_port_loopback(dump):
    # A free port: bound by us, then released.
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    v = View("--port", str(port), dump, grace="0")
    check(v.port == port, f"--port {port}: served on {v.port}")
    check(v.url.startswith(f"http://127.0.0.1:{port}/"), f"URL {v.url}")
    check(urllib.parse.quote(f"127.0.0.1:{port}/", safe="") in v.address,
          f"from-url address {v.address} lacks the port")

    # Bound to 127.0.0.1 only: one listener, in the IPv4 table.
    lo = "%08X" % struct.unpack("=I", socket.inet_aton("127.0.0.1"))[0]
    got = listeners(port)
    check(got == [("/proc/net/tcp", lo)],
          f"listeners on {port}: {got}, want 127.0.0.1 ({lo}) only")
    check(connects(socket.AF_INET, "127.0.0.1", port) is None,
          "no connection to 127.0.0.1")
    # Another loopback address (same interface), this host's other
    # addresses, IPv6 loopback: nobody listens there.
    err = connects(socket.AF_INET, "127.0.0.2", port)
    check(isinstance(err, ConnectionRefusedError),
          f"127.0.0.2:{port}: {err or 'connected'}, want refused")
    others = sorted(a for a in ipv4_addresses() if not a.startswith("127."))
    for a in others:
        err = connects(socket.AF_INET, a, port)
        check(isinstance(err, ConnectionRefusedError),
              f"{a}:{port}: {err or 'connected'}, want refused")
    if socket.has_ipv6:
        err = connects(socket.AF_INET6, "::1", port)
        check(err is not None, f"[::1]:{port}: connected")
    print(f"test_view: port {port} on 127.0.0.1 only; refused on "
          f"127.0.0.2 {' '.join(others)} ::1")
    fetch_and_stop(v, f"--port {port}")


PAGE = """<!doctype html>
<html><body><div id="out">pending</div><script>
async function get(u, preflight) {
  try {
    const r = await fetch(u, preflight ? {headers: {"X-Rtprof-Test": "1"}}
                                       : {});
    const p = await r.json();
    return "ok:" + p.meta.version + ":" + p.threads.length;
  } catch (e) {
    return "error:" + e.name;
  }
}
(async () => {
  const q = new URLSearchParams(location.search);
  const res = [await get(q.get("a"), false), await get(q.get("a"), true),
               await get(q.get("b"), false)];
  document.getElementById("out").textContent =
      "RESULT " + res.join(" ") + " END";
})();
</script></body></html>
"""


def test_chromium(dump):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        print("test_view: SKIP: no chromium (Debian package chromium, "
              "scripts/deps.sh installs it)")
        sys.exit(77)
    site = os.path.join(WORK, "site")
    os.makedirs(site, exist_ok=True)
    with open(os.path.join(site, "page.html"), "w") as f:
        f.write(PAGE)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *a, **kw):
            super().__init__(*a, directory=site, **kw)

        def log_message(self, *a):
            pass

    # The page's origin: a second local server, another port.
    page_srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=page_srv.serve_forever, daemon=True).start()
    origin = f"http://127.0.0.1:{page_srv.server_address[1]}"
    try:
        a = View(dump, grace="60", origins=[origin])
        b = View(dump, grace="60")      # does not allow the page's origin
        page = (f"{origin}/page.html?a={urllib.parse.quote(a.url, safe='')}"
                f"&b={urllib.parse.quote(b.url, safe='')}")
        profile_dir = os.path.join(WORK, "chromium-profile")
        shutil.rmtree(profile_dir, ignore_errors=True)
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--no-first-run", "--disable-extensions",
               "--disable-dev-shm-usage", f"--user-data-dir={profile_dir}",
               "--virtual-time-budget=20000", "--dump-dom", page]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True,
                               timeout=50)
        except subprocess.TimeoutExpired:
            fail("chromium did not finish within 50 s")
        m = re.search(r"RESULT (.*?) END", r.stdout)
        check(m is not None, f"no result in the DOM (exit {r.returncode}):\n"
              f"{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
        got = m.group(1).split()
        print(f"test_view: chromium read: {got}")
        check(re.fullmatch(r"ok:36:\d+", got[0]) is not None,
              f"plain fetch failed: {got[0]}")
        check(re.fullmatch(r"ok:36:\d+", got[1]) is not None,
              f"fetch with a preflight failed: {got[1]}")
        check(got[2].startswith("error:"),
              f"a server not allowing the origin was read: {got[2]}")
        for v in (a, b):
            v.p.send_signal(signal.SIGINT)
        rc_a, out_a = a.wait(15)
        rc_b, _ = b.wait(15)
        check(rc_a == 0 and rc_b == 0, f"exit {rc_a} {rc_b}")
        log = a.stderr()
        check("OPTIONS " + a.path + " -> 204" in log,
              f"no preflight reached the server:\n{log}")
        check(log.count("GET " + a.path + " -> 200") >= 2,
              f"two GETs expected:\n{log}")
        check("fetched 2 times" in out_a, f"fetch count:\n{out_a}")
    finally:
        page_srv.shutdown()


def main():
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    dump = os.path.join(WORK, "rec.rtprof")
    r = run([REC, dump])
    check(r.returncode == 0, f"gecko_rec failed: {r.stderr}")
    try:
        if CHROMIUM:
            test_chromium(dump)
        else:
            gz, js = test_http(dump)
            test_profiles(gz, js)
            test_usage(dump, js)
            test_opener(dump)
            # A second recording (another process): its pid is known
            # (gecko_rec is the process that records).
            dump2 = os.path.join(WORK, "rec2.rtprof")
            pids = []
            for d in (dump, dump2):
                p = subprocess.Popen([REC, d], stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE)
                _, err = p.communicate(timeout=60)
                check(p.returncode == 0, f"gecko_rec failed: {err}")
                pids.append(p.pid)
            test_multi(dump, dump2, pids)
            test_port_loopback(dump)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
        # Fake openers left sleeping, those a failed check did not note.
        for name in os.listdir(WORK):
            if name.startswith("opener-") and name.endswith(".proc"):
                try:
                    with open(os.path.join(WORK, name)) as f:
                        openers.append(int(f.read().split()[0]))
                except (OSError, ValueError, IndexError):
                    pass
        for pid in set(openers):
            kill_opener(pid)
    print("test_view: ok")


if __name__ == "__main__":
    main()
