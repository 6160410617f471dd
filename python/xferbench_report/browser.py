"""Opens a rendered report in headless Chromium and says what a reader would meet:
console errors, images that do not load, links that lead nowhere, and whether
the first image shows on the first screen. Optionally saves a screenshot of
that first screen.

Talks to Chromium over --remote-debugging-pipe (the DevTools protocol as
NUL-terminated JSON on file descriptors 3 and 4), so it needs nothing beyond
the standard library and Debian's chromium package: no websocket client, no
playwright.

    python -m xferbench_report.browser REPORT_DIR [--screenshot FILE.png]

Exit status: 0 no problem, 1 problems found (one line each), 2 no Chromium or
no report there.
"""

import argparse
import base64
import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

SCREEN = (1280, 800)  # a laptop's first screen, CSS pixels
CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")


class BrowserError(Exception):
    """Chromium is absent, would not start, or stopped answering."""


def find_chromium():
    env = os.environ.get("XFER_CHROMIUM")
    if env:
        return env if shutil.which(env) else None
    return next((shutil.which(c) for c in CANDIDATES if shutil.which(c)), None)


class _Pipe:
    """One Chromium process and the protocol over its pipe."""

    def __init__(self, exe, timeout):
        self.deadline = time.monotonic() + timeout
        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()

        def fds():  # Chromium reads commands on fd 3 and writes replies on fd 4
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        args = [exe, "--headless", "--remote-debugging-pipe", "--disable-gpu", "--hide-scrollbars",
                "--no-first-run", "--no-default-browser-check", "--disable-extensions", "--mute-audio",
                f"--user-data-dir={self._profile()}", "about:blank"]
        if hasattr(os, "geteuid") and os.geteuid() == 0:
            args.insert(1, "--no-sandbox")  # Chromium refuses to run its sandbox as root (containers, CI)
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, preexec_fn=fds, pass_fds=(3, 4))
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.buf = b""
        self.next_id = 0
        self.events = []

    def _profile(self):
        import tempfile

        self.profile = tempfile.mkdtemp(prefix="xferbench-chromium-")
        return self.profile

    def send(self, method, params=None, session=None):
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self.to_chrome, json.dumps(msg).encode() + b"\0")
        want = self.next_id
        while True:
            m = self._read()
            if m.get("id") == want:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method):
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read()
            if m.get("method") == method:
                return m
            self.events.append(m)

    def _read(self):
        while b"\0" not in self.buf:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("Chromium did not answer in time")
            ready, _, _ = select.select([self.from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self.from_chrome, 1 << 16)
            if not chunk:
                raise BrowserError("Chromium closed its pipe (did it start? run it by hand to see why)")
            self.buf += chunk
        raw, self.buf = self.buf.split(b"\0", 1)
        return json.loads(raw)

    def close(self):
        try:
            os.write(self.to_chrome, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


# Runs in the page after its load event: what a reader sees, as JSON.
_PROBE = """(() => {
  const imgs = [...document.images];
  const first = imgs[0];
  const r = first ? first.getBoundingClientRect() : null;
  return JSON.stringify({
    images: imgs.length,
    broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).map(i => i.getAttribute('src')),
    firstTop: r ? r.top + window.scrollY : null,
    firstBottom: r ? r.bottom + window.scrollY : null,
    screen: window.innerHeight,
    links: [...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href')),
    ids: [...document.querySelectorAll('[id]')].map(e => e.id),
  });
})()"""


def check_report(report_dir, screenshot=None, screen=SCREEN, timeout=60, exe=None):
    """Problems (one line each) a reader of REPORT_DIR/index.html meets; [] when none."""
    report_dir = Path(report_dir).resolve()
    index = report_dir / "index.html"
    if not index.is_file():
        raise BrowserError(f"{index}: no report there")
    exe = exe or find_chromium()
    if not exe:
        raise BrowserError("no Chromium found (install Debian's chromium package, or set XFER_CHROMIUM)")
    b = _Pipe(exe, timeout)
    problems = []
    try:
        target = b.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        s = b.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            b.send(f"{domain}.enable", session=s)
        b.send("Emulation.setDeviceMetricsOverride", {"width": screen[0], "height": screen[1],
                                                      "deviceScaleFactor": 1, "mobile": False}, session=s)
        b.send("Page.navigate", {"url": index.as_uri()}, session=s)
        b.wait_event("Page.loadEventFired")
        probe = json.loads(b.send("Runtime.evaluate", {"expression": _PROBE, "returnByValue": True},
                                  session=s)["result"]["value"])
        if screenshot:
            shot = b.send("Page.captureScreenshot", {"format": "png", "clip": {
                "x": 0, "y": 0, "width": screen[0], "height": screen[1], "scale": 1}}, session=s)
            Path(screenshot).write_bytes(base64.b64decode(shot["data"]))
            _palette(screenshot)
        events = list(b.events)
    finally:
        b.close()
    for m in events:
        method, p = m.get("method"), m.get("params", {})
        if method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            problems.append("console error: " + " ".join(str(a.get("value", a.get("description", "")))
                                                         for a in p.get("args", [])))
        elif method == "Runtime.exceptionThrown":
            problems.append("script error: " + p.get("exceptionDetails", {}).get("text", "?"))
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            e = p["entry"]
            problems.append(f"console error: {e.get('text', '?')}" + (f" ({e['url']})" if e.get("url") else ""))
    for src in probe["broken"]:
        problems.append(f"broken image: {src}")
    if probe["images"] == 0:
        problems.append("no image in the report")
    elif probe["firstTop"] is None or probe["firstTop"] >= probe["screen"]:
        problems.append(f"the first image starts at {probe['firstTop']:.0f} px, below the first screen "
                        f"({probe['screen']} px)")
    ids = set(probe["ids"])
    for href in probe["links"]:
        u = urlparse(href)
        if u.scheme in ("http", "https", "mailto"):
            continue
        if not u.path:
            if u.fragment and u.fragment not in ids:
                problems.append(f"broken link: {href} (no element with that id)")
        elif not (report_dir / unquote(u.path)).exists():
            problems.append(f"broken link: {href} (no such file)")
    return problems


def _palette(png):
    """256 colours, as the report's figures (figure_style._shrink): a committed screenshot a third the size."""
    try:
        from PIL import Image
    except ImportError:  # pillow comes with matplotlib; without it the full-colour file stays
        return
    with Image.open(png) as im:
        q = im.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE, dither=Image.Dither.NONE)
    q.save(png, optimize=True)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m xferbench_report.browser",
                                description="Open a rendered report in headless Chromium and list what is wrong.")
    p.add_argument("report", metavar="REPORT_DIR")
    p.add_argument("--screenshot", metavar="FILE.png", help="save the first screen")
    p.add_argument("--width", type=int, default=SCREEN[0])
    p.add_argument("--height", type=int, default=SCREEN[1])
    a = p.parse_args(argv)
    try:
        problems = check_report(a.report, a.screenshot, (a.width, a.height))
    except BrowserError as e:
        print(f"browser check: {e}", file=sys.stderr)
        return 2
    for line in problems:
        print(f"browser check: {line}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
