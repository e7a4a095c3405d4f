"""Real programs from Debian under kgrind, checked against cachegrind and
callgrind on the same run's input (docs/design/callgrind-agreement.md, "Differential
check on Debian programs"): their output and exit status unchanged, the
totals exact where the program is deterministic, each thread's work in its
own forest where it is not, and every profile read by kgrind_annotate
without a word on stderr. Skipped where a program is missing."""
import os
import shutil
import subprocess

import pytest

import callgrind_format
import ksf_records
from conftest import VALGRIND
from test_annotate import annotate_cmd


# The programs' hash seeds fixed: their runs are then deterministic.
ENV = VALGRIND.env(dict(os.environ, PERL_HASH_SEED='0', PERL_PERTURB_KEYS='0'))


def program(name):
    path = shutil.which(name)
    if not path:
        pytest.skip(f'{name} is not installed')
    return path


def text_file(path, lines):
    """Compressible, deterministic text."""
    path.write_text(''.join(f'line {i} {i * i % 977} {"abcdefgh"[i % 8] * (i % 13)}\n'
                            for i in range(lines)))
    return path


class Run:
    def __init__(self, argv, cwd, profile_path):
        proc = subprocess.run(argv, capture_output=True, cwd=cwd, env=ENV, timeout=300)
        self.status, self.stdout, self.stderr = proc.returncode, proc.stdout, proc.stderr
        self.profile_path = profile_path

    def profile(self):
        return callgrind_format.parse(self.profile_path)


def native(tools, *cmd):
    return Run(cmd, tools.dir, None)


def kgrind(tools, *cmd, opts=()):
    """kgrind's run of cmd, whose output (bytes) and status are the native run's."""
    path = tools.dir / 'kgrind.out'
    kg = Run(VALGRIND.argv('kgrind', f'--kgrind-out-file={path}', *opts, *cmd), tools.dir, path)
    ref = native(tools, *cmd)
    assert (kg.status, kg.stdout) == (ref.status, ref.stdout), kg.stderr
    return kg


def reference(tools, tool, *cmd):
    """Valgrind's tool on cmd as kgrind translates (conftest's Toolbox.reference)."""
    path = tools.dir / f'{tool}.out'
    extra = ['--cache-sim=no'] if tool == 'cachegrind' else []
    return Run(VALGRIND.argv(tool, f'--{tool}-out-file={path}', '--vex-guest-chase=no', *extra, *cmd),
               tools.dir, path)


def read_cleanly(path):
    r = subprocess.run([*annotate_cmd(), str(path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == '', r.stderr


def assert_forests_consistent(prof, k_inf):
    """Each thread's forest holds its Ir; at k=inf every node's inclusive Ir
    is its exclusive Ir plus its children's."""
    for forest in prof.forests:
        assert sum(n[3] for n in forest.nodes.values()) == forest.ir
        if not k_inf:
            continue
        for nid, (_parent, _label, _calls, excl, incl) in forest.nodes.items():
            assert incl == excl + sum(forest.nodes[c][4] for c in forest.children[nid]), forest.name(nid)


@pytest.mark.parametrize('k', ['1', 'inf'])
def test_gzip_totals_equal_cachegrind(tools, k):
    """gzip is deterministic: its total Ir is cachegrind's, exactly."""
    gzip = program('gzip')
    data = text_file(tools.dir / 'data.txt', 4000)
    kg = kgrind(tools, gzip, '-6', '-c', data, opts=[f'--k={k}'])
    cg = reference(tools, 'cachegrind', gzip, '-6', '-c', data)
    assert cg.stdout == kg.stdout
    prof = kg.profile()
    assert prof.total() == prof.totals == cg.profile().total()
    assert_forests_consistent(ksf_records.parse(kg.profile_path), k == 'inf')
    read_cleanly(kg.profile_path)


def test_perl_die_in_eval_counts(tools):
    """perl's die inside eval leaves by longjmp through the interpreter's
    frames: Perl_die_unwind runs once per die (the script's own count) in
    kgrind and callgrind alike, and the totals are cachegrind's."""
    perl = program('perl')
    script = tools.dir / 'die.pl'
    dies = 150
    script.write_text('sub rec { my $d = shift; die "deep\\n" if $d == 0; return rec($d - 1); }\n'
                      f'my $n = 0; for my $i (1..{dies}) {{ eval {{ rec($i % 20) }}; '
                      '$n++ if $@ eq "deep\\n"; } print "$n\\n";\n')
    kg = kgrind(tools, perl, script, opts=['--k=inf'])
    assert kg.stdout == f'{dies}\n'.encode()
    cg = reference(tools, 'cachegrind', perl, script)
    cl = reference(tools, 'callgrind', perl, script)
    assert kg.profile().total() == cg.profile().total()

    def calls_into(prof, fn):
        return sum(n for _a, callee, n, _i in prof.calls if callgrind_format.callee(callee) == fn)
    assert calls_into(kg.profile(), 'Perl_die_unwind') == calls_into(cl.profile(), 'Perl_die_unwind') == dies
    assert_forests_consistent(ksf_records.parse(kg.profile_path), True)
    read_cleanly(kg.profile_path)


@pytest.mark.parametrize('opts', [['--k=1'], ['--k=inf', '--join-threads=yes']])
def test_xz_worker_threads(tools, opts):
    """xz -T2 compresses blocks in two worker threads. Their contention
    makes the total scheduling-dependent (docs/design/counting.md),
    but each block's compression is not: memcmp, which the match finder
    calls in the workers only, runs as many instructions as under
    cachegrind, and (per thread) none of them in the main thread."""
    xz = program('xz')
    data = text_file(tools.dir / 'data.txt', 6000)
    args = ['-T2', '-1', '--block-size=40KiB', '-c', data]
    kg = kgrind(tools, xz, *args, opts=opts)
    cg = reference(tools, 'cachegrind', xz, *args)
    assert cg.stdout == kg.stdout

    def memcmp(by_function):
        return sum(ir for fn, ir in by_function.items() if fn.startswith('__memcmp'))
    ref = memcmp(cg.profile().by_function())
    assert ref > 0
    assert memcmp(kg.profile().by_function()) == ref
    records = ksf_records.parse(kg.profile_path)
    assert_forests_consistent(records, 'inf' in opts[0])
    if '--join-threads=yes' not in opts:
        assert len(records.forests) >= 3
        main_thread = records.forests[0]
        assert main_thread.tid == '1'
        assert not any(main_thread.name(nid).startswith('__memcmp') and n[3]
                       for nid, n in main_thread.nodes.items())
    read_cleanly(kg.profile_path)
