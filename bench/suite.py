#!/usr/bin/python3
"""kgrind benchmark suite: kgrind's function mode side by side with
Valgrind's own tools on workloads built at benchmark time and on Debian
programs.

    bench/suite.py                      the full suite (about 45 min), report in
                                        bench/results/<timestamp>/
    bench/suite.py --runs 1 --scale 0.1 --workloads callheavy \\
                   --configs none,kgrind-k2 --no-growth --no-ksweep --no-large --no-churn --no-events   (smoke)
    bench/suite.py --workloads= --no-growth --no-ksweep --large perl --large-runs 1 \\
                   --large-scale 0.01 --no-churn --no-events   the large-program phase only (smoke)
    bench/suite.py --workloads= --no-growth --no-ksweep --no-large --no-churn --out B   the events
                                        phase only (then --report-only A --merge B: into A's report)
    bench/suite.py --workloads= --no-growth --no-ksweep --no-large --no-events --out B   the thread-churn
                                        phase only (then --report-only A --merge B: into A's report)
    bench/suite.py --report-only bench/results/<timestamp>   redo report/charts

Steps:
 1. snapshots the built tool (build/kgrind/.in_place, build/perl/kgrind_annotate)
    into the results folder, so a rebuild during the run changes nothing;
 2. builds bench/workloads/*.{c,cpp} with -O2 -g and generates the inputs
    (bzip2's text, sqlite3's SQL script) deterministically for the scale;
 3. timing rounds: every workload under every configuration, once per round,
    the configuration order rotated each round (interleaved, so drift hits
    every configuration alike); wall time, peak RSS (wait4 rusage of the run),
    output size; for kgrind the k-SF node count (`# ksf-thread` records) and
    the k-CCF node count (`kgrind_annotate --format=json`, from round 1);
 4. growth: run time against input length (1x, 2x, 4x) on --growth workloads;
 5. k sweep: forest size, memory and time against k (1..8, inf);
 6. large programs (--large, --no-large): Debian cc1plus on a
    generated, preprocessed STL program, python3 and perl on
    bench/workloads/pywork.py and plwork.pl, under every large configuration
    (--large-configs: none, cachegrind, callgrind [--separate-callers=2],
    kgrind k=1, 2, 4, 8, inf), --large-runs interleaved rounds; then the
    wall time and peak RSS of kgrind_annotate's default report on their k=2
    and k=inf profiles (these get no --format=json: their inf-CCF is huge);
 7. thread churn (--churn, --no-churn): tests/progs/thread_churn.c creating
    1,000 and 10,000 threads, at most 8 alive, under kgrind: peak RSS side by
    side, and kgrind_annotate's default report on the larger profile
    (bench/churn.py);
 8. events (--events, --no-events): kgrind --cache-sim=yes and --branch-sim=yes
    at k=2 next to cachegrind and callgrind --separate-callers=2 with the same
    simulation, and --collect-data=yes, on the suite's workloads (and the
    large programs named there, at --large-scale), with peak RSS
    (bench/events_phase.py); --events-exact: every event against
    cachegrind's in total, per function and per line on Debian programs
    (bench/events_exact.py);
 9. report.md (Markdown tables, targets), results.json, charts/*.png.
    side, and kgrind_annotate's default report on the larger profile; the
    same with threads doing different work (bench/churn.py);
 8. report.md (Markdown tables, targets), results.json, charts/*.png.

Ratios (x none, x callgrind --separate-callers=2) are computed per round from
the same round's runs, then the median over rounds is shown.

Needs a built tree (./setup.sh --build), valgrind, bzip2, sqlite3 and, for
charts, python3-matplotlib (Debian) under /usr/bin/python3."""
import argparse
import datetime
import hashlib
import json
import math
import os
import pathlib
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'bench'))
sys.path.insert(0, str(ROOT / 'tests'))
import churn  # noqa: E402  (the thread-churn phase)
import events_exact  # noqa: E402  (events against cachegrind's, per function and line)
import events_phase  # noqa: E402  (the events phase)
import valgrind_launch  # noqa: E402
WORKLOADS_DIR = ROOT / 'bench' / 'workloads'
BUILD = pathlib.Path(os.environ.get('KGRIND_BUILD', ROOT / 'build'))
# the launcher of the Valgrind the build is made for (build/valgrind.conf):
# every tool of a comparison runs through it
VALGRIND = valgrind_launch.Valgrind(BUILD).launcher

# ---------------------------------------------------------------------------
# Configurations.  {out} is the output file of the run.
# ---------------------------------------------------------------------------
CONFIGS = [
    # name,                 valgrind options (None: native),                           kgrind k
    ('native',              None,                                                        None),
    ('none',                ['--tool=none'],                                             None),
    ('cachegrind',          ['--tool=cachegrind', '--cache-sim=no',
                             '--cachegrind-out-file={out}'],                             None),
    ('callgrind',           ['--tool=callgrind', '--callgrind-out-file={out}'],          None),
    ('callgrind-sc2',       ['--tool=callgrind', '--separate-callers=2',
                             '--callgrind-out-file={out}'],                              None),
    ('kgrind-k1',           ['--tool=kgrind', '--k=1', '--kgrind-out-file={out}'],       '1'),
    ('kgrind-k2',           ['--tool=kgrind', '--k=2', '--kgrind-out-file={out}'],       '2'),
    ('kgrind-k4',           ['--tool=kgrind', '--k=4', '--kgrind-out-file={out}'],       '4'),
    ('kgrind-kinf',         ['--tool=kgrind', '--k=inf', '--kgrind-out-file={out}'],     'inf'),
]
CONFIG_LABELS = {
    'native': 'native', 'none': 'none', 'cachegrind': 'cachegrind --cache-sim=no',
    'callgrind': 'callgrind', 'callgrind-sc2': 'callgrind --separate-callers=2',
    'kgrind-k1': 'kgrind --k=1', 'kgrind-k2': 'kgrind --k=2', 'kgrind-k4': 'kgrind --k=4',
    'kgrind-kinf': 'kgrind --k=inf',
}
# Block modes (docs/design/block-modes.md).  They trace the main
# executable's functions by default (--funcs), so they run only on the
# workloads built here (BLOCK_WORKLOADS): Debian's bzip2 and sqlite3 keep
# their work in stripped shared libraries, where they would trace nothing and
# time only Valgrind.  --roll-loops implies --k=inf (a finite k is refused).
# Targets: intra <= 4x none, inter <= 3x none (geometric means).
BLOCK_WORKLOADS = ['callheavy', 'cppvirt', 'numeric', 'threads']
BLOCK_CONFIGS = [
    ('kgrind-intra-k2',     ['--tool=kgrind', '--mode=intra', '--k=2', '--kgrind-out-file={out}'], '2'),
    ('kgrind-intra-roll',   ['--tool=kgrind', '--mode=intra', '--roll-loops=yes',
                             '--kgrind-out-file={out}'], 'inf'),
    ('kgrind-inter-k2',     ['--tool=kgrind', '--mode=inter', '--k=2', '--kgrind-out-file={out}'], '2'),
    ('kgrind-inter-roll',   ['--tool=kgrind', '--mode=inter', '--roll-loops=yes',
                             '--kgrind-out-file={out}'], 'inf'),
]
BLOCK_CONFIG_NAMES = {n for n, _, _ in BLOCK_CONFIGS}
CONFIG_LABELS.update({
    'kgrind-intra-k2': 'kgrind --mode=intra --k=2', 'kgrind-intra-roll': 'kgrind --mode=intra --roll-loops=yes',
    'kgrind-inter-k2': 'kgrind --mode=inter --k=2', 'kgrind-inter-roll': 'kgrind --mode=inter --roll-loops=yes',
})
BASE = 'none'
CALLGRIND_REF = 'callgrind-sc2'
RATIO_REFS = {BASE: 'x_none', CALLGRIND_REF: 'x_cg', 'kgrind-k2': 'x_k2'}   # per-round wall-time ratios
KSWEEP_KS = ['1', '2', '3', '4', '5', '6', '7', '8', 'inf']
GROWTH_FACTORS = [1, 2, 4]
GROWTH_CONFIGS = ['native', 'none', 'kgrind-k2']

