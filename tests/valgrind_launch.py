"""How the test suite runs Valgrind: kgrind and every reference tool (none,
cachegrind, callgrind) through the one launcher configure chose, with the
build's in-place library directory and the same environment. A launcher
that is a shell script (Debian's /usr/bin/valgrind) or an ELF program (a
Valgrind built from source) then changes nothing between the runs that a
test compares: the guest's start-up work depends on its environment."""
import os
import pathlib
import platform

# Platforms this machine may run under qemu-user instead (a cross build:
# docs/building.md, "arm64"): the machine that runs them natively, the
# emulator and the sysroot of the cross compiler's C library.
EMULATED = {'arm64-linux': ('aarch64', 'qemu-aarch64-static', '/usr/aarch64-linux-gnu')}


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
        self.platform = self.conf.get('VG_PLATFORM', '')
        native, *self.emulator = EMULATED.get(self.platform, (platform.machine(), None, None))
        if native == platform.machine():
            self.emulator = None

    def missing(self):
        """What is missing to run the build's tools, or None."""
        if not self.conf_path.exists():
            return f'{self.conf_path} is missing: build first (./setup.sh --build)'
        if not (self.lib / f'kgrind-{self.conf.get("VG_PLATFORM", "")}').exists():
            return f'{self.lib} holds no kgrind: build first (./setup.sh --build)'
        return None

    def argv(self, tool, *opts):
        if self.emulator:
            # The launcher is the other machine's program: the tool is run
            # as the launcher would run it (VALGRIND_LAUNCHER in env()),
            # with --tool (the core preloads vgpreload_<tool>: memcheck's
            # without it).
            qemu, sysroot = self.emulator
            return [qemu, '-L', sysroot, str(self.lib / f'{tool}-{self.platform}'), f'--tool={tool}',
                    *map(str, opts)]
        return [self.launcher, f'--tool={tool}', *map(str, opts)]

    def native_argv(self, exe, *args):
        """A program of the build's platform run natively (under the emulator
        for an emulated one)."""
        if self.emulator:
            qemu, sysroot = self.emulator
            return [qemu, '-L', sysroot, str(exe), *map(str, args)]
        return [str(exe), *map(str, args)]

    def env(self, base=None):
        env = dict(os.environ if base is None else base)
        env['VALGRIND_LIB'] = str(self.lib)
        if self.emulator:
            env['VALGRIND_LAUNCHER'] = self.launcher
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
