"""tfm-serve replicas behind nginx, through rolling restarts, for
test/Serve/serve-replicas.test.

  replicas_driver.py MODEL SRC CLI NGINX_CONF WORKDIR [--replicas N]
      [--clients C] [--requests R] [--max-requests M] [--rounds K] [--threads T]

Starts N tfm-serve replicas of MODEL on free loopback ports and nginx with
NGINX_CONF (deploy/nginx/tfm-serve.conf: its `server` lines of the upstream
and its `listen` line replaced by the free ports) under a main
configuration, pid file, temp dirs and logs of its own in WORKDIR/nginx
(the replicas' stderr in WORKDIR/tfm-serve-PORT.log). Then C clients send
one-sentence POST /translate requests through nginx (each client on one
keep-alive connection, as a client library would), at least R and on
until the restarts are done (at most M), while the replicas are restarted
in turn, K rounds: SIGTERM, wait for exit 0, start again on the same port,
wait until /health answers, wait until nginx sends it requests again, then
the next replica. Every answer must be 200 and the translator's line (CLI)
for its sentence, and no request may fail. Each loop is bounded in
requests and each wait in time; nginx and the replicas are stopped at the
end, also on failure.

Prints one line for FileCheck; the figures (requests/s, requests nginx sent
to a second replica, the replicas' peak RSS) go to stderr.
"""

import argparse
import ctypes
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

SERVE = "tfm-serve"
NGINX = "/usr/sbin/nginx"
REQUEST_TIMEOUT = 60  # seconds any one request may take
LOAD_SECONDS = 600    # the whole load, restarts included


def fail(message):
    print("FAIL: " + message)
    sys.stdout.flush()
    raise SystemExit(1)


def die_with_parent():
    """Run in a child before exec: it gets SIGKILL when this driver dies
    (lit's timeout, a crash), so no replica outlives the test."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def http_get(port, path, timeout=5):
    """(status, body) of GET path on 127.0.0.1:port, or (None, error)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request("GET", path)
        answer = conn.getresponse()
        return answer.status, answer.read().decode(errors="replace")
    except (OSError, http.client.HTTPException) as error:
        return None, repr(error)
    finally:
        conn.close()


def wait_healthy(port, seconds):
    """Until GET /health answers {"status":"ok"}: an operator's readiness
    check before a replica takes traffic again."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, body = http_get(port, "/health", timeout=2)
        if status == 200 and json.loads(body) == {"status": "ok"}:
            return
        time.sleep(0.05)
    fail("127.0.0.1:%d/health did not answer within %d s" % (port, seconds))


def translated_count(port):
    """POST /translate answered 200 by the replica on `port`, from its
    /metrics (0 when it does not answer)."""
    status, text = http_get(port, "/metrics")
    if status != 200:
        return 0
    match = re.search(r'^tfm_serve_requests_total\{path="/translate",code="200"\} (\S+)$',
                      text, re.M)
    return float(match.group(1)) if match else 0


class Replica:
    """One tfm-serve on a fixed loopback port, restartable."""

    def __init__(self, model, port, threads, workdir):
        self.command = [SERVE, "--port", str(port), "--threads", str(threads),
                        "--quiet", model]
        self.port = port
        # Its stderr, every start appended: a file, so that a long report
        # (a sanitizer's) cannot fill a pipe and hold the process.
        self.log = os.path.join(workdir, "tfm-serve-%d.log" % port)
        self.proc = None
        self.peak_rss_kb = 0

    def start(self):
        with open(self.log, "a") as stderr:
            self.proc = subprocess.Popen(self.command, stdout=subprocess.PIPE,
                                         stderr=stderr, text=True,
                                         preexec_fn=die_with_parent)
        line = []
        reader = threading.Thread(target=lambda: line.append(self.proc.stdout.readline()),
                                  daemon=True)
        reader.start()
        reader.join(60)
        if not line or "listening on http://127.0.0.1:%d" % self.port not in line[0]:
            self.proc.kill()
            fail("tfm-serve on port %d did not start: %r %s"
                 % (self.port, line, self.stderr()))
        wait_healthy(self.port, 30)

    def stderr(self):
        with open(self.log, encoding="utf-8", errors="replace") as f:
            return f.read()[-3000:]

    def note_rss(self):
        """The process's peak resident set so far (VmHWM)."""
        try:
            with open("/proc/%d/status" % self.proc.pid) as f:
                match = re.search(r"^VmHWM:\s+(\d+) kB", f.read(), re.M)
        except OSError:
            return
        if match:
            self.peak_rss_kb = max(self.peak_rss_kb, int(match.group(1)))

    def stop(self, seconds=60):
        """SIGTERM; its exit status within `seconds`."""
        self.note_rss()
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(seconds)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("tfm-serve on port %d did not exit within %d s of SIGTERM: %s"
                 % (self.port, seconds, self.stderr()))

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