# ---------------------------------------------------------------------------
# Large programs: Debian programs nobody here wrote, big enough
# that per-context costs (counters, names) dominate: a compiler front end
# on a preprocessed STL-heavy input, the Python and Perl interpreters on
# pure-language workloads (bench/workloads/pywork.py, plwork.pl).  Costs
# against k (1, 2, 4, 8, inf) next to Valgrind's tools.
# ---------------------------------------------------------------------------
LARGE_NAMES = ['cc1plus', 'python3', 'perl']
LARGE_DESC = {
    'cc1plus': 'Debian g++\'s C++ front end, `cc1plus -quiet -O1` on a generated program using <map>, <vector>, '
               '<string>, <algorithm>, <iostream> (a record type through map/vector/sort/unique templates '
               'per unit of scale), preprocessed by `g++ -E` at benchmark time',
    'python3': 'Debian python3 running bench/workloads/pywork.py (expression trees, dict/str work, sorting, '
               'generators, recursion; 25 rounds at scale 1)',
    'perl': 'Debian perl running bench/workloads/plwork.pl (regular expressions, hashes, sort, objects, closures, '
            'a binary tree; 25 rounds at scale 1)',
}
# Argument units at scale 1: cc1plus 2.5 G instructions (0.6 s natively),
# python3 9 G and perl 11 G (about 1 s natively each).
LARGE_UNITS = {'cc1plus': 1, 'python3': 25, 'perl': 25}
SCRIPTS = {'python3': ('/usr/bin/python3', ['-I'], 'pywork.py'), 'perl': ('/usr/bin/perl', [], 'plwork.pl')}
EXTRA_CONFIGS = [   # measured on the large programs only
    ('kgrind-k8',           ['--tool=kgrind', '--k=8', '--kgrind-out-file={out}'],       '8'),
]
CONFIG_LABELS['kgrind-k8'] = 'kgrind --k=8'
LARGE_CONFIGS = ['native', 'none', 'cachegrind', 'callgrind', 'callgrind-sc2',
                 'kgrind-k1', 'kgrind-k2', 'kgrind-k4', 'kgrind-k8', 'kgrind-kinf']
LARGE_KS = ['kgrind-k1', 'kgrind-k2', 'kgrind-k4', 'kgrind-k8', 'kgrind-kinf']
# kgrind_annotate's default report is timed on these profiles (target on cc1plus k=inf).
LARGE_ANNOTATED = ['kgrind-k2', 'kgrind-kinf']
# The large programs' targets: (config, reference, at most this many times the reference's wall time).
LARGE_TIME_TARGETS = [('kgrind-k4', 'kgrind-k2', 1.25), ('kgrind-k8', 'kgrind-k2', 1.25),
                      ('kgrind-kinf', 'kgrind-k2', 1.5), ('kgrind-k2', 'none', 1.8)]
# (what, field, bytes per field unit, allowed bytes per k-SF node of the k=inf run over k=2's value).
LARGE_GROWTH_TARGETS = [('peak RSS', 'rss_kb', 1024, 100), ('profile size', 'out_bytes', 1, 60)]
ANNOTATE_TARGET = ('cc1plus', 'kgrind-kinf', 15.0, 1024 ** 2)   # program, config, seconds, peak RSS KiB

# ---------------------------------------------------------------------------
# Workloads: name -> (how to build, argv for a scale, stdin for a scale).
# Scale 1 runs natively in about 0.5-1 s on the reference machine.
# ---------------------------------------------------------------------------
WORKLOAD_NAMES = ['callheavy', 'cppvirt', 'numeric', 'threads', 'bzip2', 'sqlite3']
WORKLOAD_DESC = {
    'callheavy': 'C, deep recursion and many tiny functions (bench/workloads/callheavy.c)',
    'cppvirt': 'C++, virtual calls, visitors, STL containers and sort (bench/workloads/cppvirt.cpp)',
    'numeric': 'C, loop-heavy numeric kernel: blocked matmul, Jacobi stencil (bench/workloads/numeric.c)',
    'threads': 'C, 4 pthreads, recursion, per-thread hash table, shared mutex (bench/workloads/threads.c)',
    'bzip2': 'Debian bzip2 -c compressing generated text (6 MB at scale 1)',
    'sqlite3': 'Debian sqlite3 :memory: running a generated SQL script: 4,000 + 500 + 40,000 INSERTs (scale 1), '
               '3 index builds, joins, group by, a self-join',
}
BUILT = {  # source, compiler, argument units at scale 1
    'callheavy': ('callheavy.c', 'gcc', 400),
    'cppvirt': ('cppvirt.cpp', 'g++', 25),
    'numeric': ('numeric.c', 'gcc', 120),
    'threads': ('threads.c', 'gcc', 800),
}


# Debian compressors on generated text: bzip2 (a workload), xz and gzip (bench/events_exact.py's).
COMPRESSORS = {'bzip2': ['bzip2', '-c'], 'xz': ['xz', '-T1', '-c'], 'gzip': ['gzip', '-c']}


def units(n, scale):
    return max(1, int(round(n * scale)))


