"""A program that execs (docs/design/processes.md, "Exec"): the image that
calls execve writes its profile first, complete (all threads, open frames'
inclusive costs); with --trace-children=yes it goes to <file>.exec-<n> and
the exec'd image's profile to the process's file; a failed exec takes it
back and the profile at exit is the whole run's. Checked against the
program's own counts (tests/progs/exec_work.c prints its calls of work per
caller) and the k=inf calling context tree's own sums."""
import collections
import re

import pytest

import callgrind_format
import ksf_records
from test_function_mode import canonical_exclusive
from test_regions import desc
from test_stacks import subtree_exclusive

K_OPTS = pytest.mark.parametrize('k', ['2', 'inf'])
# The program's own calls (phase_a > work) as physical frames: -O1 inlines
# repeat_work into phase_a.
PHYSICAL = '--inline-frames=no'


def build(tools):
    # Bound at load time: a failing exec's lazy binding of execv would be
    # the one difference to the run that does not exec.
    return tools.compile('exec_work.c', '-O1', libs=['-Wl,-z,now'])


def own_calls(stdout):
    """The program's counts, {(caller, 'work'): calls}."""
    out = collections.Counter()
    for caller, callee, n in re.findall(r'^calls: (\S+) (\S+) (\d+)$', stdout, re.M):
        out[(caller, callee)] += int(n)
    return out


def work_calls(forests, k):
    """{(caller, 'work'): calls} of the forests' k-contexts (k=inf: whole paths)."""
    out = collections.Counter()
    for forest in forests:
        for ctx, n in ksf_records.kccf(forest, None if k == 'inf' else int(k), 1).items():
            if ctx[-1] == 'work':
                out[ctx] += n
    return out


def assert_exact_sums(path):
    """Each thread's Ir is its first root's inclusive Ir and its canonical
    nodes' exclusive Ir, the threads' Ir the body's; at k=inf every node's
    inclusive Ir is its subtree's exclusive Ir (an open frame settled twice
    would count more)."""
    prof = ksf_records.parse(path)
    k = ksf_records.k_of(prof)
    for forest in prof.forests:
        assert forest.nodes[forest.roots[0]][4] == canonical_exclusive(forest, k) == forest.ir
        if k is None:
            sums = subtree_exclusive(forest)
            for nid, (_parent, _label, _calls, _excl, incl) in forest.nodes.items():
                assert incl == sums[nid], (forest.tid, forest.root_path(nid))
    body = callgrind_format.parse(path)
    assert sum(f.ir for f in prof.forests) == body.summary == body.total()
    return prof


def pre_exec_calls(stdout):
    """What the program counted before the exec (its lines before after_exec's)."""
    return own_calls(stdout.split('calls: after_exec')[0])


@K_OPTS
def test_exec_writes_the_profile_so_far(tools, k):
    exe = build(tools)
    native = tools.native(exe, 'main', exe)
    kg = tools.kgrind(exe, 'main', exe, opts=[f'--k={k}', PHYSICAL])
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    assert re.search(rf'== Exec of {re.escape(str(exe))} \(argv: exec_work after\)\n==\d+== I   refs: .*\n'
                     rf'==\d+== Output written to {re.escape(str(kg.profile_path))}\n', kg.stderr)
    assert desc(kg.profile_path, 'Trigger') == f'Exec: {exe} (argv: exec_work after)'
    prof = assert_exact_sums(kg.profile_path)
    assert work_calls(prof.forests, k) == pre_exec_calls(kg.stdout) == {('phase_a', 'work'): 3,
                                                                       ('phase_b', 'work'): 5}


@K_OPTS
def test_traced_exec_keeps_the_profiles_of_both_images(tools, k):
    """The pre-exec image's profile is <file>.exec-1, the exec'd image's the
    process's file; each has its own image's calls only."""
    exe = build(tools)
    native = tools.native(exe, 'main', exe)
    kg = tools.kgrind(exe, 'main', exe, opts=[f'--k={k}', '--trace-children=yes', PHYSICAL], out='kg.%p')
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    pid = re.search(r'==(\d+)== Command:', kg.stderr).group(1)
    assert sorted(p.name for p in tools.dir.glob('kg.*')) == [f'kg.{pid}', f'kg.{pid}.exec-1']
    before, after = tools.dir / f'kg.{pid}.exec-1', tools.dir / f'kg.{pid}'
    assert f'Output written to {before}\n' in kg.stderr
    assert work_calls(assert_exact_sums(before).forests, k) == pre_exec_calls(kg.stdout)
    assert work_calls(assert_exact_sums(after).forests, k) == {('after_exec', 'work'): 7}
    assert desc(after, 'Trigger') == 'Program termination'
    assert callgrind_format.parse(after).header['cmd'] == f'{exe} after'


