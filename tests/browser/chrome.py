"""The tests' side of driver.js: a real headless Chromium (Debian's) driven
by puppeteer-core from npm, one JSON command a line. Every answer is awaited
with a bound, so a stuck page fails the test instead of hanging it."""
import json
import os
import select
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BUILD = os.environ.get("LT_BUILD", os.path.join(ROOT, "build"))
NODE_MODULES = os.path.join(BUILD, "npm", "node_modules")


class PageError(Exception):
    pass


class Page:
    def __init__(self, width=1400, height=1200, timeout=60):
        self.timeout = timeout
        env = dict(os.environ, NODE_PATH=NODE_MODULES, TRACY_BROWSER_WIDTH=str(width),
                   TRACY_BROWSER_HEIGHT=str(height))
        self.proc = subprocess.Popen(
            ["node", os.path.join(HERE, "driver.js")], stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        self._buf = b""
        self._next = 0
        self.version = self._answer(0)

    def _line(self, deadline):
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.proc.stdout], [], [], left)[0]:
                raise PageError("the browser did not answer in %d s" % self.timeout)
            chunk = os.read(self.proc.stdout.fileno(), 1 << 20)
            if not chunk:
                raise PageError("the driver exited: %s" % self.proc.stderr.read().decode()[-2000:])
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def _answer(self, want, timeout=None):
        deadline = time.monotonic() + (timeout or self.timeout)
        while True:
            msg = self._line(deadline)
            if msg.get("id") == want:
                if "error" in msg:
                    raise PageError(msg["error"])
                return msg.get("value")

    def call(self, op, **args):
        """One command; its answer is awaited for the command's own timeout
        (args["timeout"], seconds) or the page's, whichever is longer."""
        self._next += 1
        limit = max(self.timeout, args.get("timeout") or 0) + 5
        args.update(id=self._next, op=op)
        self.proc.stdin.write((json.dumps(args) + "\n").encode())
        self.proc.stdin.flush()
        return self._answer(self._next, limit)

    def open(self, url, ready=None, timeout=30):
        return self.call("open", url=url, ready=ready, timeout=timeout)

    def eval(self, expr):
        return self.call("eval", expr=expr)

    def wait(self, expr, timeout=30):
        return self.call("wait", expr=expr, timeout=timeout)

    def mouse(self, *steps):
        return self.call("mouse", steps=list(steps))

    def click(self, selector):
        return self.call("click", selector=selector)

    def type(self, selector, text):
        return self.call("type", selector=selector, text=text)

    def screenshot(self, path):
        return self.call("screenshot", path=path)

    def log(self):
        return self.call("log")

    def close(self):
        try:
            self.proc.stdin.close()
            self.proc.wait(timeout=20)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
