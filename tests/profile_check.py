"""Every profile the suite leaves behind is read back: the kgrind profiles
(callgrind format, `creator: kgrind`) in each test's temporary directory
go, when the test ends, to one tests/check_profiles.pl process that reads
them as kgrind_annotate does, beside the tests (the suite itself keeps one
core busy). So a test that only looks at some numbers of a profile cannot
pass with an inconsistent one. Tests that write bad profiles on purpose
are marked `writes_bad_profiles`."""
import pathlib
import subprocess
import threading

MARK = 'writes_bad_profiles'
CHECKER = pathlib.Path(__file__).resolve().parent / 'check_profiles.pl'


def is_kgrind_profile(path):
    try:
        with open(path, 'rb') as f:
            head = f.read(512)
    except OSError:
        return False
    return head.startswith(b'# callgrind format') and b'\ncreator: kgrind' in head


class ProfileCheck:
    def __init__(self):
        self.proc = None
        self.owner = {}          # profile path -> the test that left it
        self.done_dirs = set()   # directories handed over (or exempted)
        self.refusals = []       # (test, path, message)
        self._reader = None

    def _start(self):
        self.proc = subprocess.Popen(['perl', str(CHECKER)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, errors='replace')
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self):
        for line in self.proc.stdout:
            path, _, message = line.rstrip('\n').partition('\t')
            self.refusals.append((self.owner.get(path, '?'), path, message))

    def exempt(self, directory):
        self.done_dirs.add(pathlib.Path(directory))

    def submit(self, directory, test):
        directory = pathlib.Path(directory)
        self.done_dirs.add(directory)
        if not directory.is_dir():
            return
        for path in sorted(directory.rglob('*')):
            if path.is_file() and not path.is_symlink() and is_kgrind_profile(path):
                if self.proc is None:
                    self._start()
                self.owner[str(path)] = test
                self.proc.stdin.write(f'{path}\n')
                self.proc.stdin.flush()

    def submit_rest(self, basetemp):
        """The directories of module- and session-scoped fixtures."""
        basetemp = pathlib.Path(basetemp)
        if not basetemp.is_dir():
            return
        for directory in sorted(basetemp.iterdir()):
            if directory.is_dir() and not directory.is_symlink() and directory not in self.done_dirs:
                self.submit(directory, f'fixture directory {directory.name}')

    def finish(self):
        """The refusals, once the checker has read everything given."""
        if self.proc is None:
            return []
        self.proc.stdin.close()
        status = self.proc.wait()
        self._reader.join()
        if status not in (0, 1):
            self.refusals.append(('?', str(CHECKER), f'the checker stopped with status {status}'))
        return self.refusals
