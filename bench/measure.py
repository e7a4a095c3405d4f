"""Running one measured command (wall and CPU time, peak RSS) and reading what a
run left (k-SF node counts, tier statistics)."""
import os
import pathlib
import re
import subprocess
import threading
import time
from configs import TIER_STATS


# ---------------------------------------------------------------------------
# Running and measuring
# ---------------------------------------------------------------------------
TIME = '/usr/bin/time'   # Debian package "time"


def run_measured(cmd, stdin_path, stderr_path, env, cwd, timeout):
    """Runs cmd; returns (wall seconds, CPU seconds, peak RSS KiB, exit code or 'timeout').

    CPU seconds: user + system time of the run (wait4 counts the waited-for
    descendants): on a shared VM, far steadier than wall time.

    Peak RSS comes from /usr/bin/time -f %M, not from this process's wait4:
    Linux carries the RSS high-water mark of the pre-exec image into the
    child's ru_maxrss, so a child forked from this (large) Python process
    would report at least Python's RSS.  /usr/bin/time is small.  Valgrind
    execs its tool in the same process, so %M is the tool's peak."""
    rss_file = pathlib.Path(str(stderr_path) + '.rss')
    use_time = os.access(TIME, os.X_OK)
    full = [TIME, '-f', '%M', '-o', str(rss_file)] + cmd if use_time else cmd
    with open(stdin_path or os.devnull, 'rb') as inp, open(stderr_path, 'wb') as err:
        start = time.perf_counter()
        proc = subprocess.Popen(full, stdin=inp, stdout=subprocess.DEVNULL, stderr=err, env=env, cwd=cwd,
                                start_new_session=True)
        timed_out = []

        def kill():
            timed_out.append(1)
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
        timer = threading.Timer(timeout, kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        timer.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
    rss = usage.ru_maxrss
    if use_time:
        try:
            rss = int(rss_file.read_text().split()[-1])
        except (OSError, ValueError, IndexError):
            rss = 0
        rss_file.unlink(missing_ok=True)
    return elapsed, usage.ru_utime + usage.ru_stime, rss, ('timeout' if timed_out else proc.returncode)


KSF_RE = re.compile(rb'^# ksf-thread (\S+) nodes=(\d+)')


def ksf_nodes(path):
    """Sum of the k-SF node counts over the threads of a kgrind profile."""
    total, threads = 0, 0
    with open(path, 'rb') as f:
        for line in f:
            if line.startswith(b'# ksf-thread'):
                m = KSF_RE.match(line)
                if m:
                    total += int(m.group(2))
                    threads += 1
    return total, threads



def tier_stats(stderr_path):
    """Translations per tier of a --tiering=yes --stats=yes run, or None."""
    try:
        text = pathlib.Path(stderr_path).read_text(errors='replace')
    except OSError:
        return None
    m = TIER_STATS.search(text)
    if not m:
        return None
    threshold, tier_one, tier_two, promoted = map(int, m.groups())
    return {'threshold': threshold, 'tier_one': tier_one, 'tier_two': tier_two, 'promoted': promoted}