# --- nginx ----------------------------------------------------------------

UPSTREAM_SERVER = re.compile(r"^(\s*)server\s+127\.0\.0\.1:\d+(\s[^;]*)?;\s*$", re.M)
LISTEN = re.compile(r"^(\s*)listen\s+127\.0\.0\.1:\d+;\s*$", re.M)


def site_config(shipped, ports, listen_port):
    """The shipped file with its replicas' `server` lines replaced by one per
    port (same parameters) and its `listen` port by ours. Fails when the
    file no longer has the lines this replaces, so it never tests a
    configuration other than the one shipped."""
    servers = list(UPSTREAM_SERVER.finditer(shipped))
    listens = list(LISTEN.finditer(shipped))
    if len(servers) < 2 or len(listens) != 1:
        fail("the nginx configuration has %d `server 127.0.0.1:PORT ...;` lines "
             "(2 or more expected) and %d `listen 127.0.0.1:PORT;` (1 expected)"
             % (len(servers), len(listens)))
    indent, parameters = servers[0].group(1), servers[0].group(2) or ""
    lines = "".join("%sserver 127.0.0.1:%d%s;\n" % (indent, port, parameters)
                    for port in ports)
    text = shipped[:servers[0].start()] + lines.rstrip("\n") + \
        UPSTREAM_SERVER.sub("", shipped[servers[0].end():])
    text = re.sub(r"\n\s*\n(\s*\n)+", "\n\n", text)
    return LISTEN.sub(lambda m: "%slisten 127.0.0.1:%d;" % (m.group(1), listen_port), text)


def main_config(prefix, site_path):
    """nginx's main configuration: everything under `prefix` (pid, logs,
    temp files); the access log names the replicas each request went to."""
    temp = os.path.join(prefix, "temp")
    return """worker_processes 2;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 512; }}
http {{
    log_format upstreams '$status $request_time "$request" "$upstream_addr" "$upstream_status"';
    access_log {prefix}/access.log upstreams;
    client_body_temp_path {temp}/body;
    proxy_temp_path {temp}/proxy;
    fastcgi_temp_path {temp}/fastcgi;
    uwsgi_temp_path {temp}/uwsgi;
    scgi_temp_path {temp}/scgi;
    include {site};
}}
""".format(prefix=prefix, temp=temp, site=site_path)


