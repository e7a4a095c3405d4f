"""The foundation: exact instruction counts equal to cachegrind's, a valid
callgrind-format file, unchanged program behaviour, fork, bad options."""
import re
import signal
import subprocess

import pytest

from conftest import BUILD, PROGS, Toolbox, assert_plt_moves  # noqa: F401

PROGRAMS = [
    ('simple.c', ['-O1'], []),
    ('threads.c', ['-O1'], []),
    ('exceptions.cpp', ['-O1'], []),
    ('sigdeath.c', ['-O1'], []),
]


def own_lines(callgrind, source):
    """callgrind's Ir per line of the program's own source: like kgrind, it
    charges the .plt stubs the program calls to the calling line."""
    return {key: ir for key, ir in callgrind.by_file_line().items() if key[0] == str(PROGS / source)}


OWN_LEAF_FUNCTIONS = {
    'simple.c': ['branchy', 'leaf'],
    'threads.c': ['sum_to', 'squares', 'worker'],
    'exceptions.cpp': ['after(int)', 'level1(int)'],
    'sigdeath.c': ['work'],
}


@pytest.mark.parametrize('source,flags,args', PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_exact_counts_equal_cachegrind(tools, source, flags, args):
    exe = tools.compile(source, *flags)
    kg = tools.kgrind(exe, *args)
    cg = tools.reference('cachegrind', exe, *args)
    assert kg.returncode == cg.returncode
    cl = tools.reference('callgrind', exe, *args).profile()
    mine, ref = kg.profile(), cg.profile()
    assert mine.total() == ref.summary
    assert mine.summary == mine.totals == ref.summary
    # Every source line's cost is exact, PLT stubs charged to their calling
    # line. Per function, kgrind charges the context of the activated
    # function, so PLT stubs (no symbol in cachegrind: '???') count for
    # their caller; compare the functions of the program itself that make
    # no PLT calls. Inlined functions (--inline-frames) count for the
    # function they are inlined into, as cachegrind counts them.
    assert_plt_moves(mine, ref, cl, own_lines(cl, source))
    by_fn, ref_fn = mine.by_physical_function(), ref.by_function()
    for fn in OWN_LEAF_FUNCTIONS[source]:
        assert by_fn[fn] == ref_fn[fn] > 0, fn
    # The stderr summary names the same total.
    m = re.search(r'I\s+refs:\s+([\d,]+)', kg.stderr)
    assert m and int(m.group(1).replace(',', '')) == ref.summary


@pytest.mark.parametrize('unroll', ['0', '60', 'default'])
def test_counts_do_not_depend_on_loop_unrolling(tools, unroll):
    """VEX unrolls small loops into one superblock with a side exit per copy
    (kgrind raises its threshold from 120 to 400, the maximum), and a run
    leaves at any copy: each copy's flush point must count exactly. Per-line
    Ir equals cachegrind's (VEX's default unrolling) however kgrind's VEX
    unrolls."""
    exe = tools.compile('loops.c', '-O2')
    opts = [] if unroll == 'default' else [f'--vex-iropt-unroll-thresh={unroll}']
    kg = tools.kgrind(exe, opts=opts)
    cg = tools.reference('cachegrind', exe)
    cl = tools.reference('callgrind', exe).profile()
    assert kg.returncode == 0 == cg.returncode
    assert kg.stdout == cg.stdout
    mine, ref = kg.profile(), cg.profile()
    assert mine.summary == mine.totals == ref.summary
    assert_plt_moves(mine, ref, cl, own_lines(cl, 'loops.c'))
    by_fn, ref_fn = mine.by_physical_function(), ref.by_function()
    for fn in ('find', 'bits', 'sum_until_negative'):
        assert by_fn[fn] == ref_fn[fn] > 0, fn


def test_program_code_equals_plain_cachegrind(tools):
    """With cachegrind's default settings (chasing on) the dynamic loader's
    start-up differs by a few hundred instructions, but the program's own
    functions must match exactly."""
    exe = tools.compile('simple.c', '-O1')
    mine = tools.kgrind(exe).profile().by_physical_function()
    ref = tools.reference('cachegrind', exe, chase=True).profile().by_function()
    for fn in ('branchy', 'leaf'):
        assert mine[fn] > 0 and mine[fn] == ref[fn], fn
    # main also pays for the PLT stub of printf (cachegrind: '???').
    assert 0 <= mine['main'] - ref['main'] <= 10


@pytest.mark.parametrize('source,flags,args', PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_program_behaviour_unchanged(tools, source, flags, args):
    exe = tools.compile(source, *flags)
    native = tools.native(exe, *args)
    kg = tools.kgrind(exe, *args)
    assert kg.stdout == native.stdout
    assert kg.returncode == native.returncode


def test_fatal_signal_is_kept(tools):
    exe = tools.compile('sigdeath.c', '-O1')
    kg = tools.kgrind(exe)
    assert kg.returncode == -signal.SIGSEGV
    assert kg.profile().by_function()['work'] > 5000


def test_fork_child_counts_only_its_own_work(tools):
    exe = tools.compile('forker.c', '-O1')
    native = tools.native(exe)
    kg = tools.kgrind(exe, out='kg.%p')
    assert kg.returncode == native.returncode == 0
    files = sorted(tools.dir.glob('kg.*'))
    assert len(files) == 2
    cg = tools.reference('cachegrind', exe, opts=[f'--cachegrind-out-file={tools.dir}/cg.%p'])
    cg_files = sorted(tools.dir.glob('cg.*'))
    assert len(cg_files) == 2
    tools.reference('callgrind', exe, opts=[f'--callgrind-out-file={tools.dir}/cl.%p'])
    cl_files = sorted(tools.dir.glob('cl.*'))
    assert len(cl_files) == 2

    import callgrind_format
    kgs = [callgrind_format.parse(f) for f in files]
    cgs = [callgrind_format.parse(f) for f in cg_files]
    kg_parent, kg_child = sorted(kgs, key=lambda p: p.by_function()['parent_work'] == 0)
    cg_parent, cg_child = sorted(cgs, key=lambda p: p.by_function()['parent_work'] == 0)
    cl_parent, cl_child = sorted((callgrind_format.parse(f) for f in cl_files),
                                 key=lambda p: p.by_function()['parent_work'] == 0)
    kp, kc, cp, cc = (p.by_function() for p in (kg_parent, kg_child, cg_parent, cg_child))
    # The parent counts everything it ran, as cachegrind does.
    assert kg_parent.total() == cg_parent.summary
    assert_plt_moves(kg_parent, cg_parent, cl_parent, own_lines(cl_parent, 'forker.c'))
    for fn in ('before_fork', 'parent_work'):
        assert kp[fn] == cp[fn] > 0
    # cachegrind's child inherits the parent's pre-fork counters; kgrind's
    # child starts from zero: the child's own work is equal, the pre-fork work
    # is not counted twice.
    assert kc['child_work'] == cc['child_work'] > 0
    assert kc['before_fork'] == 0 and cc['before_fork'] == cp['before_fork'] > 0
    assert kc['parent_work'] == 0
    # Everything the child counts beyond kgrind's child is pre-fork work,
    # which the parent counted: nothing is lost or counted twice.
    prefork = cg_child.summary - kg_child.total()
    assert 0 < prefork < kg_parent.total()
    # Per line too, but where PLT stubs' instructions moved to their calling
    # line (a line callgrind's child calls from).
    kl, cl = kg_child.by_file_line(), cg_child.by_file_line()
    call_lines = {(f, line) for _a, _c, f, line in cl_child.call_sites}
    for line, n in kl.items():
        assert n <= cl[line] or line in call_lines, line


def test_callgrind_annotate_reads_the_profile(tools):
    import callgrind_format
    exe = tools.compile('simple.c', '-O1')
    kg = tools.kgrind(exe)
    prof = kg.profile()
    out = subprocess.run(['callgrind_annotate', '--inclusive=no', '--threshold=100',
                          str(kg.profile_path)], capture_output=True, text=True, check=True)
    assert 'Warning' not in out.stderr and 'warning' not in out.stderr.lower(), out.stderr
    m = re.search(r'^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?PROGRAM TOTALS', out.stdout, re.M)
    assert m and int(m.group(1).replace(',', '')) == prof.total()
    by_fn = prof.by_function()
    shown = {}
    for line in out.stdout.splitlines():
        m = re.match(r'^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?\S*:(\S+)', line)
        if m and 'PROGRAM TOTALS' not in line:
            fn = callgrind_format.callee(m.group(2))
            shown[fn] = shown.get(fn, 0) + int(m.group(1).replace(',', ''))
    for fn in ('main', 'branchy', 'leaf'):
        assert shown[fn] == by_fn[fn] > 0


def test_header_fields(tools):
    exe = tools.compile('marker.c')
    kg = tools.kgrind(exe, 'arg1')
    text = kg.profile_path.read_text()
    lines = text.splitlines()
    assert lines[0] == '# callgrind format'
    prof = kg.profile()
    assert prof.header['version'] == '1'
    assert prof.header['creator'].startswith('kgrind-')
    assert prof.header['cmd'] == f'{exe} arg1'
    assert int(prof.header['pid']) > 0
    assert prof.header['positions'] == 'line'
    assert prof.events == ['Ir']


def test_default_output_name_uses_pid(tools):
    exe = tools.compile('marker.c')
    kg = tools.kgrind(exe, out=None)
    pid = re.search(r'^==(\d+)==', kg.stderr, re.M).group(1)
    assert (tools.dir / f'kgrind.out.{pid}').exists()
    assert f'kgrind.out.{pid}' in kg.stderr


@pytest.mark.parametrize('bad,message', [
    ('--kgrind-bogus=1', 'unknown kgrind option'),
    ('--kgrind-out-file=', 'output file name is empty'),
])
def test_bad_options_stop_before_the_program(tools, bad, message):
    exe = tools.compile('marker.c')
    kg = tools.kgrind(exe, opts=[bad], out=None)
    assert kg.returncode != 0 and kg.returncode != 5
    assert 'marker: ran' not in kg.stdout
    assert message in kg.stderr
    assert bad in kg.stderr


def test_unwritable_output_is_reported_and_program_runs(tools):
    exe = tools.compile('marker.c')
    path = tools.dir / 'no-such-dir' / 'out'
    kg = tools.kgrind(exe, opts=[f'--kgrind-out-file={path}'], out=None)
    assert 'marker: ran' in kg.stdout
    assert kg.returncode == 5
    assert f"cannot create output file '{path}': No such file or directory" in kg.stderr


def test_no_dynamic_initialisers_in_tool():
    """The core never runs static constructors: no object of ours may need one."""
    objs = sorted((BUILD / 'kgrind').glob('*.o'))
    assert objs
    for obj in objs:
        sections = subprocess.run(['objdump', '-h', str(obj)], capture_output=True,
                                  text=True, check=True).stdout
        assert '.init_array' not in sections and '.ctors' not in sections, obj
    tool = next((BUILD / 'kgrind').glob('kgrind-*-linux'))
    syms = subprocess.run(['nm', str(tool)], capture_output=True, text=True, check=True).stdout
    assert '_GLOBAL__sub_I' not in syms
