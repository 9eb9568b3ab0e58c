"""A real headless Chromium for the tests, driven through the DevTools
protocol on a pipe (--remote-debugging-pipe: fd 3 carries commands to the
browser, fd 4 its answers, each message a JSON object ended by a NUL). No
network: the pages are files. Collects console errors and uncaught
exceptions, evaluates JavaScript in the page and takes screenshots."""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


class BrowserError(Exception):
    pass


class Browser:
    def __init__(self, width=1280, height=1000, timeout=60):
        self.timeout = timeout
        if not os.access(CHROMIUM, os.X_OK):
            raise BrowserError("%s not found: run make deps (Debian's chromium)" % CHROMIUM)
        self.profile = tempfile.mkdtemp(prefix="tracy-chromium.")
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()

        def fds():
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        self.proc = subprocess.Popen(
            [CHROMIUM, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
             "--disable-gpu", "--no-first-run", "--no-default-browser-check",
             "--disable-extensions", "--disable-background-networking",
             "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height),
             "about:blank"],
            preexec_fn=fds, pass_fds=(3, 4, to_child, from_child), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._next = 0
        self.session = None
        self.errors = []
        self.events = []
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self.session = self.call("Target.attachToTarget", targetId=target,
                                 flatten=True)["sessionId"]
        self.requests = []
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(domain + ".enable")

    # ---- protocol ------------------------------------------------------

    def _send(self, msg):
        data = json.dumps(msg).encode() + b"\0"
        while data:
            data = data[os.write(self._w, data):]

    def _recv(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._r], [], [], left)[0]:
                raise BrowserError("chromium did not answer in time")
            chunk = os.read(self._r, 1 << 20)
            if not chunk:
                raise BrowserError("chromium closed the pipe")
            self._buf += chunk
        msg, self._buf = self._buf.split(b"\0", 1)
        return json.loads(msg)

    def _note(self, msg):
        method, params = msg.get("method"), msg.get("params", {})
        self.events.append(method)
        if method == "Runtime.exceptionThrown":
            d = params["exceptionDetails"]
            self.errors.append("exception: %s" % d.get("exception", {}).get(
                "description", d.get("text")))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.errors.append("console.%s: %s" % (params["type"], " ".join(
                str(a.get("value", a.get("description"))) for a in params.get("args", []))))
        elif method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.errors.append("log: %s" % params["entry"]["text"])

    def call(self, method, **params):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params}
        if self.session and not method.startswith("Target."):
            msg["sessionId"] = self.session
        self._send(msg)
        deadline = time.monotonic() + self.timeout
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise BrowserError("%s: %s" % (method, reply["error"]))
                return reply.get("result", {})
            self._note(reply)

    # ---- pages ---------------------------------------------------------

    def open(self, url, ready="document.readyState === 'complete'", timeout=30):
        """Loads url and waits until the JavaScript expression `ready` is true."""
        self.call("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not self.eval(ready):
            if time.monotonic() > deadline:
                raise BrowserError("%s: not ready after %ds (%s)" % (url, timeout, self.errors))
            time.sleep(0.1)

    def wait_for(self, expression, timeout=30):
        """The value of `expression` once it is truthy (drawing may be animated)."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.eval(expression)
            if value or time.monotonic() > deadline:
                return value
            time.sleep(0.1)

    def eval(self, expression):
        r = self.call("Runtime.evaluate", expression=expression, returnByValue=True,
                      awaitPromise=True)
        if "exceptionDetails" in r:
            raise BrowserError("%s: %s" % (expression, r["exceptionDetails"]))
        return r["result"].get("value")

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png",
                         captureBeyondViewport=True)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def close(self):
        try:
            if self.proc.poll() is None:
                self.session = None
                self._send({"id": self._next + 1, "method": "Browser.close"})
                self.proc.wait(timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
        finally:
            os.close(self._r)
            os.close(self._w)
            shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
