"""Headless chromium driven through the DevTools protocol over a pipe
(--remote-debugging-pipe: chromium reads commands on its fd 3 and writes
answers and events on its fd 4, each message JSON ended by a NUL byte), so
that a test waits for what it checks to be on the page instead of dumping
the DOM after a guessed amount of (virtual) time. Standard library only."""
import base64
import fcntl
import json
import os
import select
import subprocess
import tempfile
import time


class DevToolsError(AssertionError):
    pass


class Page:
    """One chromium showing url in a window of the given size; use as a
    context manager (chromium is closed, or killed, on the way out)."""

    def __init__(self, exe, url, width=1400, height=800, timeout=180):
        self.timeout = timeout
        to_chromium_r, self._to_chromium = os.pipe()
        self._from_chromium, from_chromium_w = os.pipe()
        # chromium's ends above 9, then bash puts them at fds 3 and 4
        to_chromium_r, from_chromium_w = (_above_9(fd) for fd in (to_chromium_r, from_chromium_w))
        self._err = tempfile.TemporaryFile()
        shell = 'exec "$0" "$@" 3<&%d 4>&%d %d<&- %d>&-' % ((to_chromium_r, from_chromium_w) * 2)
        self.proc = subprocess.Popen(
            ['bash', '-c', shell, exe, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
             '--remote-debugging-pipe', f'--window-size={width},{height}', 'about:blank'],
            pass_fds=(to_chromium_r, from_chromium_w), stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=self._err)
        os.close(to_chromium_r)
        os.close(from_chromium_w)
        self._buf = b''
        self._next_id = 0
        self._session = None
        try:
            deadline = time.monotonic() + timeout
            while True:     # the first page, once chromium has opened it
                page = next((t for t in self.call('Target.getTargets')['targetInfos'] if t['type'] == 'page'), None)
                if page:
                    break
                if time.monotonic() > deadline:
                    self._fail(f'no page within {timeout} s')
                time.sleep(0.1)
            self._session = self.call('Target.attachToTarget', targetId=page['targetId'], flatten=True)['sessionId']
            self.call('Page.navigate', url=url)
        except BaseException:
            self.close()
            raise

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fail(self, what):
        raise DevToolsError(f'chromium (DevTools protocol): {what}')

    def _message(self, deadline):
        while b'\0' not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                self._fail(f'no answer within {self.timeout} s')
            ready, _, _ = select.select([self._from_chromium], [], [], left)
            if ready:
                chunk = os.read(self._from_chromium, 1 << 16)
                if not chunk:
                    self._err.seek(0)
                    err = self._err.read().decode('utf-8', 'replace')
                    self._fail(f'chromium closed the pipe (status {self.proc.poll()}): {err[-2000:]}')
                self._buf += chunk
        msg, self._buf = self._buf.split(b'\0', 1)
        return json.loads(msg)

    def call(self, method, **params):
        """The result of one DevTools command (in the page's session once
        attached); events that come in between are ignored."""
        self._next_id += 1
        msg = {'id': self._next_id, 'method': method, 'params': params}
        if self._session and not method.startswith(('Target.', 'Browser.')):
            msg['sessionId'] = self._session
        os.write(self._to_chromium, json.dumps(msg).encode() + b'\0')
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._message(deadline)
            if answer.get('id') == self._next_id:
                if 'error' in answer:
                    self._fail(f'{method}: {answer["error"]}')
                return answer['result']

    def evaluate(self, expression):
        """The value of a JavaScript expression in the page."""
        r = self.call('Runtime.evaluate', expression=expression, returnByValue=True)
        if 'exceptionDetails' in r:
            self._fail(f'{expression}: {r["exceptionDetails"]}')
        return r['result'].get('value')

    def wait_for(self, expression, what, timeout=120, settle=0.25):
        """The value of expression once it is truthy and the same in two
        evaluations settle seconds apart (the page has finished drawing it);
        an exception (no document yet while the page loads) counts as not
        yet. Fails, saying what it waited for and what it last saw, after
        timeout seconds of wall time."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            r = self.call('Runtime.evaluate', expression=expression, returnByValue=True)
            value = None if 'exceptionDetails' in r else r['result'].get('value')
            if value and value == last:
                return value
            if time.monotonic() > deadline:
                seen = r.get('exceptionDetails', {}).get('exception', {}).get('description') or json.dumps(value)
                self._fail(f'waited {timeout} s for {what}; last saw {seen[:2000]}')
            last = value
            time.sleep(settle)

    def screenshot(self):
        """The page as PNG bytes."""
        return base64.b64decode(self.call('Page.captureScreenshot', format='png')['data'])

    def close(self):
        if self.proc.poll() is None:
            try:
                os.write(self._to_chromium, json.dumps({'id': 0, 'method': 'Browser.close'}).encode() + b'\0')
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        for fd in (self._to_chromium, self._from_chromium):
            try:
                os.close(fd)
            except OSError:
                pass
        self._err.close()


def _above_9(fd):
    """fd moved to a number above 9 (not 3 or 4, which the shell sets)."""
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return moved