def test_each_exec_of_a_process_gets_its_own_file(tools):
    """Three images in one process (exec_work, sh, exec_work again): the
    first two write <file>.exec-1 and .exec-2, the last the file; a stale
    .exec-1 of another process (an earlier run) is overwritten, not skipped."""
    exe = build(tools)
    stale = tools.dir / 'kg.out.exec-1'
    stale.write_text('# callgrind format\nversion: 1\npid: 999999999\n')
    kg = tools.kgrind(exe, 'shell', opts=['--k=2', '--trace-children=yes', PHYSICAL], out='kg.out')
    native = tools.native(exe, 'shell')
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    files = {p.name: callgrind_format.parse(p).header for p in tools.dir.glob('kg.out*')}
    assert sorted(files) == ['kg.out', 'kg.out.exec-1', 'kg.out.exec-2']
    assert len({h['pid'] for h in files.values()}) == 1
    assert files['kg.out.exec-1']['cmd'] == f'{exe} shell'
    assert files['kg.out.exec-2']['cmd'].startswith('/bin/sh -c ')
    assert files['kg.out']['cmd'] == f'{exe} after'
    assert work_calls(assert_exact_sums(tools.dir / 'kg.out.exec-1').forests, '2') == {('phase_a', 'work'): 3}
    assert desc(tools.dir / 'kg.out.exec-2', 'Trigger') == f'Exec: {exe} (argv: {exe} after)'


@pytest.mark.parametrize('traced', [False, True], ids=['untraced', 'traced'])
def test_dumps_before_an_exec_keep_their_files(tools, traced):
    """A dump (--dump-before=phase_b) before the exec: the exec's file is
    the image's next numbered file. Traced, the image's files move to
    <file>.exec-1.<n> before the exec'd image, which dumps too
    (--dump-before=after_exec), writes <file>.<n>: no file is overwritten,
    and each image's files hold its own calls once."""
    exe = build(tools)
    opts = ['--k=2', PHYSICAL, '--dump-before=phase_b', '--dump-before=after_exec'] + (['--trace-children=yes'] if traced else [])
    kg = tools.kgrind(exe, 'main', exe, opts=opts, out='kg.out')
    native = tools.native(exe, 'main', exe)
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    before = ['kg.out.exec-1.1', 'kg.out.exec-1.2'] if traced else ['kg.out.1', 'kg.out.2']
    after = ['kg.out.1', 'kg.out.2'] if traced else []
    assert sorted(p.name for p in tools.dir.glob('kg.out*')) == sorted(before + after)
    assert f'Output written to {tools.dir / before[1]}\n' in kg.stderr
    assert [desc(tools.dir / name, 'Trigger') for name in before] == [
        '--dump-before=phase_b', f'Exec: {exe} (argv: exec_work after)']
    calls = [work_calls(assert_exact_sums(tools.dir / name).forests, '2') for name in before]
    assert calls == [{('phase_a', 'work'): 3}, {('phase_b', 'work'): 5}]
    if traced:
        assert work_calls(assert_exact_sums(tools.dir / after[1]).forests, '2') == {('after_exec', 'work'): 7}
        assert callgrind_format.parse(tools.dir / after[0]).header['cmd'] == f'{exe} after'


def test_failed_traced_exec_after_a_dump_moves_the_dump_back(tools):
    """Traced, the exec moved the image's dump to <file>.exec-1.1; the exec
    fails and it moves back: the run's files are <file>.1 and <file>.2, as
    without the attempt, with each call once."""
    exe = build(tools)
    not_a_program = tools.dir / 'not-a-program'
    not_a_program.write_text('not a program\n')
    opts = ['--k=2', PHYSICAL, '--trace-children=yes', '--dump-before=phase_b']
    kg = tools.kgrind(exe, 'main', not_a_program, opts=opts, out='kg.out')
    assert kg.returncode == 3 and 'Exec failed: the run goes on' in kg.stderr, kg.stderr
    assert sorted(p.name for p in tools.dir.glob('kg.out*')) == ['kg.out.1', 'kg.out.2']
    calls = [work_calls(assert_exact_sums(tools.dir / name).forests, '2') for name in ['kg.out.1', 'kg.out.2']]
    assert calls == [{('phase_a', 'work'): 3}, {('phase_b', 'work'): 5, ('phase_c', 'work'): 2}]
    assert desc(tools.dir / 'kg.out.2', 'Trigger') == 'Program termination'