def gen_text(path, size):
    """Deterministic word soup for bzip2."""
    rng = random.Random(7)
    words = [bytes(rng.choice(b'abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + (b'\n' if rng.random() < 0.08 else b' ')
    path.write_bytes(bytes(out[:size]))


def gen_sql(path, scale):
    """Deterministic SQL script: three tables filled by INSERTs in one
    transaction, three index builds, joins with GROUP BY, a self-join, an
    UPDATE with a subquery."""
    rng = random.Random(11)
    nc, no, npd = max(10, int(4000 * scale)), max(50, int(40000 * scale)), 500
    lines = ['PRAGMA journal_mode=OFF;', 'BEGIN;',
             'CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, tier INTEGER);',
             'CREATE TABLE product(id INTEGER PRIMARY KEY, name TEXT, price REAL);',
             'CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, product INTEGER, '
             'qty INTEGER, day INTEGER);']
    cities = ['city%02d' % i for i in range(40)]
    for i in range(1, nc + 1):
        lines.append(f"INSERT INTO customer VALUES({i},'cust{rng.randrange(10**6):06d}',"
                     f"'{rng.choice(cities)}',{rng.randrange(4)});")
    for i in range(1, npd + 1):
        lines.append(f"INSERT INTO product VALUES({i},'prod{i:04d}',{rng.randrange(100, 10000) / 100});")
    for i in range(1, no + 1):
        lines.append(f"INSERT INTO orders VALUES({i},{rng.randrange(1, nc + 1)},{rng.randrange(1, npd + 1)},"
                     f"{rng.randrange(1, 10)},{rng.randrange(365)});")
    lines += [
        'COMMIT;',
        'CREATE INDEX orders_customer ON orders(customer);',
        'CREATE INDEX orders_product_day ON orders(product, day);',
        'CREATE INDEX customer_city ON customer(city, tier);',
        'SELECT c.city, count(*), round(sum(o.qty * p.price), 2) FROM orders o '
        'JOIN customer c ON c.id = o.customer JOIN product p ON p.id = o.product '
        'GROUP BY c.city ORDER BY 3 DESC LIMIT 5;',
        'SELECT p.name, sum(o.qty) AS n FROM product p JOIN orders o ON o.product = p.id '
        'WHERE o.day BETWEEN 100 AND 200 GROUP BY p.id ORDER BY n DESC LIMIT 5;',
        'SELECT c.tier, count(DISTINCT c.id), avg(o.qty) FROM customer c '
        'JOIN orders o ON o.customer = c.id GROUP BY c.tier;',
        'SELECT count(*) FROM orders o1 JOIN orders o2 ON o1.customer = o2.customer '
        'AND o1.day < o2.day AND o2.day < o1.day + 7;',
        'UPDATE product SET price = price * 1.1 WHERE id IN '
        '(SELECT product FROM orders GROUP BY product HAVING sum(qty) > 400);',
        'SELECT round(sum(price), 2) FROM product;',
    ]
    path.write_text('\n'.join(lines) + '\n')


def gen_cpp(path, types):
    """Deterministic C++ program: `types` record types, each stored in a
    map of vectors, sorted, deduplicated and printed, so every type
    instantiates its own map/vector/sort/string/iostream code."""
    lines = ['#include <algorithm>', '#include <iostream>', '#include <map>', '#include <string>',
             '#include <vector>', '',
             'template <typename K, typename V> struct Table {',
             '  std::map<K, std::vector<V>> rows;',
             '  void add(const K &k, const V &v) { rows[k].push_back(v); }',
             '  std::size_t total() const { std::size_t n = 0; for (auto &r : rows) n += r.second.size(); return n; }',
             '};',
             'template <typename T> std::vector<T> sorted_unique(std::vector<T> v) {',
             '  std::sort(v.begin(), v.end());',
             '  v.erase(std::unique(v.begin(), v.end()), v.end());',
             '  return v;',
             '}']
    for i in range(types):
        lines += [f'struct Rec{i} {{ int id; std::string name; double w{"".join(f", f{j}" for j in range(i % 4))}; }};',
                  f'bool operator<(const Rec{i} &a, const Rec{i} &b) {{ return a.name < b.name || '
                  f'(a.name == b.name && a.id < b.id); }}',
                  f'bool operator==(const Rec{i} &a, const Rec{i} &b) {{ return a.id == b.id && a.name == b.name; }}',
                  f'std::ostream &operator<<(std::ostream &o, const Rec{i} &r) {{ return o << r.id << r.name; }}',
                  f'std::size_t use{i}(int n) {{',
                  f'  Table<std::string, Rec{i}> t; std::vector<Rec{i}> all;',
                  '  for (int j = 0; j < n; ++j) {',
                  f'    Rec{i} r{{j * {i + 3} % 17, "r" + std::to_string(j % 5), j * 0.5}};',
                  '    t.add(r.name, r); all.push_back(r); }',
                  '  auto u = sorted_unique(all);',
                  '  for (auto &r : u) std::cout << r << \' \';',
                  '  return t.total() + u.size();',
                  '}']
    lines += ['int main(int argc, char **) {', '  std::size_t s = 0;']
    lines += [f'  s += use{i}(argc * {i + 10});' for i in range(types)]
    lines += ['  std::cout << s << std::endl;', '}']
    path.write_text('\n'.join(lines) + '\n')


def output_of(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


def cc1plus_path():
    return output_of('g++', '-print-prog-name=cc1plus')


class Workloads:
    """Builds the programs once, makes inputs per scale on demand."""

    def __init__(self, work):
        self.work = work
        self.bin = work / 'bin'
        self.data = work / 'data'
        self.bin.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self.built = set()

    def build(self, name):
        if name in self.built or name not in BUILT:
            return
        src, cc, _ = BUILT[name]
        cmd = [cc, '-O2', '-g', str(WORKLOADS_DIR / src), '-o', str(self.bin / name)]
        if name == 'threads':
            cmd.append('-pthread')
        subprocess.run(cmd, check=True)
        self.built.add(name)

    def command(self, name, scale):
        """(argv, stdin path or None) of the workload at this scale."""
        if name in LARGE_NAMES:
            return self.large_command(name, units(LARGE_UNITS[name], scale)), None
        if name in BUILT:
            self.build(name)
            return [str(self.bin / name), str(units(BUILT[name][2], scale))], None
        tag = f'{scale:g}'
        if name in COMPRESSORS:
            path = self.data / f'text-{tag}.txt'
            if not path.exists():
                gen_text(path, max(4096, int(6_000_000 * scale)))
            return COMPRESSORS[name], path
        if name == 'sqlite3':
            path = self.data / f'script-{tag}.sql'
            if not path.exists():
                gen_sql(path, scale)
            return ['sqlite3', '-batch', ':memory:'], path
        raise SystemExit(f'unknown workload {name}')

    def large_command(self, name, n):
        if name in SCRIPTS:
            interpreter, flags, script = SCRIPTS[name]
            copy = self.bin / script     # copied: an edit during the run changes nothing
            if not copy.exists():
                shutil.copy2(WORKLOADS_DIR / script, copy)
            return [interpreter] + flags + [str(copy), str(n)]
        return [cc1plus_path(), '-fpreprocessed', '-quiet', '-O1', str(self.cc1plus_input(n)), '-o', os.devnull]

    def cc1plus_input(self, types):
        """The preprocessed (g++ -E) generated program with `types` record types."""
        ii = self.data / f'cc1plus-{types}.ii'
        if not ii.exists():
            src = self.data / f'cc1plus-{types}.cpp'
            gen_cpp(src, types)
            subprocess.run(['g++', '-E', '-P', str(src), '-o', str(ii)], check=True)
        return ii


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


class Suite:
    def __init__(self, args, outdir):
        self.args = args
        self.out = outdir
        self.tool = outdir / 'tool'
        self.work = outdir / 'work'
        self.logs = outdir / 'logs'
        self.keep = outdir / 'profiles'
        for d in (self.work, self.logs, self.keep):
            d.mkdir(parents=True, exist_ok=True)
        self.wl = Workloads(self.work)
        self.data = {'runs': [], 'annotate': {}, 'annotate_default': {}, 'meta': {}}
        self.configs = {name: (opts, k) for name, opts, k in CONFIGS + BLOCK_CONFIGS + EXTRA_CONFIGS}
        self.t0 = time.time()

    # -- tool snapshot ------------------------------------------------------
    def snapshot_tool(self):
        src = BUILD / 'kgrind' / '.in_place'
        if not (src / 'kgrind-amd64-linux').exists():
            raise SystemExit(f'{src}/kgrind-amd64-linux is missing: build first (./setup.sh --build)')
        lib = self.tool / 'lib'
        shutil.copytree(src, lib, symlinks=True)
        # kgrind_annotate finds its modules in lib/ next to it.
        annotate = self.tool / 'annotate'
        annotate.mkdir()
        shutil.copy2(BUILD / 'perl' / 'kgrind_annotate', annotate / 'kgrind_annotate')
        shutil.copytree(ROOT / 'perl' / 'lib', annotate / 'lib')
        digest = hashlib.sha256((lib / 'kgrind-amd64-linux').read_bytes()).hexdigest()[:16]
        self.lib = lib
        self.annotate = annotate / 'kgrind_annotate'
        self.env = dict(os.environ, VALGRIND_LIB=str(lib))
        self.valgrind = VALGRIND
        return digest

    def machine(self, digest):
        def sh(*cmd):
            try:
                return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
            except OSError:
                return ''
        cpu = ''
        try:
            for line in open('/proc/cpuinfo'):
                if line.startswith('model name'):
                    cpu = line.split(':', 1)[1].strip()
                    break
        except OSError:
            pass
        mem = ''
        try:
            for line in open('/proc/meminfo'):
                if line.startswith('MemTotal'):
                    mem = f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
        except OSError:
            pass
        dirty = sh('git', 'status', '--porcelain', '--', 'kgrind')
        return {
            'date': datetime.datetime.now().isoformat(timespec='seconds'),
            'nproc': os.cpu_count(), 'cpu': cpu, 'mem': mem,
            'valgrind': sh(VALGRIND, '--version'),
            'kernel': os.uname().release,
            'git': sh('git', 'rev-parse', '--short', 'HEAD') + (' (kgrind/ modified)' if dirty else ''),
            'tool_sha256': digest,
            'bzip2': sh('sh', '-c', 'bzip2 --version 2>&1 </dev/null | head -n1'),
            'sqlite3': sh('sqlite3', '--version').split(' ')[0],
            'gcc': sh('sh', '-c', 'gcc --version | head -n1'),
            'loadavg_start': open('/proc/loadavg').read().split()[:3],
            'command': ' '.join(['bench/suite.py'] + sys.argv[1:]),
            'runs': self.args.runs, 'scale': self.args.scale,
            'rss_source': '/usr/bin/time -f %M' if os.access(TIME, os.X_OK) else 'wait4 (upper bound)',
        }

    # -- one run --------------------------------------------------------------
    def run_one(self, phase, workload, config, scale, round_no, opts_override=None, kval=None):
        argv, stdin = self.wl.command(workload, scale)
        opts, k = self.configs[config] if opts_override is None else (opts_override, kval)
        tag = f'{phase}-{workload}-{scale:g}-{config}-r{round_no}'
        outfile = self.work / f'{tag}.out'
        if opts is None:
            cmd = argv
        else:
            cmd = [VALGRIND] + [o.format(out=outfile) for o in opts] + argv
        elapsed, cpu, rss, rc = run_measured(cmd, stdin, self.logs / f'{tag}.stderr', self.env, self.work,
                                             self.args.timeout)
        rec = {'phase': phase, 'workload': workload, 'config': config, 'scale': scale,
               'round': round_no, 'k': k, 'wall': elapsed, 'cpu': cpu, 'rss_kb': rss, 'rc': rc,
               'out_bytes': None, 'ksf_nodes': None, 'threads': None}
        if outfile.exists():
            rec['out_bytes'] = outfile.stat().st_size
            if k is not None:
                rec['ksf_nodes'], rec['threads'] = ksf_nodes(outfile)
            if k is not None and round_no == 0 and rc == 0 and phase != 'growth':
                kept = self.keep / f'{phase}-{workload}-{scale:g}-{config}.out'
                outfile.replace(kept)
            else:
                outfile.unlink()
        if rc != 0:
            print(f'  !! {workload} {config}: exit {rc}, see {self.logs / (tag + ".stderr")}', flush=True)
        self.data['runs'].append(rec)
        return rec

    def progress(self, msg):
        print(f'[{(time.time() - self.t0) / 60:5.1f} min] {msg}', flush=True)

    def save(self):
        (self.out / 'results.json').write_text(json.dumps(self.data, indent=1))

    # -- phases -----------------------------------------------------------------
    def timing(self, workloads, configs, phase='main', runs=None, scale=None):
        runs = self.args.runs if runs is None else runs
        scale = self.args.scale if scale is None else scale
        for r in range(runs):
            for w in workloads:
                order = configs[r % len(configs):] + configs[:r % len(configs)]
                for c in order:
                    if c in BLOCK_CONFIG_NAMES and w not in BLOCK_WORKLOADS:
                        continue
                    rec = self.run_one(phase, w, c, scale, r)
                    self.progress(f'{phase} round {r + 1}/{runs} {w:10s} {c:14s} {rec["wall"]:7.2f} s '
                                  f'{rec["rss_kb"] / 1024:7.1f} MB')
            self.save()

    def growth(self, workloads):
        configs = [c for c in GROWTH_CONFIGS if c in self.configs]
        runs = self.args.growth_runs
        for r in range(runs):
            for w in workloads:
                for f in GROWTH_FACTORS:
                    order = configs[r % len(configs):] + configs[:r % len(configs)]
                    for c in order:
                        rec = self.run_one('growth', w, c, self.args.scale * f, r)
                        self.progress(f'growth {r + 1}/{runs} {w} x{f} {c} {rec["wall"]:.2f} s')
            self.save()

    def ksweep(self, workloads):
        for w in workloads:
            for kv in KSWEEP_KS:
                name = f'k={kv}'
                opts = ['--tool=kgrind', f'--k={kv}', '--kgrind-out-file={out}']
                rec = self.run_one('ksweep', w, name, self.args.scale, 0, opts, kv)
                self.progress(f'k sweep {w} {name} {rec["wall"]:.2f} s {rec["ksf_nodes"]} k-SF nodes')
            self.save()

    def annotate_all(self):
        """k-CCF node counts: kgrind_annotate --format=json on every kept profile."""
        for path in sorted(self.keep.glob('*.out')):
            if path.name.startswith('large-'):
                continue   # their inf-CCF takes minutes and GBs; annotate_large times the default report
            start = time.perf_counter()
            try:
                proc = subprocess.run(['perl', str(self.annotate), '--format=json', str(path)],
                                      capture_output=True, timeout=self.args.annotate_timeout)
                doc = json.loads(proc.stdout) if proc.returncode == 0 else None
                res = {'kccf_nodes': sum(t.get('kccf_nodes', 0) for t in doc['threads']),
                       'ksf_nodes': sum(t.get('ksf_nodes', 0) for t in doc['threads'])} if doc else \
                      {'error': f'exit {proc.returncode}: {proc.stderr.decode(errors="replace")[-300:]}'}
            except subprocess.TimeoutExpired:
                res = {'error': f'timeout after {self.args.annotate_timeout} s'}
            res['seconds'] = time.perf_counter() - start
            self.data['annotate'][path.stem] = res
            self.progress(f'annotate {path.stem}: {res}')
        self.save()

    def annotate_large(self):
        """Wall time and peak RSS of kgrind_annotate's default report on the
        large programs' LARGE_ANNOTATED profiles (what a user runs first)."""
        for path in sorted(self.keep.glob('large-*.out')):
            if not any(path.stem.endswith('-' + c) for c in LARGE_ANNOTATED):
                continue
            wall, cpu, rss, rc = run_measured(['perl', str(self.annotate), str(path)], None,
                                              self.logs / f'annotate-{path.stem}.stderr', self.env, self.work,
                                              self.args.annotate_timeout)
            res = {'seconds': wall, 'cpu': cpu, 'rss_kb': rss, 'rc': rc, 'profile_bytes': path.stat().st_size}
            self.data['annotate_default'][path.stem] = res
            self.progress(f'annotate (default report) {path.stem}: {wall:.1f} s, {rss / 1024:.0f} MB, exit {rc}')
        self.save()

    def large_meta(self):
        a = self.args
        cmds = {w: self.wl.command(w, a.large_scale)[0] for w in a.large}
        ii = [x for x in cmds.get('cc1plus', []) if x.endswith('.ii')]
        return {'large': a.large, 'large_configs': a.large_configs, 'large_runs': a.large_runs,
                'large_scale': a.large_scale,
                'large_argv': {w: ' '.join(c).replace(str(self.work) + '/', '') for w, c in cmds.items()},
                'large_desc': dict(LARGE_DESC),
                'large_versions': {'python3': output_of('/usr/bin/python3', '--version'),
                                   'perl': output_of('/usr/bin/perl', '-e', 'print $^V'),
                                   'cc1plus': output_of('g++', '-dumpfullversion')},
                'cc1plus_input_lines': sum(1 for _ in open(ii[0])) if ii else None}

    def main(self):
        a = self.args
        digest = self.snapshot_tool()
        self.data['meta'] = self.machine(digest)
        self.data['meta']['workloads'] = a.workloads
        self.data['meta']['workload_desc'] = dict(WORKLOAD_DESC)
        self.data['meta']['configs'] = a.configs
        self.data['meta']['pending_configs'] = [n for n, _, _ in BLOCK_CONFIGS if n not in a.configs]
        for w in a.workloads + a.growth + a.ksweep:
            self.wl.command(w, a.scale)
        self.data['meta']['argv'] = {w: ' '.join(self.wl.command(w, a.scale)[0]).replace(str(self.work) + '/', '')
                                     for w in a.workloads}
        if a.large:
            self.data['meta'].update(self.large_meta())
        self.save()
        self.timing(a.workloads, a.configs)
        if a.growth:
            self.growth(a.growth)
        if a.ksweep:
            self.ksweep(a.ksweep)
        if a.large:
            self.timing(a.large, a.large_configs, 'large', a.large_runs, a.large_scale)
        self.annotate_all()
        self.annotate_large()
        if a.churn:
            churn.run(self, a.churn, run_measured)
        if a.events:
            events_phase.run(self, a.events, a.events_runs,
                             {w: a.large_scale if w in LARGE_NAMES else a.scale for w in a.events}, a.events_configs)
        if a.events_exact:
            events_exact.run(self, a.events_exact, run_measured, VALGRIND, a.scale)
        self.data['meta']['loadavg_end'] = open('/proc/loadavg').read().split()[:3]
        self.data['meta']['minutes'] = (time.time() - self.t0) / 60
        self.save()
        if not a.keep_work:
            shutil.rmtree(self.work, ignore_errors=True)


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
def gmean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(x, nd=2):
    if x is None:
        return '–'
    if isinstance(x, str):
        return x
    return f'{x:.{nd}f}'


def target_row(what, measured, ok):
    """A row of a targets table; ok None: not measured."""
    verdict = 'not measured' if ok is None else ('**met**' if ok else '**not met**')
    return f'| {what} | {measured or "–"} | {verdict} |'


def fmt_int(x):
    return '–' if x is None else f'{x:,}'


def fmt_mb(kb):
    return '–' if not kb else f'{kb / 1024:.1f}'


def fmt_kb(b):
    if b is None:
        return '–'
    return f'{b / 1024:,.0f}' if b >= 10240 else f'{b / 1024:,.1f}'


class Report:
    def __init__(self, outdir, merge=()):
        """merge: other results folders whose growth, k-sweep and large-program runs replace
        this folder's (e.g. a later `--workloads= ` run of those phases only)."""
        self.out = outdir
        self.data = json.loads((outdir / 'results.json').read_text())
        self.meta = self.data['meta']
        self.runs = self.data['runs']
        if 'rss_source' not in self.meta:
            # Older runs took ru_maxrss from wait4: Linux carries the forking
            # Python's RSS into the child, so peaks below it are not real.
            floor = min((r['rss_kb'] for r in self.runs if r['config'] == 'native'), default=0)
            for r in self.runs:
                if r['rss_kb'] <= floor * 1.02:
                    r['rss_kb'] = None
            self.meta['rss_source'] = 'wait4 (values at the forking Python\'s RSS dropped)'
        self.merged = []
        for other in merge:
            od = json.loads((pathlib.Path(other) / 'results.json').read_text())
            phases = {r['phase'] for r in od['runs']} - {'main'}
            self.runs = [r for r in self.runs if r['phase'] not in phases] + \
                        [r for r in od['runs'] if r['phase'] in phases]
            for key, val in od['annotate'].items():
                if key.split('-', 1)[0] in phases:
                    self.data['annotate'][key] = val
            if 'large' in phases:   # the large programs' setup and annotate timings come along
                self.meta.update({k: v for k, v in od['meta'].items() if k.startswith('large')
                                  or k == 'cc1plus_input_lines'})
                self.data['annotate_default'] = od.get('annotate_default', {})
            if od.get('churn'):
                self.data['churn'] = od['churn']
                phases.add('churn')
            self.merged.append((other, sorted(phases), od['meta']))

    def recs(self, phase, w=None, c=None, scale=None):
        return [r for r in self.runs if r['phase'] == phase and (w is None or r['workload'] == w)
                and (c is None or r['config'] == c) and (scale is None or r['scale'] == scale)]

    def main_table(self, phase='main'):
        """{(w, c): summary} from the timing rounds of phase (main or large)."""
        names, configs = ('workloads', 'configs') if phase == 'main' else ('large', 'large_configs')
        ws = [w for w in self.meta.get(names, []) if self.recs(phase, w)]
        cs = [c for c in self.meta.get(configs, []) if self.recs(phase, c=c)]
        by = {}
        for r in self.recs(phase):
            by.setdefault((r['workload'], r['config']), {})[r['round']] = r
        table = {}
        for w in ws:
            for c in cs:
                rr = by.get((w, c), {})
                if not rr:
                    continue   # not run (block modes outside BLOCK_WORKLOADS)
                ok = [r for r in rr.values() if r['rc'] == 0]
                s = {'n': len(ok), 'failed': [r['rc'] for r in rr.values() if r['rc'] != 0]}
                if ok:
                    s['wall'] = statistics.median(r['wall'] for r in ok)
                    cpus = [r['cpu'] for r in ok if r.get('cpu')]
                    s['cpu'] = statistics.median(cpus) if cpus else None
                    rss = [r['rss_kb'] for r in ok if r['rss_kb']]
                    s['rss_kb'] = max(rss) if rss else None
                    sizes = [r['out_bytes'] for r in ok if r['out_bytes'] is not None]
                    s['out_bytes'] = max(sizes) if sizes else None
                    nodes = [r['ksf_nodes'] for r in ok if r['ksf_nodes'] is not None]
                    s['ksf_nodes'] = max(nodes) if nodes else None
                    for ref, key in RATIO_REFS.items():
                        ratios = [r['wall'] / by[(w, ref)][i]['wall'] for i, r in rr.items()
                                  if r['rc'] == 0 and (w, ref) in by and i in by[(w, ref)]
                                  and by[(w, ref)][i]['rc'] == 0]
                        s[key] = statistics.median(ratios) if ratios else None
                    # The same against none by CPU time (runs of older reports have none).
                    base = by.get((w, BASE), {})
                    cpu_ratios = [r['cpu'] / base[i]['cpu'] for i, r in rr.items()
                                  if r['rc'] == 0 and r.get('cpu') and i in base and base[i]['rc'] == 0
                                  and base[i].get('cpu')]
                    s['x_none_cpu'] = statistics.median(cpu_ratios) if cpu_ratios else None
                    ann = self.data['annotate'].get(f'{phase}-{w}-{ok[0]["scale"]:g}-{c}', {})
                    s['kccf_nodes'] = ann.get('kccf_nodes')
                    s['annotate_s'] = ann.get('seconds') if 'kccf_nodes' in ann else None
                    s['annotate_err'] = ann.get('error')
                table[(w, c)] = s
        return ws, cs, table

    def targets(self, ws, table):
        lines = []
        k2 = 'kgrind-k2'
        if not any((w, k2) in table and 'wall' in table[(w, k2)] for w in ws):
            return ['(kgrind --k=2 was not measured)']

        def verdict(ok):
            return '**met**' if ok else '**not met**'
        xn = {w: table[(w, k2)].get('x_none') for w in ws if (w, k2) in table}
        xc = {w: table[(w, k2)].get('x_cg') for w in ws if (w, k2) in table}
        g_n, g_c = gmean(xn.values()), gmean(xc.values())
        lines.append('| target | measured | verdict |')
        lines.append('|---|---|---|')
        if g_n is not None:
            lines.append(f'| k=2 geometric mean ≤ 1.6× none | {g_n:.2f}× | {verdict(g_n <= 1.6)} |')
        if g_c is not None:
            lines.append(f'| k=2 geometric mean ≤ 0.5× callgrind --separate-callers=2 | {g_c:.2f}× | '
                         f'{verdict(g_c <= 0.5)} |')
        if all(v is not None for v in xn.values()):
            worst = max(xn, key=xn.get)
            lines.append(f'| k=2: no workload worse than 2.5× none | worst {worst} {xn[worst]:.2f}× | '
                         f'{verdict(xn[worst] <= 2.5)} |')
        for what, key, fmtf in (('peak memory ≤ callgrind\'s (k=2)', 'rss_kb', lambda v: f'{v / 1024:.1f} MB'),
                                ('output ≤ callgrind\'s size (k=2)', 'out_bytes', lambda v: f'{v / 1024:.0f} KB')):
            for ref in ('callgrind', CALLGRIND_REF):
                bad = []
                pairs = 0
                for w in ws:
                    a, b = table.get((w, k2), {}).get(key), table.get((w, ref), {}).get(key)
                    if a is not None and b is not None:
                        pairs += 1
                        if a > b:
                            bad.append(f'{w} {fmtf(a)} > {fmtf(b)} (+{100 * (a / b - 1):.0f} %)')
                if pairs:
                    lines.append(f'| {what} vs {CONFIG_LABELS[ref]} | '
                                 f'{"; ".join(bad) if bad else f"all {pairs} workloads"} | {verdict(not bad)} |')
        for mode, target in (('intra', 4.0), ('inter', 3.0)):
            for c in (f'kgrind-{mode}-k2', f'kgrind-{mode}-roll'):
                xs = [table[(w, c)].get('x_none') for w in ws if (w, c) in table]
                g = gmean(xs) if xs and None not in xs else None
                if g is not None:
                    lines.append(f'| {CONFIG_LABELS[c]}: geometric mean ≤ {target:g}× none '
                                 f'({", ".join(w for w in ws if (w, c) in table)}) | {g:.2f}× | '
                                 f'{verdict(g <= target)} |')
        if any((w, 'kgrind-kinf') in table for w in ws):
            failed = [f'{w} ({table[(w, "kgrind-kinf")]["failed"]})' for w in ws
                      if (w, 'kgrind-kinf') in table and (table[(w, 'kgrind-kinf')]['failed']
                                                          or 'wall' not in table[(w, 'kgrind-kinf')])]
            lines.append(f'| k=inf completes on every workload | '
                         f'{"failed: " + ", ".join(failed) if failed else "all completed"} | '
                         f'{verdict(not failed)} |')
        return lines

    def main_section(self, ws, cs, table):
        """Workloads, results, geometric means and targets of the main timing rounds."""
        m = self.meta
        L = ['', '## Workloads']
        L.append('')
        for w in ws:
            native = table.get((w, 'native'), {}).get('wall')
            L.append(f'- **{w}**: {m.get("workload_desc", WORKLOAD_DESC).get(w, "")}; `{m.get("argv", {}).get(w, "")}`'
                     + (f'; native {native:.2f} s' if native else ''))
        L.append('')
        L.append('## Results')
        L.append('')
        L.append('Median wall time; × none and × cg-sc2 (callgrind --separate-callers=2) are medians of '
                 'per-round ratios; RSS is the largest peak RSS over the rounds; output is the profile '
                 'file; k-SF nodes summed over threads (`# ksf-thread` records); k-CCF nodes from '
                 '`kgrind_annotate --format=json`.')
        L.append('')
        L.append('| workload | config | median s | × none | × cg-sc2 | peak RSS MB | output KB | k-SF nodes | k-CCF nodes |')
        L.append('|---|---|--:|--:|--:|--:|--:|--:|--:|')
        for w in ws:
            for c in cs:
                s = table.get((w, c))
                if not s:
                    continue
                if 'wall' not in s:
                    L.append(f'| {w} | {CONFIG_LABELS.get(c, c)} | failed: {s["failed"]} | | | | | | |')
                    continue
                kccf = fmt_int(s.get('kccf_nodes')) if not s.get('annotate_err') else 'annotate failed'
                if c.startswith('kgrind') is False:
                    kccf = ''
                L.append(f'| {w} | {CONFIG_LABELS.get(c, c)} | {s["wall"]:.2f} | {fmt(s.get("x_none"))} | '
                         f'{fmt(s.get("x_cg"))} | {fmt_mb(s["rss_kb"])} | {fmt_kb(s.get("out_bytes"))} | '
                         f'{fmt_int(s.get("ksf_nodes"))} | {kccf} |')
        L.append('')
        L.append('### Geometric means over the workloads')
        L.append('')
        L.append('Wall-time ratios are the targets\' measure; the CPU-time ratio (user +')
        L.append('system, median of the per-round ratios) is steadier on a shared machine.')
        L.append('')
        L.append('| config | × none | × cg-sc2 | × none, CPU time |')
        L.append('|---|--:|--:|--:|')
        for c in cs:
            xn = [table[(w, c)].get('x_none') for w in ws if (w, c) in table]
            xc = [table[(w, c)].get('x_cg') for w in ws if (w, c) in table]
            xu = [table[(w, c)].get('x_none_cpu') for w in ws if (w, c) in table]
            L.append(f'| {CONFIG_LABELS.get(c, c)} | {fmt(gmean(xn))} | {fmt(gmean(xc))} | {fmt(gmean(xu))} |')
        L.append('')
        L.append('## Targets')
        L.append('')
        L += self.targets(ws, table)
        pending = [n for n, _, _ in BLOCK_CONFIGS if n not in m.get('configs', [])]
        if pending:
            L.append('')
            L.append('Not measured in this run: ' + ', '.join(pending) + ' (--configs).')
        return L

    def render(self):
        m = self.meta
        ws, cs, table = self.main_table()
        L = [f'# kgrind benchmark suite — {m.get("date", "")}', '']
        L.append(f'Command: `{m.get("command")}`  ')
        L.append(f'Machine: {m.get("nproc")} CPUs, {m.get("cpu")}, {m.get("mem")} RAM, Linux {m.get("kernel")}; '
                 f'{m.get("valgrind")}; {m.get("gcc")}; {m.get("bzip2")}; sqlite3 {m.get("sqlite3")}  ')
        L.append(f'kgrind: git {m.get("git")}, tool binary sha256 {m.get("tool_sha256")}  ')
        L.append(f'Runs: {m.get("runs")} interleaved rounds at scale {m.get("scale")}; load average '
                 f'{" ".join(m.get("loadavg_start", []))} at start, {" ".join(m.get("loadavg_end", []) or ["?"])} '
                 f'at end; {m.get("minutes", 0):.0f} min in all.')
        L.append(f'Peak RSS from {m.get("rss_source")}.')
        for other, phases, om in self.merged:
            L.append('')
            L.append(f'Merged: the {" and ".join(phases)} runs come from `{om.get("command")}` '
                     f'({om.get("date")}, git {om.get("git")}, tool sha256 {om.get("tool_sha256")}, '
                     f'peak RSS from {om.get("rss_source", "wait4")}).')
        if ws:
            L += self.main_section(ws, cs, table)
        L.append('')
        g = self.growth_table()
        if g:
            L.append('## Growth: run time against input length')
            L.append('')
            L.append('| workload | input | config | median s | × none | peak RSS MB | k-SF nodes |')
            L.append('|---|--:|---|--:|--:|--:|--:|')
            for row in g:
                L.append('| ' + ' | '.join(row) + ' |')
            L.append('')
        ks = self.ksweep_table()
        if ks:
            L.append('## Forest size and memory against k')
            L.append('')
            L.append('| workload | k | wall s | peak RSS MB | output KB | k-SF nodes | k-CCF nodes |')
            L.append('|---|--:|--:|--:|--:|--:|--:|')
            for row in ks:
                L.append('| ' + ' | '.join(row) + ' |')
            L.append('')
        L += self.large_section()
        L += churn.section(self.data, fmt_mb, target_row)
        L += events_phase.section(self.runs, fmt_mb, target_row)
        L += events_exact.section(self.data.get('events_exact', {}))
        fails = [r for r in self.runs if r['rc'] != 0]
        if fails:
            L.append('## Failed runs')
            L.append('')
            for r in fails:
                L.append(f'- {r["phase"]} {r["workload"]} ×{r["scale"]:g} {r["config"]} round {r["round"]}: '
                         f'exit {r["rc"]} after {r["wall"]:.1f} s, peak RSS {fmt_mb(r["rss_kb"])} MB')
            L.append('')
        charts = sorted(p.name for p in (self.out / 'charts').glob('*.png')) if (self.out / 'charts').exists() else []
        if charts:
            L.append('## Charts')
            L.append('')
            for c in charts:
                L.append(f'![{c}](charts/{c})')
            L.append('')
        return '\n'.join(L)

    def large_section(self):
        """Per large program: its costs under every configuration and the large programs' targets."""
        ws, cs, table = self.main_table('large')
        if not ws:
            return []
        m = self.meta
        L = ['## Large programs', '',
             f'{m.get("large_runs")} interleaved round(s) at scale {m.get("large_scale")}; '
             f'{", ".join(f"{k} {v}" for k, v in m.get("large_versions", {}).items() if k in ws)}'
             + (f'; the preprocessed cc1plus input has {fmt_int(m["cc1plus_input_lines"])} lines'
                if m.get('cc1plus_input_lines') else '')
             + '. Median wall time and CPU time (user + system: steadier on a shared machine; the targets '
               'are on wall time); × none and × k=2 are medians of the per-round wall-time ratios; the k-SF '
               'nodes are summed over threads.', '']
        for w in ws:
            native = table.get((w, 'native'), {}).get('wall')
            L.append(f'- **{w}**: {m.get("large_desc", LARGE_DESC).get(w, "")}; '
                     f'`{m.get("large_argv", {}).get(w, "")}`' + (f'; native {native:.2f} s' if native else ''))
        L.append('')
        for w in ws:
            L += [f'### {w}', '',
                  '| config | median s | CPU s | × none | × k=2 | peak RSS MB | profile MB | k-SF nodes |',
                  '|---|--:|--:|--:|--:|--:|--:|--:|']
            for c in cs:
                s = table.get((w, c))
                if s is None:
                    continue
                if 'wall' not in s:
                    L.append(f'| {CONFIG_LABELS.get(c, c)} | failed: {s["failed"]} | | | | | | |')
                    continue
                size = fmt(s['out_bytes'] / 2 ** 20) if s.get('out_bytes') else '–'
                L.append(f'| {CONFIG_LABELS.get(c, c)} | {s["wall"]:.2f} | {fmt(s.get("cpu"))} | '
                         f'{fmt(s.get("x_none"))} | '
                         f'{fmt(s.get("x_k2"))} | {fmt_mb(s.get("rss_kb"))} | {size} | '
                         f'{fmt_int(s.get("ksf_nodes"))} |')
            L += ['', '| target | measured | verdict |', '|---|---|---|']
            L += self.large_targets(w, table)
            L.append('')
        ann = self.annotate_default_table()
        if ann:
            L += ['### kgrind_annotate, default report', '',
                  'Wall time and peak RSS (`/usr/bin/time -f %M`) of `kgrind_annotate <profile>`, output discarded.',
                  '', '| profile | profile MB | s | CPU s | peak RSS MB | exit |', '|---|--:|--:|--:|--:|--:|']
            L += ann + ['']
        return L

    def large_targets(self, w, table):
        rows = []
        for c, ref, limit in LARGE_TIME_TARGETS:
            x = table.get((w, c), {}).get(RATIO_REFS[ref])
            rows.append(target_row(f'time {CONFIG_LABELS[c]} ≤ {limit:g}× {CONFIG_LABELS[ref]}',
                                   None if x is None else f'{x:.2f}×', None if x is None else x <= limit))
        k2, kinf, cg = (table.get((w, c), {}) for c in ('kgrind-k2', 'kgrind-kinf', 'callgrind'))
        a, b = k2.get('rss_kb'), cg.get('rss_kb')
        rows.append(target_row('peak RSS k=2 ≤ callgrind\'s',
                               a and b and f'{fmt_mb(a)} MB vs {fmt_mb(b)} MB', a and b and a <= b))
        nodes = kinf.get('ksf_nodes')
        for what, field, unit, per_node in LARGE_GROWTH_TARGETS:
            a, b = kinf.get(field), k2.get(field)
            ok = measured = None
            if a and b and nodes:
                over = (a - b) * unit / nodes
                measured = (f'{a * unit / 2 ** 20:.1f} MB = k=2\'s {b * unit / 2 ** 20:.1f} MB '
                            f'+ {over:.0f} B × {fmt_int(nodes)} nodes')
                ok = over <= per_node
            rows.append(target_row(f'{what} k=inf ≤ k=2\'s + {per_node} B per k-SF node', measured, ok))
        prog, c, seconds, rss_kb = ANNOTATE_TARGET
        if w == prog:
            ann = self.data.get('annotate_default', {}).get(f'large-{w}-{self.meta.get("large_scale", 1):g}-{c}')
            ok = measured = None
            if ann:
                measured = f'{ann["seconds"]:.1f} s, {fmt_mb(ann["rss_kb"])} MB' + \
                           ('' if ann['rc'] == 0 else f' (exit {ann["rc"]})')
                ok = ann['rc'] == 0 and ann['seconds'] < seconds and ann['rss_kb'] < rss_kb
            rows.append(target_row(f'kgrind_annotate default report on {CONFIG_LABELS[c]} < {seconds:g} s '
                                   f'and {rss_kb / 2 ** 20:g} GB', measured, ok))
        return rows

    def annotate_default_table(self):
        rows = []
        for stem, a in sorted(self.data.get('annotate_default', {}).items()):
            rows.append(f'| {stem} | {fmt(a["profile_bytes"] / 2 ** 20)} | {a["seconds"]:.1f} | {a["cpu"]:.1f} | '
                        f'{fmt_mb(a["rss_kb"])} | {a["rc"]} |')
        return rows

    def growth_table(self):
        rows = []
        recs = self.recs('growth')
        ws = list(dict.fromkeys(r['workload'] for r in recs))
        base = self.meta.get('scale', 1)
        for w in ws:
            scales = sorted({r['scale'] for r in recs if r['workload'] == w})
            for sc in scales:
                none = {r['round']: r['wall'] for r in self.recs('growth', w, 'none', sc) if r['rc'] == 0}
                for c in GROWTH_CONFIGS:
                    rr = [r for r in self.recs('growth', w, c, sc) if r['rc'] == 0]
                    if not rr:
                        continue
                    ratios = [r['wall'] / none[r['round']] for r in rr if r['round'] in none]
                    nodes = [r['ksf_nodes'] for r in rr if r['ksf_nodes'] is not None]
                    rows.append([w, f'{sc / base:g}×', CONFIG_LABELS.get(c, c),
                                 f'{statistics.median(r["wall"] for r in rr):.2f}',
                                 fmt(statistics.median(ratios)) if ratios else '–',
                                 fmt_mb(max((r['rss_kb'] or 0) for r in rr) or None),
                                 fmt_int(max(nodes)) if nodes else ''])
        return rows

    def ksweep_table(self):
        rows = []
        recs = self.recs('ksweep')
        for r in recs:
            ann = self.data['annotate'].get(f'ksweep-{r["workload"]}-{r["scale"]:g}-{r["config"]}', {})
            kccf = fmt_int(ann.get('kccf_nodes')) if 'kccf_nodes' in ann else ann.get('error', '–')
            if r['rc'] != 0:
                rows.append([r['workload'], r['k'], f'failed ({r["rc"]})', fmt_mb(r['rss_kb']), '', '', ''])
                continue
            rows.append([r['workload'], r['k'], f'{r["wall"]:.2f}', fmt_mb(r['rss_kb']),
                         fmt_kb(r['out_bytes']), fmt_int(r['ksf_nodes']), kccf])
        return rows

    # -- charts -------------------------------------------------------------
    def charts(self):
        try:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
            from matplotlib import ticker
        except ImportError:
            print('charts skipped: no matplotlib (apt-get install -y python3-matplotlib; use /usr/bin/python3)')
            return
        cdir = self.out / 'charts'
        cdir.mkdir(exist_ok=True)
        ws, cs, table = self.main_table()
        vg = [c for c in cs if c not in ('native', BASE)]

        def grouped(metric, fname, title, ylabel, log, configs, scale=1.0, refline=None, labels=None):
            fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(ws) + 3), 5.2))
            width = 0.8 / max(1, len(configs))
            for i, c in enumerate(configs):
                vals = [(table.get((w, c), {}).get(metric) or 0) * scale for w in ws]
                ax.bar([x + i * width for x in range(len(ws))], vals, width, label=CONFIG_LABELS.get(c, c))
            ax.set_xticks([x + width * (len(configs) - 1) / 2 for x in range(len(ws))])
            ax.set_xticklabels(ws)
            if log:
                ax.set_yscale('log')
                plain = ticker.FuncFormatter(lambda v, _: f'{v:g}')
                ax.yaxis.set_major_formatter(plain)
                ax.yaxis.set_minor_formatter(plain)
                ax.tick_params(axis='y', which='minor', labelsize=7)
            else:
                ax.set_ylim(bottom=0)
            if labels:
                for cont in ax.containers:
                    ax.bar_label(cont, fmt=labels, fontsize=6, rotation=90, padding=2)
                ax.margins(y=0.12)
            if refline:
                ax.axhline(refline[0], color='black', linestyle='--', linewidth=1, label=refline[1])
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.grid(axis='y', alpha=0.3, which='both')
            ax.legend(fontsize=8, ncol=2)
            fig.tight_layout()
            fig.savefig(cdir / fname, dpi=110)
            plt.close(fig)

        if ws and vg:
            grouped('x_none', 'slowdown_vs_none.png', 'Slowdown relative to valgrind --tool=none (median of rounds)',
                    '× none (log scale)', True, vg, refline=(1.6, 'target k=2: 1.6× none'), labels='%.1f')
            grouped('rss_kb', 'peak_rss.png', 'Peak RSS', 'MB', False, [c for c in cs if c != 'native'],
                    scale=1 / 1024, labels='%.0f')
            grouped('out_bytes', 'output_size.png', 'Output file size', 'KB (log scale)', True,
                    [c for c in cs if self.configs_with_output(c, ws, table)], scale=1 / 1024)
        g = self.recs('growth')
        if g:
            gws = list(dict.fromkeys(r['workload'] for r in g))
            fig, axes = plt.subplots(1, len(gws), figsize=(6 * len(gws), 4.6), squeeze=False)
            base = self.meta.get('scale', 1)
            for ax, w in zip(axes[0], gws):
                for c in GROWTH_CONFIGS:
                    pts = {}
                    for r in g:
                        if r['workload'] == w and r['config'] == c and r['rc'] == 0:
                            pts.setdefault(r['scale'] / base, []).append(r['wall'])
                    if pts:
                        xs = sorted(pts)
                        ax.plot(xs, [statistics.median(pts[x]) for x in xs], marker='o',
                                label=CONFIG_LABELS.get(c, c))
                ax.set_xlabel('input length (× scale-1 input)')
                ax.set_ylabel('wall time, s')
                ax.set_xticks(GROWTH_FACTORS)
                ax.set_title(f'{w}: run time against input length')
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(cdir / 'growth.png', dpi=110)
            plt.close(fig)
        k = [r for r in self.recs('ksweep') if r['rc'] == 0]
        if k:
            kws = list(dict.fromkeys(r['workload'] for r in k))
            fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
            for w in kws:
                rr = [r for r in k if r['workload'] == w]
                labels = [r['k'] for r in rr]
                xs = range(len(rr))
                kccf = [self.data['annotate'].get(f'ksweep-{w}-{r["scale"]:g}-{r["config"]}', {}).get('kccf_nodes')
                        for r in rr]
                axes[0].plot(xs, [r['ksf_nodes'] for r in rr], marker='o', label=f'{w} k-SF')
                if any(v is not None for v in kccf):
                    axes[0].plot(xs, [v if v is not None else float('nan') for v in kccf], marker='s',
                                 linestyle='--', label=f'{w} k-CCF')
                axes[1].plot(xs, [(r['rss_kb'] or float('nan')) / 1024 for r in rr], marker='o', label=w)
                axes[2].plot(xs, [r['wall'] for r in rr], marker='o', label=w)
                for ax in axes:
                    ax.set_xticks(list(xs))
                    ax.set_xticklabels(labels)
            axes[0].set_yscale('log')
            axes[0].set_title('forest size against k')
            axes[0].set_ylabel('nodes (log scale)')
            axes[1].set_ylim(bottom=0)
            axes[2].set_ylim(bottom=0)
            axes[1].set_title('peak RSS against k')
            axes[1].set_ylabel('MB')
            axes[2].set_title('wall time against k')
            axes[2].set_ylabel('s')
            for ax in axes:
                ax.set_xlabel('k')
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(cdir / 'ksweep.png', dpi=110)
            plt.close(fig)

        self.large_chart(plt, ticker, cdir)

    def large_chart(self, plt, ticker, cdir):
        """Cost against k on the large programs: time (× none), peak RSS,
        profile size; dotted, in the program's colour: callgrind's value."""
        ws, cs, table = self.main_table('large')
        ks = [c for c in LARGE_KS if c in cs]
        if not ws or not ks:
            return
        k2_limit = next(limit for c, ref, limit in LARGE_TIME_TARGETS if (c, ref) == ('kgrind-k2', BASE))
        panels = [('x_none', 1, 'wall time, × none', False), ('rss_kb', 1 / 1024, 'peak RSS, MB (log scale)', True),
                  ('out_bytes', 1 / 2 ** 20, 'profile size, MB (log scale)', True)]
        fig, axes = plt.subplots(1, len(panels), figsize=(16, 4.8))
        xs = range(len(ks))
        plain = ticker.FuncFormatter(lambda v, _: f'{v:g}')
        for ax, (field, scale, title, log) in zip(axes, panels):
            for w in ws:
                vals = [table.get((w, c), {}).get(field) for c in ks]
                line, = ax.plot(xs, [v * scale if v else float('nan') for v in vals], marker='o', label=w)
                ref = table.get((w, 'callgrind'), {}).get(field)
                if ref:
                    ax.axhline(ref * scale, color=line.get_color(), linestyle=':', linewidth=1,
                               label=f'{w}: callgrind')
            if field == 'x_none':
                ax.axhline(k2_limit, color='black', linestyle='--', linewidth=1,
                           label=f'target k=2: {k2_limit:g}× none')
            ax.set_xticks(list(xs))
            ax.set_xticklabels([self.k_of(c) for c in ks])
            ax.set_xlabel('k')
            ax.set_title(title)
            if log:
                ax.set_yscale('log')
                ax.yaxis.set_major_formatter(plain)
                ax.yaxis.set_minor_formatter(plain)
                ax.tick_params(axis='y', which='minor', labelsize=7)
            else:
                ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3, which='both')
            ax.legend(fontsize=7)
        fig.suptitle('Large programs: cost of kgrind against k')
        fig.tight_layout()
        fig.savefig(cdir / 'large_cost_vs_k.png', dpi=110)
        plt.close(fig)

    @staticmethod
    def k_of(c):
        return c.rsplit('-k', 1)[1]

    @staticmethod
    def configs_with_output(c, ws, table):
        return any(table.get((w, c), {}).get('out_bytes') for w in ws)

    def update_docs(self, path):
        """Replaces the part of path between the suite markers by this report
        (without the charts, which stay in the results folder)."""
        begin, end = '<!-- suite:begin -->', '<!-- suite:end -->'
        text = path.read_text() if path.exists() else f'# Benchmark results\n\n{begin}\n{end}\n'
        if begin not in text or end not in text:
            text = text.rstrip('\n') + f'\n\n{begin}\n{end}\n'
        body = self.render().split('\n## Charts')[0].rstrip('\n')
        body = body.replace('# kgrind benchmark suite', '## Latest run', 1)
        body = '\n'.join(('#' + l) if l.startswith('##') and not l.startswith('## Latest run') else l
                          for l in body.split('\n'))
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        path.write_text(f'{head}{begin}\n{body}\n{end}{tail}')
        return path

    def write(self, charts=True):
        if charts:
            self.charts()
        text = self.render()
        (self.out / 'report.md').write_text(text + '\n')
        return self.out / 'report.md'


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument('--runs', type=int, default=3, help='interleaved timing rounds [3]')
    ap.add_argument('--scale', type=float, default=1.0, help='workload size factor [1]')
    ap.add_argument('--workloads', default=','.join(WORKLOAD_NAMES),
                    help=f'comma list [{",".join(WORKLOAD_NAMES)}]')
    ap.add_argument('--configs', default=','.join(n for n, _, _ in CONFIGS + BLOCK_CONFIGS),
                    help=f'comma list [{",".join(n for n, _, _ in CONFIGS + BLOCK_CONFIGS)}]; the block '
                         f'modes run on {",".join(BLOCK_WORKLOADS)} only')
    ap.add_argument('--growth', default='callheavy,bzip2',
                    help='workloads for the growth runs (1x, 2x, 4x input) [callheavy,bzip2]')
    ap.add_argument('--growth-runs', type=int, default=1, help='rounds of the growth runs [1]')
    ap.add_argument('--ksweep', default='cppvirt,sqlite3',
                    help='workloads for the k sweep (k=1..8, inf) [cppvirt,sqlite3]')
    ap.add_argument('--no-growth', action='store_true')
    ap.add_argument('--no-ksweep', action='store_true')
    ap.add_argument('--no-charts', action='store_true')
    ap.add_argument('--large', default=','.join(LARGE_NAMES),
                    help=f'large programs timed after the k sweep [{",".join(LARGE_NAMES)}]')
    ap.add_argument('--no-large', action='store_true')
    ap.add_argument('--large-runs', type=int, default=2, help='interleaved rounds of the large programs [2]')
    ap.add_argument('--large-scale', type=float, default=1.0, help='input size factor of the large programs [1]')
    ap.add_argument('--large-configs', default=','.join(LARGE_CONFIGS), help=f'comma list [{",".join(LARGE_CONFIGS)}]')
    ap.add_argument('--churn', default=','.join(map(str, churn.COUNTS)),
                    help='thread counts of the thread-churn phase, smaller first '
                         f'[{",".join(map(str, churn.COUNTS))}]')
    ap.add_argument('--no-churn', action='store_true')
    ap.add_argument('--events', default=','.join(WORKLOAD_NAMES),
                    help='workloads of the events phase (cache and branch simulation next to cachegrind and '
                         f'callgrind) [{",".join(WORKLOAD_NAMES)}]')
    ap.add_argument('--events-runs', type=int, default=2, help='interleaved rounds of the events phase [2]')
    ap.add_argument('--events-configs', default='',
                    help='configurations of the events phase [all: '
                         f'{",".join(n for n, _o, _k in events_phase.CONFIGS)}]')
    ap.add_argument('--events-exact', default='', metavar='PROGRAMS',
                    help='programs whose events are compared with cachegrind\'s, per function and line '
                         f'(bench/events_exact.py: {",".join(events_exact.PROGRAMS)}; their inputs times '
                         '--scale) [none]')
    ap.add_argument('--no-events', action='store_true')
    ap.add_argument('--timeout', type=float, default=900, help='seconds per run before it is killed [900]')
    ap.add_argument('--annotate-timeout', type=float, default=600, help='seconds per kgrind_annotate [600]')
    ap.add_argument('--out', help='results folder [bench/results/<timestamp>]')
    ap.add_argument('--keep-work', action='store_true', help='keep the built workloads and inputs')
    ap.add_argument('--report-only', metavar='DIR', help='rewrite report.md and charts from DIR/results.json')
    ap.add_argument('--merge', action='append', default=[], metavar='DIR',
                    help='with --report-only: take the growth, k-sweep, large-program and churn runs from DIR')
    ap.add_argument('--update-docs', action='store_true',
                    help='also put the report into docs/results.md (between its suite markers)')
    a = ap.parse_args(argv)

    def split(s):
        return [x for x in s.split(',') if x]
    a.workloads = split(a.workloads)
    a.configs = split(a.configs)
    a.growth = [] if a.no_growth else split(a.growth)
    a.ksweep = [] if a.no_ksweep else split(a.ksweep)
    a.large = [] if a.no_large else split(a.large)
    a.large_configs = split(a.large_configs)
    a.events = [] if a.no_events else split(a.events)
    for w in a.events:
        if w not in WORKLOAD_NAMES + LARGE_NAMES:
            ap.error(f'unknown events-phase workload {w} (known: {", ".join(WORKLOAD_NAMES + LARGE_NAMES)})')
    a.events_configs = split(a.events_configs)
    for c in a.events_configs:
        if c not in [n for n, _o, _k in events_phase.CONFIGS]:
            ap.error(f'unknown events-phase configuration {c} '
                     f'(known: {", ".join(n for n, _o, _k in events_phase.CONFIGS)})')
    a.events_exact = split(a.events_exact)
    for p in a.events_exact:
        if p not in events_exact.PROGRAMS:
            ap.error(f'unknown events-exact program {p} (known: {", ".join(events_exact.PROGRAMS)})')
    try:
        a.churn = [] if a.no_churn else [int(n) for n in split(a.churn)]
    except ValueError:
        ap.error(f'--churn: thread counts, comma-separated (got {a.churn!r})')
    if a.churn and (len(a.churn) < 2 or any(n < 1 for n in a.churn) or a.churn != sorted(a.churn)):
        ap.error(f'--churn: two or more thread counts, smaller first (got {",".join(map(str, a.churn))})')
    known = {n for n, _, _ in CONFIGS + BLOCK_CONFIGS}
    for c in a.large_configs:
        if c not in LARGE_CONFIGS:
            ap.error(f'unknown large-program configuration {c} (known: {", ".join(LARGE_CONFIGS)})')
    for w in a.large:
        if w not in LARGE_NAMES:
            ap.error(f'unknown large program {w} (known: {", ".join(LARGE_NAMES)})')
    for c in a.configs:
        if c not in known:
            ap.error(f'unknown configuration {c} (known: {", ".join(sorted(known))})')
    for w in a.workloads + a.growth + a.ksweep:
        if w not in WORKLOAD_NAMES:
            ap.error(f'unknown workload {w} (known: {", ".join(WORKLOAD_NAMES)})')
    return a


def main(argv=None):
    a = parse_args(sys.argv[1:] if argv is None else argv)
    if a.report_only:
        out = pathlib.Path(a.report_only)
        rep = Report(out, a.merge)
        print(rep.write(charts=not a.no_charts))
        if a.update_docs:
            print(rep.update_docs(ROOT / 'docs' / 'results.md'))
        return 0
    stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
    out = pathlib.Path(a.out) if a.out else ROOT / 'bench' / 'results' / stamp
    out.mkdir(parents=True, exist_ok=True)
    suite = Suite(a, out)
    suite.main()
    rep = Report(out)
    report = rep.write(charts=not a.no_charts)
    print(f'report: {report}')
    if a.update_docs:
        print(f'updated: {rep.update_docs(ROOT / "docs" / "results.md")}')
    failed = [r for r in suite.data['runs'] if r['rc'] != 0]
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