class Nginx:
    def __init__(self, prefix, shipped_path, ports, listen_port):
        self.prefix = prefix
        os.makedirs(os.path.join(prefix, "temp"), exist_ok=True)
        with open(shipped_path, encoding="utf-8") as f:
            site = site_config(f.read(), ports, listen_port)
        self.site_path = os.path.join(prefix, "tfm-serve.conf")
        with open(self.site_path, "w", encoding="utf-8") as f:
            f.write(site)
        self.conf = os.path.join(prefix, "nginx.conf")
        with open(self.conf, "w", encoding="utf-8") as f:
            f.write(main_config(prefix, self.site_path))
        self.port = listen_port
        self.proc = None

    def command(self, *extra):
        return [NGINX, "-p", self.prefix, "-e", os.path.join(self.prefix, "error.log"),
                "-c", self.conf] + list(extra)

    def start(self):
        check = subprocess.run(self.command("-t", "-q"), capture_output=True, text=True,
                               timeout=30)
        if check.returncode != 0:
            fail("nginx -t refused the configuration: " + check.stderr)
        # Its own session: stop() signals the master and its workers alike.
        with open(os.path.join(self.prefix, "stderr.log"), "w") as stderr:
            self.proc = subprocess.Popen(self.command("-g", "daemon off;"),
                                         stdout=subprocess.DEVNULL, stderr=stderr,
                                         start_new_session=True, preexec_fn=die_with_parent)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                fail("nginx exited at start: " + self.error_log())
            status, _ = http_get(self.port, "/health", timeout=2)
            if status == 200:
                return
            time.sleep(0.05)
        fail("nginx did not answer /health within 30 s: " + self.error_log())

    def error_log(self):
        try:
            with open(os.path.join(self.prefix, "error.log"), encoding="utf-8",
                      errors="replace") as f:
                return f.read()[-3000:]
        except OSError:
            return ""

    def access_log(self):
        with open(os.path.join(self.prefix, "access.log"), encoding="utf-8") as f:
            return f.read().splitlines()

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return
        try:
            os.killpg(self.proc.pid, signal.SIGTERM)  # fast shutdown
            self.proc.wait(15)
        except (subprocess.TimeoutExpired, ProcessLookupError):
            pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)


# --- the load ----------------------------------------------------------------


class Load:
    """`clients` threads sending POST /translate requests, one sentence each,
    each client on its own keep-alive connection to nginx (reopened after an
    error, which counts as a failure). Each client sends at least its share
    of `least` requests and goes on until finish() is called, but never past
    its share of `most`, nor past LOAD_SECONDS."""

    def __init__(self, port, src, cli, clients, least, most):
        self.port, self.src, self.cli = port, src, cli
        self.lines = [i for i, line in enumerate(src) if line.strip()]
        self.lock = threading.Lock()
        self.answered = 0
        self.failures = []
        self.finishing = threading.Event()
        self.deadline = time.monotonic() + LOAD_SECONDS

        def share(total, c):
            return total // clients + (c < total % clients)
        self.threads = [threading.Thread(target=self.client,
                                         args=(c, share(least, c), share(most, c)),
                                         daemon=True)
                        for c in range(clients)]

    def start(self):
        self.started = time.monotonic()
        for thread in self.threads:
            thread.start()

    def finish(self):
        self.finishing.set()

    def client(self, c, least, most):
        conn = None
        for r in range(most):
            if r >= least and self.finishing.is_set():
                break
            if time.monotonic() > self.deadline:
                with self.lock:
                    self.failures.append((c, r, "not sent: the load's %d s are over"
                                          % LOAD_SECONDS))
                break
            i = self.lines[(c * 7919 + r) % len(self.lines)]
            body = json.dumps({"q": self.src[i], "source": "en", "target": "de"})
            outcome = None
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port,
                                                      timeout=REQUEST_TIMEOUT)
                conn.request("POST", "/translate", body,
                             {"Content-Type": "application/json"})
                answer = conn.getresponse()
                raw = answer.read()
                if answer.status != 200:
                    outcome = "status %d: %r" % (answer.status, raw[:200])
                elif json.loads(raw) != {"translatedText": self.cli[i]}:
                    outcome = "line %d answered %r, the translator's %r" % (
                        i, raw[:200], self.cli[i])
            except (OSError, http.client.HTTPException, ValueError) as error:
                outcome = "line %d: %r" % (i, error)
                if conn is not None:
                    conn.close()
                conn = None
            with self.lock:
                self.answered += 1
                if outcome:
                    self.failures.append((c, r, outcome))
        if conn is not None:
            conn.close()

    def running(self):
        return any(thread.is_alive() for thread in self.threads)

    def join(self, seconds):
        deadline = time.monotonic() + seconds
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if self.running():
            fail("clients still waiting after %d s" % seconds)
        self.seconds = time.monotonic() - self.started


