"""The benchmark suite's configurations, workloads and targets: what bench/suite.py
runs, under which tools and options, and what it compares against."""
import os
import pathlib
import re
import sys


ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'tests'))
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
    # physical frames, as callgrind's (the others: inlined levels, kgrind's default)
    ('kgrind-k2-noinline',  ['--tool=kgrind', '--k=2', '--inline-frames=no',
                             '--kgrind-out-file={out}'],                                 '2'),
    # inlined levels as frames (the default counts them in records)
    ('kgrind-k2-frames',    ['--tool=kgrind', '--k=2', '--inline-levels=frames',
                             '--kgrind-out-file={out}'],                                 '2'),
    ('kgrind-k4',           ['--tool=kgrind', '--k=4', '--kgrind-out-file={out}'],       '4'),
    ('kgrind-kinf',         ['--tool=kgrind', '--k=inf', '--kgrind-out-file={out}'],     'inf'),
]
CONFIG_LABELS = {
    'native': 'native', 'none': 'none', 'cachegrind': 'cachegrind --cache-sim=no',
    'callgrind': 'callgrind', 'callgrind-sc2': 'callgrind --separate-callers=2',
    'kgrind-k1': 'kgrind --k=1', 'kgrind-k2': 'kgrind --k=2', 'kgrind-k4': 'kgrind --k=4',
    'kgrind-k2-noinline': 'kgrind --k=2 --inline-frames=no',
    'kgrind-k2-frames': 'kgrind --k=2 --inline-levels=frames',
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
# Tiered instrumentation (docs/design/tiers.md), on request (--configs,
# --large-configs): --stats=yes prints the translations per tier, which
# the report shows next to the ratios. Tiering applies to physical frames
# only: compare kgrind-k2-tier with kgrind-k2-noinline.
TIER_CONFIGS = [
    ('kgrind-k2-tier',      ['--tool=kgrind', '--k=2', '--inline-frames=no', '--tiering=yes', '--stats=yes',
                             '--kgrind-out-file={out}'],                                 '2'),
    ('kgrind-kinf-tier',    ['--tool=kgrind', '--k=inf', '--inline-frames=no', '--tiering=yes', '--stats=yes',
                             '--kgrind-out-file={out}'],                                 'inf'),
]
CONFIG_LABELS.update({'kgrind-k2-tier': 'kgrind --k=2 --inline-frames=no --tiering=yes',
                      'kgrind-kinf-tier': 'kgrind --k=inf --inline-frames=no --tiering=yes'})
TIER_STATS = re.compile(r'kgrind tiers: threshold (\d+); translations: tier 1 (\d+), tier 2 (\d+) \((\d+) promoted\)')
LARGE_CONFIGS = ['native', 'none', 'cachegrind', 'callgrind', 'callgrind-sc2',
                 'kgrind-k1', 'kgrind-k2', 'kgrind-k2-noinline', 'kgrind-k4', 'kgrind-k8', 'kgrind-kinf']
LARGE_KNOWN = LARGE_CONFIGS + [n for n, _, _ in TIER_CONFIGS]
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
