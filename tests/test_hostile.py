"""Hostile programs: run-time generated code under self-checking
translations, the get-PC idiom, newlines in arguments and symbols, and runs
that never reach their end (SIGKILL, exec). Each is checked against the
program's own counts and its native behaviour, Valgrind's own tools where
they are right, and what both profile readers make of the file."""
import collections
import os
import re
import signal
import subprocess

import pytest

import callgrind_format
from conftest import PROGS, VALGRIND
from test_annotate import annotate, bad, ok  # noqa: F401

VALGRIND_FAILURE = re.compile(r"INTERNAL ERROR|the 'impossible' happened|Killed by fatal signal")


def assert_same_run(kg, native):
    assert not VALGRIND_FAILURE.search(kg.stderr), kg.stderr
    assert kg.returncode == native.returncode, kg.stderr
    assert kg.stdout == native.stdout


def calls_by_edge(prof):
    """{(callee, caller): calls} over the profile's contexts
    (context names callee'caller'...)."""
    out = collections.Counter()
    for _caller_ctx, callee_ctx, count, _incl in prof.calls:
        chain = callee_ctx.split("'")
        out[(chain[0], chain[1] if len(chain) > 1 else None)] += count
    return out


def callgrind_annotate_clean(path):
    """callgrind_annotate's output for the file; it must read it without
    complaint."""
    proc = subprocess.run(['callgrind_annotate', str(path)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert 'WARNING' not in proc.stderr and proc.stderr == '', proc.stderr
    return proc.stdout


# ---------------------------------------------------------------------------
# Run-time generated code (tests/progs/jit.c). Code in an anonymous mapping
# gets self-checking translations by default; --smc-check=all gives them to
# all code, ld.so's and libc's too. VEX puts its check before the first
# instruction, which crashed the tool (instrument/superblock_facts.cpp, guest_code_start).

JIT_RUNS = {
    'func-smc-all': ['--smc-check=all'],
    # --funcs=*: the block modes trace only the main executable by default;
    # with every function traced the body names the JIT functions' contexts.
    'intra': ['--mode=intra', '--funcs=*'],
    'inter-smc-all': ['--mode=inter', '--funcs=*', '--smc-check=all'],
}


@pytest.fixture(scope='module')
def jit_exe(tmp_path_factory):
    d = tmp_path_factory.mktemp('jit')
    exe = d / 'jit'
    subprocess.run(['gcc', '-g', '-O1', str(PROGS / 'jit.c'), '-o', str(exe)], check=True)
    return exe


def jit_own_counts(stdout):
    m = re.search(r'^calls leaf (\d+) once (\d+) loop (\d+) constant (\d+)$', stdout, re.M)
    leaf, once, loop, constant = map(int, m.groups())
    from_once = int(re.search(r'^callbacks from once (\d+)$', stdout, re.M).group(1))
    from_loop = int(re.search(r'^callbacks from loop (\d+)$', stdout, re.M).group(1))
    return leaf, once, loop, constant, from_once, from_loop


@pytest.mark.parametrize('run', list(JIT_RUNS))
def test_jit_code(tools, jit_exe, run):
    opts = JIT_RUNS[run]
    addresses = tools.dir / 'addresses'
    native = tools.native(jit_exe, addresses)
    assert native.returncode == 0
    kg = tools.kgrind(jit_exe, addresses, opts=opts)
    assert_same_run(kg, native)
    jit = dict(line.split() for line in addresses.read_text().splitlines())
    leaf, once, loop, constant, from_once, from_loop = jit_own_counts(native.stdout)
    edges = calls_by_edge(kg.profile())
    assert edges[(jit['leaf'], 'main')] == leaf
    assert edges[(jit['once'], 'main')] == once
    assert edges[(jit['loop'], 'main')] == loop
    # One function, rewritten between calls: one name, every call counted.
    assert edges[(jit['constant'], 'main')] == constant
    callback_callers = {caller: n for (callee, caller), n in edges.items() if callee == 'callback'}
    assert callback_callers == {jit['once']: from_once, jit['loop']: from_loop}
    cg = tools.reference('cachegrind', jit_exe, addresses,
                         opts=[o for o in opts if o.startswith('--smc-check')])
    assert cg.returncode == 0, cg.stderr
    prof = kg.profile()
    assert prof.total() == prof.totals == cg.profile().summary


# ---------------------------------------------------------------------------
# The get-PC idiom (tests/progs/getpc.c): a call to the next instruction.

def test_get_pc_idiom_is_not_a_call(tools):
    exe = tools.compile('getpc.c', '-O1')
    native = tools.native(exe)
    kg = tools.kgrind(exe)
    assert_same_run(kg, native)
    own = re.match(r'get_pc calls (\d+), helper calls (\d+)', native.stdout)
    get_pc_calls, helper_calls = int(own.group(1)), int(own.group(2))
    edges = calls_by_edge(kg.profile())
    # Without the fix: get_pc "called" itself 100 times more (200 in all).
    assert {c: n for (f, c), n in edges.items() if f == 'get_pc'} == {'work': get_pc_calls}
    assert {c: n for (f, c), n in edges.items() if f == 'helper'} == {'get_pc': helper_calls}
    # callgrind agrees per call site (it takes the idiom for a recursive
    # call of get_pc, so only the call from work is comparable).
    cl = tools.reference('callgrind', exe).profile()
    from_work = sum(n for caller, callee, n, _ in cl.calls
                    if caller == 'work' and callee.startswith('get_pc'))
    assert from_work == get_pc_calls


# ---------------------------------------------------------------------------
# Newlines in arguments, symbols and file names (tests/progs/names.c).

ODD_SYMBOL = 'odd\nname\twith tab'
ODD_ARGS = ['one\ntwo', 'back\\slash']


def compile_odd_names(tools):
    """names.c compiled from a file whose name has a newline, odd_name
    renamed to ODD_SYMBOL."""
    src = tools.dir / 'odd\nfile.c'
    src.write_text((PROGS / 'names.c').read_text())
    obj, exe = tools.dir / 'names.o', tools.dir / 'names'
    subprocess.run(['gcc', '-g', '-O1', '-c', str(src), '-o', str(obj)], check=True)
    subprocess.run(['objcopy', f'--redefine-sym=odd_name={ODD_SYMBOL}', str(obj)], check=True)
    subprocess.run(['gcc', str(obj), '-o', str(exe)], check=True)
    return exe


def escaped(s):
    return s.replace('\n', '\\n').replace('\t', '\\t')


@pytest.mark.parametrize('mode', ['func', 'intra'])
def test_newlines_in_arguments_and_names(tools, annotate, mode):  # noqa: F811
    exe = compile_odd_names(tools)
    native = tools.native(exe, *ODD_ARGS)
    kg = tools.kgrind(exe, *ODD_ARGS, opts=[f'--mode={mode}'])
    assert_same_run(kg, native)
    text = kg.profile_path.read_text()
    assert 'Incomplete profile' not in text      # the exit replaced the start-up file
    # cmd: as callgrind writes it (its file is broken by the file name: read
    # only the header line).
    cl = tools.reference('callgrind', exe, *ODD_ARGS)
    cl_cmd = re.search(r'^cmd:\s*(.*)$', cl.profile_path.read_text(), re.M).group(1)
    assert kg.profile().header['cmd'] == cl_cmd == f'{exe} one\\ntwo back\\\\slash'
    calls = int(re.search(r'odd_name calls (\d+)', native.stdout).group(1))
    edges = calls_by_edge(kg.profile())     # the strict reader: no broken line
    assert edges[(escaped(ODD_SYMBOL), 'main')] == calls
    assert f'{tools.dir}/odd\\nfile.c\n' in text      # fl= (and ksf-file in intra mode)
    callgrind_annotate_clean(kg.profile_path)
    r = ok(annotate('--auto=yes', '--threshold=100', '--top=0', kg.profile_path))
    assert f'{exe} one\\ntwo back\\\\slash' in r.out
    if mode == 'func':
        assert f'main > {escaped(ODD_SYMBOL)}' in r.out
    d = annotate('--format=json', kg.profile_path).json()
    assert d['cmd'] == cl_cmd


# ---------------------------------------------------------------------------
# Runs that never reach their end (tests/progs/incomplete.c): the file
# kgrind writes at start-up stays, and says so.

def assert_incomplete_profile(path, pid, annotate):  # noqa: F811
    prof = callgrind_format.parse(path)
    assert prof.header['pid'] == str(pid)
    assert prof.total() == 0
    shown = callgrind_annotate_clean(path)
    assert re.search(r'^Incomplete profile: no data: the process did not exit normally', shown, re.M)
    bad(annotate(path), 'incomplete profile', 'did not exit normally')


@pytest.mark.writes_bad_profiles
def test_sigkill_leaves_an_incomplete_profile(tools, annotate):  # noqa: F811
    exe = tools.compile('incomplete.c')
    path = tools.dir / 'kgrind.out'
    proc = subprocess.Popen(VALGRIND.argv('kgrind', f'--kgrind-out-file={path}', exe, 'kill'), env=VALGRIND.env(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tools.dir)
    pid = int(proc.stdout.readline().split()[1])
    os.kill(pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert_incomplete_profile(path, pid, annotate)


@pytest.mark.writes_bad_profiles
def test_unsupported_clone_leaves_an_incomplete_profile(tools, annotate):  # noqa: F811
    """clone(CLONE_VM | SIGCHLD) natively runs and reaps its child; Valgrind's
    core refuses it and exits with no tool fini: the start-up file stays and
    both readers say why there is no data."""
    exe = tools.compile('incomplete.c')
    native = tools.native(exe, 'clone')
    assert native.returncode == 0
    kg = tools.kgrind(exe, 'clone')
    assert kg.returncode != 0 and 'Unsupported clone() flags' in kg.stderr
    pid = int(kg.stdout.split()[1])
    assert_incomplete_profile(kg.profile_path, pid, annotate)
    assert 'unsupported clone()' in annotate(kg.profile_path).err


def test_exec_writes_the_profile_of_the_image_it_ends(tools, annotate):  # noqa: F811
    """Without --trace-children=yes the exec'd program runs natively: the
    file is the profile up to the exec (tests/test_exec.py checks its
    counts), which both readers read."""
    exe = tools.compile('incomplete.c')
    native = tools.native(exe, 'exec')
    kg = tools.kgrind(exe, 'exec')
    assert_same_run(kg, native)
    assert native.stdout == 'before exec\nafter exec\n'
    prof = callgrind_format.parse(kg.profile_path)
    assert prof.total() == prof.summary > 0
    shown = callgrind_annotate_clean(kg.profile_path)
    assert 'Trigger: Exec: /bin/echo (argv: echo after exec)' in shown
    assert 'main' in ok(annotate(kg.profile_path)).out
