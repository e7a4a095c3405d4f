"""Test-only tools (go tool pprof, chromium, speedscope from npm): installed
on first use when missing, so that users' setup does not need them; a test
is skipped, with the reason, only when the tool cannot be installed."""
import contextlib
import fcntl
import functools
import os
import pathlib
import shutil
import subprocess
import tempfile

import pytest


def _apt_install(package):
    """None on success, else apt-get's last error line (after an update and
    a second try)."""
    sudo = [] if os.geteuid() == 0 else ['sudo', '-n']
    env = dict(os.environ, DEBIAN_FRONTEND='noninteractive')
    # Another apt-get (not the tests') may hold dpkg's lock: wait for it.
    wait = ['-o', 'DPkg::Lock::Timeout=600']
    install = [*sudo, 'apt-get', *wait, 'install', '-y', '-qq', '--no-install-recommends', package]
    r = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    if r.returncode != 0:
        subprocess.run([*sudo, 'apt-get', *wait, 'update', '-qq'], capture_output=True, env=env, timeout=900)
        r = subprocess.run(install, capture_output=True, text=True, env=env, timeout=900)
    return None if r.returncode == 0 else (r.stderr.strip().splitlines() or ['?'])[-1]


@contextlib.contextmanager
def _one_installer():
    """The test workers (pytest -n) install one at a time: two apt-gets at
    once, one failed for dpkg's lock, and its test was skipped."""
    with open(pathlib.Path(tempfile.gettempdir()) / 'kgrind-tests-install.lock', 'a') as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


@functools.lru_cache(maxsize=None)
def debian_tool(command, package):
    """The path of command, installing the Debian package first if needed."""
    path = shutil.which(command)
    if path:
        return path
    with _one_installer():
        # Another worker may have installed it while this one waited.
        err = None if shutil.which(command) else _apt_install(package)
    path = shutil.which(command)
    if not path:
        pytest.skip(f'{command} is missing and apt-get install {package} failed: {err}')
    return path


@functools.lru_cache(maxsize=None)
def npm_package(name, where):
    """node_modules/<name> of an npm install into the directory where."""
    where = pathlib.Path(where)
    mod = where / 'node_modules' / name
    if (mod / 'package.json').exists():
        return mod
    npm = debian_tool('npm', 'npm')
    where.mkdir(parents=True, exist_ok=True)
    r = subprocess.run([npm, 'install', '--no-audit', '--no-fund', '--prefix', str(where), name],
                       capture_output=True, text=True, timeout=900)
    if r.returncode != 0 or not (mod / 'package.json').exists():
        pytest.skip(f'npm install {name} failed: {(r.stderr.strip().splitlines() or ["?"])[-1]}')
    return mod
