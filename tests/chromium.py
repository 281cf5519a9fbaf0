"""A real headless Chromium, driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``:
commands on the browser's fd 3, answers on its fd 4, JSON separated by NUL), with the standard
library only. One browser serves a test module: it starts in about a second, each page after
that in milliseconds.

What a test reads of a page: the requests it made (Network), the console's errors, exceptions
and CSP violations (Runtime, Log), values computed in the page (``Runtime.evaluate`` runs under
DevTools, not under the page's CSP, so a page that forbids scripts can still be measured) and a
screenshot of the whole page.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

BINARIES = ("chromium", "chromium-browser", "google-chrome")
TIMEOUT_S = 30.0


def binary() -> str | None:
    return next((found for name in BINARIES if (found := shutil.which(name))), None)


class Browser:
    def __init__(self, profile: Path) -> None:
        exe = binary()
        if exe is None:
            raise FileNotFoundError("no chromium")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def wire() -> None:  # the child's fd 3 reads our commands, its fd 4 writes the answers
            os.dup2(to_browser_r, 3)
            os.dup2(from_browser_w, 4)

        argv = [exe, "--headless", "--remote-debugging-pipe", "--disable-gpu", "--no-first-run",
                "--no-default-browser-check", "--disable-extensions", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--mute-audio", "--hide-scrollbars",
                f"--user-data-dir={profile}"]  # fmt: skip
        if os.geteuid() == 0:
            argv.append("--no-sandbox")  # Chromium refuses to start its sandbox as root
        self.process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            preexec_fn=wire,
            pass_fds=(3, 4),  # kept open in the child after wire() (the others are closed after it)
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Network", "Runtime", "Log"):
            self.send(f"{domain}.enable", session=True)

    def send(
        self, method: str, params: dict[str, Any] | None = None, session: bool = False
    ) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            answer = self._read(deadline)
            if answer.get("id") == self._next:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self.events.append(answer)

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise TimeoutError("chromium did not answer")
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self._buffer += chunk
        raw, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(raw)

    def open(self, page: Path, width: int, height: int = 900) -> None:
        """Load ``page`` in a viewport ``width`` px wide (a phone's below 600 px) and wait for its
        load event; the events of the load are kept in ``events``."""
        self.events.clear()
        self.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600},
            session=True,
        )
        self.send("Page.navigate", {"url": page.resolve().as_uri()}, session=True)
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e.get("method") == "Page.loadEventFired" for e in self.events):
            self.events.append(self._read(deadline))

    def requests(self, page: Path) -> list[str]:
        """Every request the page made other than for itself."""
        own = page.resolve().as_uri()
        urls = [
            e["params"]["request"]["url"]
            for e in self.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        return [url for url in urls if url != own]

    def errors(self) -> list[str]:
        """Console errors, uncaught exceptions and the browser's own error entries (a CSP violation)."""
        found = []
        for event in self.events:
            method, params = event.get("method"), event.get("params") or {}
            if method == "Runtime.exceptionThrown":
                found.append(str(params.get("exceptionDetails", {}).get("text")))
            elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                found.append(
                    " ".join(str(a.get("value", a.get("description"))) for a in params.get("args", []))
                )
            elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
                found.append(str(params["entry"].get("text")))
        return found

    def evaluate(self, expression: str) -> Any:
        result = self.send(
            "Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True
        )
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text"))
        return result["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """The whole page (not only the viewport) as a PNG."""
        size = self.send("Page.getLayoutMetrics", session=True)["cssContentSize"]
        clip = {"x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1}
        shot = self.send(
            "Page.captureScreenshot",
            {"format": "png", "clip": clip, "captureBeyondViewport": True},
            session=True,
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path

    def close(self) -> None:
        with contextlib.suppress(OSError, EOFError, TimeoutError, RuntimeError):
            self.send("Browser.close")
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


# Elements that stick out of the page's width: whatever is not inside a box that scrolls on its
# own (a wide picture or a long command scrolls inside its frame; the page itself must not).
OVERFLOW_CHECK = """(() => {
  const width = document.documentElement.clientWidth;
  const out = [];
  for (const el of document.querySelectorAll('body *')) {
    if (el.parentElement && el.parentElement.closest('.scroll, pre')) continue;
    const box = el.getBoundingClientRect();
    if (box.width && (box.right > width + 1 || box.left < -1))
      out.push(el.tagName + '.' + el.className + ' ' + Math.round(box.right) + ': ' + (el.textContent || '').slice(0, 60));
  }
  return {width, scrollWidth: document.documentElement.scrollWidth, out: out.slice(0, 10)};
})()"""
