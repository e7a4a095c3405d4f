"""Every profile the suite leaves behind is read back: when a test ends,
the kgrind profiles (callgrind format, `creator: kgrind`) in its temporary
directory are read by one long-lived tests/check_profiles.pl process as
kgrind_annotate reads them, and a refusal fails the test. So a test that
looks at some numbers of a profile cannot pass with an inconsistent one.
Tests that write bad profiles on purpose are marked `writes_bad_profiles`."""
import pathlib
import subprocess

MARK = 'writes_bad_profiles'
CHECKER = pathlib.Path(__file__).resolve().parent / 'check_profiles.pl'


def is_kgrind_profile(path):
    try:
        with open(path, 'rb') as f:
            head = f.read(512)
    except OSError:
        return False
    return head.startswith(b'# callgrind format') and b'\ncreator: kgrind' in head


# Profiles kgrind_annotate already read with its default options in a test
# (path => (size, mtime)): the read-back skips them while unchanged.
_read = {}


def _stamp(path):
    st = path.stat()
    return st.st_size, st.st_mtime_ns


def note_read(path):
    """A test's kgrind_annotate run with no option but path read it."""
    path = pathlib.Path(path).resolve()
    try:
        _read[path] = _stamp(path)
    except OSError:
        pass


def _already_read(path):
    try:
        return _read.get(path.resolve()) == _stamp(path)
    except OSError:
        return False


class ProfileCheck:
    def __init__(self):
        self.proc = None
        self.done_dirs = set()   # directories read back (or exempted)

    def _ask(self, path):
        if self.proc is None:
            self.proc = subprocess.Popen(['perl', str(CHECKER)], stdin=subprocess.PIPE,
                                         stdout=subprocess.PIPE, text=True, errors='replace')
        self.proc.stdin.write(f'{path}\n')
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        if not answer:
            self.proc = None
            return f'{CHECKER.name} stopped'
        return answer.rstrip('\n')

    def exempt(self, directory):
        self.done_dirs.add(pathlib.Path(directory))

    def refusals(self, directory):
        """[message] for the profiles under directory kgrind_annotate refuses."""
        directory = pathlib.Path(directory)
        self.done_dirs.add(directory)
        if not directory.is_dir():
            return []
        paths = [p for p in sorted(directory.rglob('*'))
                 if p.is_file() and not p.is_symlink() and is_kgrind_profile(p)]
        return [m for m in map(self._ask, (p for p in paths if not _already_read(p))) if m]

    def rest_refusals(self, basetemp):
        """The same for the directories of module- and session-scoped fixtures."""
        basetemp = pathlib.Path(basetemp)
        found = []
        if basetemp.is_dir():
            for directory in sorted(basetemp.iterdir()):
                if directory.is_dir() and not directory.is_symlink() and directory not in self.done_dirs:
                    found += self.refusals(directory)
        return found

    def close(self):
        if self.proc is not None:
            self.proc.stdin.close()
            self.proc.wait()
            self.proc = None