def paths_without_exec(path):
    """The k=inf paths' calls, but those through execv (the exec attempt)."""
    out = collections.Counter()
    for forest in ksf_records.parse(path).forests:
        for ctx, n in ksf_records.kccf(forest, None, None).items():
            if 'execv' not in ctx:
                out[ctx] += n
    return out


@pytest.mark.parametrize('opts', [['--k=2'], ['--k=inf'], ['--k=inf', '--trace-children=yes']],
                         ids=['k2', 'kinf', 'kinf-traced'])
def test_failed_execs_continue_the_profile(tools, opts):
    """Execs that fail (a missing program: no file is written for it; then
    a file that is no program: its file is written and taken back) leave the
    run's profile what it would have been without them: the calls before
    them once, those after them, the same calling context tree but the
    execv calls'; no other file stays."""
    exe = build(tools)
    missing, not_a_program = tools.dir / 'no-such-program', tools.dir / 'not-a-program'
    not_a_program.write_text('not a program\n')
    native = tools.native(exe, 'main', missing, not_a_program)
    kg = tools.kgrind(exe, 'main', missing, not_a_program, opts=[*opts, PHYSICAL])
    reference = tools.kgrind(exe, 'main', opts=[*opts, PHYSICAL], out='reference.out')
    assert kg.returncode == native.returncode == reference.returncode == 3, kg.stderr
    assert kg.stdout == native.stdout == reference.stdout
    assert kg.stderr.count('== Exec of ') == 1 and f'== Exec of {not_a_program} ' in kg.stderr
    assert kg.stderr.count('== Exec failed: the run goes on') == 1
    assert sorted(p.name for p in tools.dir.glob('*.out*')) == ['kgrind.out', 'reference.out']
    assert desc(kg.profile_path, 'Trigger') == 'Program termination'
    k = opts[0].split('=')[1]
    prof = assert_exact_sums(kg.profile_path)
    assert work_calls(prof.forests, k) == own_calls(kg.stdout) == {
        ('phase_a', 'work'): 3, ('phase_b', 'work'): 5, ('phase_c', 'work'): 2}
    assert paths_without_exec(kg.profile_path) == paths_without_exec(reference.profile_path)
    assert body_calls_without_exec(kg.profile_path) == body_calls_without_exec(reference.profile_path)


def body_calls_without_exec(path):
    """The body's calls= counts by (caller, callee), but those of contexts
    of the exec attempt (execv's, its callees', their callees')."""
    out = collections.Counter()
    for caller, callee, count, _incl in callgrind_format.parse(path).calls:
        if 'execv' not in caller + callee:
            out[(caller, callee)] += count
    return out


@K_OPTS
def test_exec_from_a_second_thread_keeps_every_threads_profile(tools, k):
    """The second thread execs while the main thread waits in pthread_join:
    both threads' calls are in the profile, the main thread's open frames
    (main, blocked_main, pthread_join) with their inclusive costs."""
    exe = build(tools)
    native = tools.native(exe, 'thread', exe)
    kg = tools.kgrind(exe, 'thread', exe, opts=[f'--k={k}', PHYSICAL])
    assert kg.returncode == native.returncode == 0, kg.stderr
    assert kg.stdout == native.stdout
    prof = assert_exact_sums(kg.profile_path)
    by_thread = {f.tid: f for f in prof.forests}
    assert sorted(by_thread) == ['1', '2']
    assert work_calls([by_thread['1']], k) == {('phase_a', 'work'): 3}
    assert work_calls([by_thread['2']], k) == {('phase_b', 'work'): 5}
    main_paths = ksf_records.kccf(by_thread['1'], None if k == 'inf' else int(k), 1)
    assert main_paths[('main', 'blocked_main')] == 1


@pytest.mark.writes_bad_profiles
def test_block_modes_say_that_they_write_no_profile_at_exec(tools):
    """--mode=inter cannot write a profile during the run: it says so at
    the exec, and the file stays the start-up placeholder."""
    exe = build(tools)
    kg = tools.kgrind(exe, 'main', exe, opts=['--mode=inter', '--k=2'])
    assert kg.returncode == 0, kg.stderr
    assert (f'kgrind: exec of {exe}: --mode=inter writes no profile at exec (only --mode=func does):'
            ' this image\'s file stays incomplete') in kg.stderr
    assert desc(kg.profile_path, 'Incomplete profile').startswith('no data: the process did not exit normally')