def rolling_restart(replicas, load, rounds, fail_timeout):
    """Each replica in turn, `rounds` times, under the load: stop it, start
    it, wait for /health, then until nginx sends it requests again (within
    the upstream's fail_timeout) before the next one is stopped. Returns
    the restarts done; fails when the load ended before they were."""
    restarts = 0
    for _ in range(rounds):
        for replica in replicas:
            if not load.running():
                fail("the load ended after %d of %d restarts: send more requests"
                     % (restarts, rounds * len(replicas)))
            before, began = load.answered, time.monotonic()
            code = replica.stop()
            if code != 0:
                fail("tfm-serve on port %d exited %d after SIGTERM under load: %s"
                     % (replica.port, code, replica.stderr()))
            stopped = time.monotonic()
            replica.start()
            healthy = time.monotonic()
            deadline = time.monotonic() + fail_timeout + 30
            while translated_count(replica.port) == 0:
                if not load.running():
                    fail("the load ended before nginx sent the restarted replica on "
                         "port %d a request: send more requests" % replica.port)
                if time.monotonic() > deadline:
                    fail("nginx sent the restarted replica on port %d nothing within "
                         "%d s" % (replica.port, fail_timeout + 30))
                time.sleep(0.05)
            restarts += 1
            print("restart %d: port %d stopped in %.1f s, healthy %.1f s later, sent "
                  "requests %.1f s later; %d requests meanwhile"
                  % (restarts, replica.port, stopped - began, healthy - stopped,
                     time.monotonic() - healthy, load.answered - before), file=sys.stderr)
            replica.note_rss()
    return restarts


def main():
    parser = argparse.ArgumentParser()
    for name in ("model", "src", "cli", "nginx_conf", "workdir"):
        parser.add_argument(name)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=1000,
                        help="at least this many, more while restarts go on")
    parser.add_argument("--max-requests", type=int, default=40000)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    src, cli = read_lines(args.src), read_lines(args.cli)
    with open(args.nginx_conf, encoding="utf-8") as f:
        match = re.search(r"fail_timeout=(\d+)s", f.read())
    fail_timeout = int(match.group(1)) if match else 10

    ports = []
    while len(ports) < args.replicas + 1:
        port = free_port()
        if port not in ports:
            ports.append(port)
    listen_port, ports = ports[0], ports[1:]
    workdir = os.path.abspath(args.workdir)
    replicas = [Replica(args.model, port, args.threads, workdir) for port in ports]
    nginx = Nginx(os.path.join(workdir, "nginx"), args.nginx_conf, ports, listen_port)
    try:
        for replica in replicas:
            replica.start()
        nginx.start()
        load = Load(nginx.port, src, cli, args.clients, args.requests, args.max_requests)
        load.start()
        restarts = rolling_restart(replicas, load, args.rounds, fail_timeout)
        load.finish()
        load.join(LOAD_SECONDS)
        for replica in replicas:
            code = replica.stop()
            if code != 0:
                fail("tfm-serve on port %d exited %d after SIGTERM: %s"
                     % (replica.port, code, replica.stderr()))
        nginx.stop()
    finally:
        nginx.stop()
        for replica in replicas:
            replica.kill()

    if load.failures:
        fail("%d of %d requests failed, first: %r (nginx's log: %s)"
             % (len(load.failures), load.answered, load.failures[0],
                os.path.join(nginx.prefix, "error.log")))
    if load.answered < args.requests:
        fail("%d answers, fewer than the %d requests asked" % (load.answered, args.requests))
    log = [line for line in nginx.access_log() if '"POST /translate ' in line]
    if len(log) != load.answered:
        fail("nginx logged %d requests, the clients sent %d" % (len(log), load.answered))
    # $upstream_addr lists every replica a request was sent to.
    passed_on = sum(1 for line in log if re.search(r'" "[^"]*, [^"]*" "[^"]*"$', line))
    if passed_on == 0:
        fail("nginx never passed a request on to another replica: the restarts "
             "were not under load")
    print("replicas: at least %d requests through nginx at %d clients, %d restarts of "
          "%d replicas one at a time; 0 failed, every answer the translator's"
          % (args.requests, args.clients, restarts, args.replicas))
    print("replicas: %d requests in %.1f s (%.0f/s); nginx passed %d on to another "
          "replica; peak RSS per replica %s MiB"
          % (load.answered, load.seconds, load.answered / load.seconds, passed_on,
             [round(r.peak_rss_kb / 1024, 1) for r in replicas]), file=sys.stderr)


if __name__ == "__main__":
    main()
