"""kgrind_annotate's runs for the tests (the `annotate` fixture), each a
fork of one process per pytest worker that has loaded the script and its
modules once (tests/annotate_server.pl): the run a fresh process makes
(its working directory, arguments, standard output and error, exit
status), without Perl's start-up: 100 runs of --ksf on the thesis's
profile take 6.0 s of CPU against 10.0 s as programs. Tests that need
the script itself (its @INC, its installed copy, a terminal, binary
output) run it as a program (test_annotate.annotate_cmd)."""
import json
import os
import pathlib
import subprocess

import profile_check

SERVER = pathlib.Path(__file__).resolve().parent / 'annotate_server.pl'


def _wire(s):
    """A path or argument as its bytes (what exec would pass), one
    character each in the JSON request."""
    return os.fsencode(str(s)).decode('latin-1')


class Runner:
    def __init__(self, script_cmd, scratch):
        """script_cmd: how the script is run (test_annotate.annotate_cmd());
        scratch: a directory for the runs' output while they are read."""
        self.script = pathlib.Path(script_cmd[-1]).resolve()
        self.scratch = pathlib.Path(scratch)
        self.proc = None
        self.n = 0

    def _start(self):
        err = self.scratch / 'server.err'
        with open(err, 'wb') as e:
            self.proc = subprocess.Popen(['perl', str(SERVER), str(self.script)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, stderr=e, text=True)
        ready = self.proc.stdout.readline()
        # loading printed nothing (a warning would be on every run's stderr)
        assert ready == 'ready\n' and err.read_bytes() == b'', err.read_text(errors='replace')

    def run(self, args, cwd=None, timeout=120):
        """A subprocess.CompletedProcess of the script's run, its output as
        text (as subprocess.run's text=True gives it)."""
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.n += 1
        out, err = self.scratch / f'{self.n}.out', self.scratch / f'{self.n}.err'
        args = [str(a) for a in args]
        self.proc.stdin.write(json.dumps({'cwd': _wire(cwd or os.getcwd()), 'args': [_wire(a) for a in args],
                                          'out': _wire(out), 'err': _wire(err), 'timeout': timeout}) + '\n')
        self.proc.stdin.flush()
        status = self.proc.stdout.readline().strip()
        try:
            assert status, f'{SERVER.name} stopped'
            if status == 'signal 14':   # SIGALRM: the run's time was up
                raise subprocess.TimeoutExpired(['kgrind_annotate', *args], timeout)
            assert not status.startswith('signal'), f'kgrind_annotate {" ".join(args)}: killed by {status}'
            with open(out) as o, open(err) as e:
                done = subprocess.CompletedProcess(['kgrind_annotate', *args], int(status), o.read(), e.read())
            if len(args) == 1 and not args[0].startswith('-') and done.returncode == 0 and not done.stderr:
                profile_check.note_read(pathlib.Path(cwd or os.getcwd()) / args[0])
            return done
        finally:
            for f in (out, err):
                f.unlink(missing_ok=True)

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None
