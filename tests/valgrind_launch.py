"""How the test suite runs Valgrind: kgrind and every reference tool (none,
cachegrind, callgrind) through the one launcher configure chose, with the
build's in-place library directory and the same environment. A launcher
that is a shell script (Debian's /usr/bin/valgrind) or an ELF program (a
Valgrind built from source) then changes nothing between the runs that a
test compares: the guest's start-up work depends on its environment."""
import os
import pathlib


class Valgrind:
    def __init__(self, build):
        build = pathlib.Path(build)
        self.conf_path = build / 'valgrind.conf'
        self.lib = build / 'kgrind' / '.in_place'
        self.conf = {}
        if self.conf_path.exists():
            for line in self.conf_path.read_text().splitlines():
                if line and not line.startswith('#') and '=' in line:
                    key, value = line.split('=', 1)
                    self.conf[key] = value
        self.launcher = self.conf.get('VALGRIND', 'valgrind')
        self.version = self.conf.get('VG_VERSION', '')
        self.includedir = self.conf.get('VG_INCLUDEDIR', '/usr/include/valgrind')

    def missing(self):
        """What is missing to run the build's tools, or None."""
        if not self.conf_path.exists():
            return f'{self.conf_path} is missing: build first (./setup.sh --build)'
        if not (self.lib / f'kgrind-{self.conf.get("VG_PLATFORM", "")}').exists():
            return f'{self.lib} holds no kgrind: build first (./setup.sh --build)'
        return None

    def argv(self, tool, *opts):
        return [self.launcher, f'--tool={tool}', *map(str, opts)]

    def env(self, base=None):
        env = dict(os.environ if base is None else base)
        env['VALGRIND_LIB'] = str(self.lib)
        return env

    def configure_args(self):
        """configure options that build against the same Valgrind (for
        tests that configure a tree of their own)."""
        prefix = self.conf.get('VG_PREFIX')
        return [f'--with-valgrind={prefix}', '--enable-untested-valgrind'] if prefix else []

    def series(self):
        """(major, minor) of the Valgrind version, e.g. (3, 19)."""
        parts = self.version.split('.')
        return tuple(int(p) for p in parts[:2]) if len(parts) >= 2 else (0, 0)
