"""Go programs: goroutines whose stacks runtime.morestack copies to larger
ones (the function that ran out of stack restarts at its entry on the
copy), suspended and resumed by the scheduler on any of the runtime's
threads. Skipped, with the reason, when Go is missing (setup.sh --deps
installs golang-go); the same in miniature, in C, needs no Go."""
import collections
import os
import platform
import re
import shutil
import subprocess

import pytest

import callgrind_format
import ksf_records
from conftest import BUILD, PROGS
from test_annotate import annotate_cmd
from test_stacks import contexts_by_function, in_source, run_like_native
from test_stress import FUNCTION_MODES, MODES, annotators_read

WORKERS, ROUNDS, DEPTH = 4, 2, 3000
# Valgrind 3.19 does not decode RDTSCP, which Go's runtime uses when the
# CPU has it; asynchronous preemption (a signal that makes the goroutine
# call runtime.asyncPreempt) is a limit of kgrind (docs/manual.md).
GODEBUG = 'cpu.rdtscp=off,asyncpreemptoff=1'


@pytest.fixture
def go_program(tools, monkeypatch):
    go = shutil.which('go')
    if not go:
        pytest.skip('go is missing: setup.sh --deps installs golang-go')
    monkeypatch.setenv('GODEBUG', GODEBUG)
    exe = tools.dir / 'go_morestack'
    # The build cache is kept with the build: the first build compiles Go's
    # runtime (minutes on two cores).
    env = dict(os.environ, GO111MODULE='off', GOFLAGS='', GOCACHE=str(BUILD / 'gocache'),
               GOPATH=str(tools.dir / 'gopath'))
    subprocess.run([go, 'build', '-gcflags=-l', '-o', str(exe), str(PROGS / 'go_morestack.go')],
                   check=True, capture_output=True, text=True, env=env)
    return exe


def own_counts(stdout):
    m = re.fullmatch(r'deep (\d+) leaf (\d+) sum \d+\n', stdout)
    assert m, stdout
    return {'main.deep': int(m.group(1)), 'main.leaf': int(m.group(2)), 'main.worker': WORKERS * ROUNDS}


@pytest.mark.parametrize('k', ['1', '2', 'inf'])
def test_goroutines_growing_their_stacks_keep_their_calls_and_contexts(tools, go_program, k):
    """Each worker goroutine recurses DEPTH + its number deep (main.worker >
    main.deep ... > main.leaf); its stack grows from 8 KB to 1 MB, each
    growth copying it, and it yields (runtime.Gosched) and hands tokens
    over channels on the way, so it is suspended and resumed, on any
    thread. Every call of deep and leaf counts once, as the program counts
    them, in the contexts its source gives. Were a copied stack a new one,
    deep would restart at the root (`__root__ > main.deep`) with an extra
    call at every growth."""
    args = (WORKERS, ROUNDS, DEPTH)
    native = tools.native(go_program, *args)
    kg = tools.kgrind(go_program, *args, opts=[f'--k={k}'], out=f'go.{k}')
    assert native.returncode == kg.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    own = own_counts(native.stdout)
    ends = contexts_by_function(ksf_records.parse(kg.profile_path), k)
    for fn, n in own.items():
        assert sum(ends[fn].values()) == n, (fn, ends[fn])
    # The program's own contexts: the worker a goroutine's root, deep called
    # by the worker or by itself, leaf by deep.
    source = {'main.worker': (('__root__',), 0, 0), 'main.deep': (('__root__', 'main.worker'), 0, None),
              'main.leaf': (('__root__', 'main.worker'), 1, None)}
    r = subprocess.run([*annotate_cmd(), str(kg.profile_path)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    wrong = {(fn, ctx): n for fn, (outer, least, most) in source.items()
             for ctx, n in ends[fn].items() if not in_source(ctx, outer, 'main.deep', least, most, k)}
    assert not wrong


@pytest.mark.parametrize('mode', sorted(set(MODES) - {'k2', 'kinf'}))
def test_go_program_under_every_mode(tools, go_program, mode):
    """The same program under the stress test's other modes (k=0, threads
    joined, the block modes, --smc-check=all): the program's output and
    exit status are its own, both annotators read the profile, its totals
    agree, and in the function modes the callgrind body's calls of deep
    and leaf are the program's."""
    args = (WORKERS, ROUNDS, DEPTH)
    native = tools.native(go_program, *args)
    kg = tools.kgrind(go_program, *args, opts=MODES[mode], out=f'go.{mode}')
    assert native.returncode == kg.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    annotators_read(kg.profile_path)
    body = callgrind_format.parse(kg.profile_path)
    assert body.summary == body.totals == body.total()
    if mode in FUNCTION_MODES:
        own = own_counts(native.stdout)
        calls = collections.Counter()
        for _caller, callee, count, _incl in body.calls:
            calls[callgrind_format.callee(callee)] += count
        assert {fn: calls[fn] for fn in ('main.deep', 'main.leaf')} == \
            {fn: own[fn] for fn in ('main.deep', 'main.leaf')}


@pytest.mark.skipif(platform.machine() != 'x86_64', reason="Go's g in R14: amd64")
@pytest.mark.parametrize('threads', ['go', 'cgo'])
@pytest.mark.parametrize('k', ['1', '2', 'inf'])
def test_goroutine_copied_where_another_was_suspended_keeps_its_own_frames(tools, k, threads):
    """Go's runtime in miniature (go_copied_stacks.c): goroutines A and B
    recurse 300 deep through one function and park at the bottom (stacks
    of one shape, A's on a second thread, started the Go way, or as a
    program linked with cgo starts it: pthread_create, and only the switch
    routine's name, runtime.gogo.abi0, says it is Go's); A's stack is copied
    to new memory, then B's into the memory A's copy freed, where B resumes
    at A's very SP and return address; C reuses B's old memory; then A
    resumes in its copy. D, on the second thread, recurses 20 deep in a
    2 KB stack, parks, and is copied to a 4 KB stack just below, its old
    frames less than 4 KB above the SP it resumes at. Each goroutine (its g
    in R14) goes on in its own frames: every call counts once, in the
    contexts the source gives (`__root__ > body > rec ... > leaf`). Taking
    B's landing for A's resume left A nothing to resume: its 301 leaf calls
    at the root. D's landing fitted its old frames (no stack whose frames
    lie outside the goroutine's stack fits): its 21 leaf calls under
    `gogo`. The cgo program is known as Go's by that name alone: not
    recognised, it has both failures (k = 1, 2, inf)."""
    cgo = ['-DCGO'] if threads == 'cgo' else []
    exe = tools.compile('go_copied_stacks.c', '-O2', '-fno-stack-protector', '-fno-optimize-sibling-calls', *cgo,
                        out=f'go_copied_stacks_{threads}')
    kg, own = run_like_native(tools, exe, 300, opts=[f'--k={k}'], out=f'go_copied.{threads}.{k}')
    assert own == {'body': 4, 'rec': 2 * 301 + 151 + 21, 'leaf': 2 * 301 + 21}
    ends = contexts_by_function(ksf_records.parse(kg.profile_path), k)
    source = {'body': (('__root__',), 0, 0), 'rec': (('__root__', 'body'), 0, None),
              'leaf': (('__root__', 'body'), 1, None)}
    for fn, (outer, least, most) in source.items():
        assert sum(ends[fn].values()) == own[fn], (fn, ends[fn])
        wrong = {ctx: n for ctx, n in ends[fn].items() if not in_source(ctx, outer, 'rec', least, most, k)}
        assert not wrong, (fn, wrong)
