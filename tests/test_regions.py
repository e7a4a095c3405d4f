"""Regions of interest and live control (docs/regions.md): client
requests, region options, numbered dumps, kgrind_control, context ids.

Expectations come from outside the tool: the programs' own counts of what a
region did, whole-run profiles of the same program (whose contexts that
only the region reaches must hold the same calls and Ir), callgrind's
profile of the same region, and the chains the programs know they are in.
"""
import collections
import json
import os
import pathlib
import re
import selectors
import subprocess

import pytest

from conftest import ROOT, VALGRIND
import callgrind_format
import ksf_records

INCLUDES = ('-I', str(ROOT / 'include'), '-I', VALGRIND.includedir)
ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]
CONTROL = ['perl', str(ROOT / 'perl' / 'kgrind_control.pl')]


def compile_prog(tools, name):
    return tools.compile(f'{name}.c', '-O1', *INCLUDES)


def context_calls(prof):
    """Calls into each context (the calls= lines of all its callers)."""
    out = collections.Counter()
    for _caller, callee, count, _incl in prof.calls:
        out[callee] += count
    return out


def context_inclusive(prof):
    out = collections.Counter()
    for _caller, callee, _count, incl in prof.calls:
        out[callee] += incl
    return out


def own_counts(stdout):
    """The program's own counts: lines "<context> <count>"."""
    return {ctx: int(n) for ctx, n in (l.rsplit(' ', 1) for l in stdout.splitlines() if "'" in l)}


def nonzero(counter):
    return {k: v for k, v in counter.items() if v}


def unqualified(counter):
    """Context names without the object qualifiers (" [libc.so.6]") that a
    function gets once a namesake is known: a run's first dumps may know
    fewer functions than a whole-run profile."""
    out = collections.Counter()
    for key, v in counter.items():
        strip = lambda name: re.sub(r' \[[^]]*\]', '', name)
        out[tuple(map(strip, key)) if isinstance(key, tuple) else strip(key)] += v
    return out


def one_name_per_function(profiles):
    """Each function (object, file and name, as callgrind tells functions
    apart) has one name in all the files of a run."""
    names = collections.defaultdict(set)
    for p in profiles:
        for ctx, homes in p.function_homes.items():
            callee = callgrind_format.callee(ctx)
            for home in homes:
                # (not an inlined level's mark: `f [inlined]` is another function than f)
                names[(home, re.sub(r' \[(?!inlined\])[^]]*\]', '', callee))].add(callee)
    return {k: v for k, v in names.items() if len(v) > 1} == {}


def dump_files(tools, base='kgrind.out'):
    files = [p for p in tools.dir.iterdir() if re.fullmatch(re.escape(base) + r'\.\d+', p.name)]
    return sorted(files, key=lambda p: int(p.name.rsplit('.', 1)[1]))


def desc(path, key):
    for line in pathlib.Path(path).read_text().splitlines():
        if line.startswith(f'desc: {key}: '):
            return line[len(f'desc: {key}: '):]
    return None


# At k=inf a k-SF node's calls are its first transition's, counted from the
# last zeroing on and added up when a profile is written (docs/design/ksf.md,
# "The k=inf node record"): pauses in counting put
# them back to what they were, dumps during the run take them back after
# writing. The default view (--view-k=2) names the contexts as at k=2.
DEPTHS = [pytest.param([], id='k2'), pytest.param(['--k=inf'], id='kinf')]


# ---- A marked region equals its own count and the whole run's contexts ----

REGION_CONTEXTS = ("mid'outer'main", "leaf'mid'outer", "leaf'outer'main")


@pytest.mark.parametrize('depth', DEPTHS)
def test_region_contexts_equal_own_count_and_whole_run(tools, depth):
    """KGRIND_START_INSTRUMENTATION / STOP inside outer(), whose activation
    began before the region, with --instr-atstart=no."""
    exe = compile_prog(tools, 'roi_region')
    region = tools.kgrind(exe, opts=depth + ['--instr-atstart=no'])
    assert region.returncode == 0, region.stderr
    whole = tools.kgrind(exe, 'whole', opts=depth, out='whole.out')
    assert region.stdout == whole.stdout == tools.native(exe).stdout
    rp, wp = region.profile(), whole.profile()
    # The region's calls, by context, as the program counted them; outer's
    # activation began before the region: its call is not in it, but its
    # callees are attributed to it and to its callers.
    assert {c: context_calls(rp)[c] for c in REGION_CONTEXTS} == own_counts(region.stdout)
    for c in REGION_CONTEXTS:
        assert rp.by_context()[c] == wp.by_context()[c], c
        assert context_calls(rp)[c] == context_calls(wp)[c], c
        assert context_inclusive(rp)[c] == context_inclusive(wp)[c], c
    # Nothing of what ran before or after the region.
    outside = [c for c in nonzero(rp.by_context()) if re.search(r"\b(pre|post)\b", c)]
    assert outside == []
    assert context_calls(rp)["outer'main'(below main)"] == 0


@pytest.mark.parametrize('arg, opt', [('toggle', '--collect-atstart=no'), ('instr', '--instr-atstart=no')])
def test_region_by_callgrind_h_macros(tools, arg, opt):
    """CALLGRIND_TOGGLE_COLLECT twice around the region with
    --collect-atstart=no, or CALLGRIND_START/STOP_INSTRUMENTATION with
    --instr-atstart=no: kgrind measures the same region as callgrind."""
    exe = compile_prog(tools, 'roi_callgrind')
    kg = tools.kgrind(exe, arg, opts=[opt])
    cg = tools.reference('callgrind', exe, arg, opts=[opt])
    assert kg.returncode == 0 and cg.returncode == 0, kg.stderr + cg.stderr
    assert kg.stdout == cg.stdout == tools.native(exe).stdout
    kf = nonzero(kg.profile().by_function())
    cf = nonzero(cg.profile().by_function())
    assert set(kf) == set(cf) == {'main', 'solve', 'row', 'cell'}
    for fn in ('solve', 'row', 'cell'):
        assert kf[fn] == cf[fn], fn
    # main's lines equal but for those of the requests: kgrind counts a
    # request's own instructions where they ran (before the switch), callgrind
    # on the side of the switch it accounts the block at (after it).
    source = (ROOT / 'tests' / 'progs' / 'roi_callgrind.c').read_text().splitlines()
    request_lines = {n for n, text in enumerate(source, 1) if 'CALLGRIND_' in text and '#' not in text}
    assert len(request_lines) == 4
    main_lines = lambda prof: {line: ir for (_ob, _fl, fn, line), ir in prof.lines.items()
                               if ir and callgrind_format.callee(fn) == 'main' and line not in request_lines}
    assert main_lines(kg.profile()) == main_lines(cg.profile()) != {}


@pytest.mark.parametrize('depth', DEPTHS)
def test_toggle_collect_option_counts_only_inside_the_function(tools, depth):
    """--toggle-collect=mid: what ran inside mid's activations, in contexts
    with their true callers (pre, outer and post call mid)."""
    exe = compile_prog(tools, 'roi_region')
    region = tools.kgrind(exe, 'whole', opts=depth + ['--toggle-collect=mid', '--collect-atstart=no'])
    whole = tools.kgrind(exe, 'whole', opts=depth, out='whole.out')
    rp, wp = region.profile(), whole.profile()
    inside = lambda c: c.startswith("mid'") or c.startswith("leaf'mid'")
    expected = {c: ir for c, ir in nonzero(wp.by_context()).items() if inside(c)}
    assert len(expected) == 6   # mid'{pre,outer,post}'..., leaf'mid'{pre,outer,post}
    assert nonzero(rp.by_context()) == expected
    assert {c: n for c, n in nonzero(context_calls(rp)).items()} == \
        {c: n for c, n in nonzero(context_calls(wp)).items() if inside(c)}


# callgrind's option parser: --toggle-collect also sets --collect-atstart=no,
# and of the two the one given last wins.
@pytest.mark.parametrize('opts, collect_atstart', [
    (['--toggle-collect=rec'], False),
    (['--toggle-collect=rec', '--collect-atstart=no'], False),
    (['--collect-atstart=yes', '--toggle-collect=rec'], False),
    (['--toggle-collect=rec', '--collect-atstart=yes'], True),
])
def test_toggle_collect_on_a_recursive_function_equals_callgrind(tools, opts, collect_atstart):
    """Collection switches at the outermost activation of rec: all of the
    recursion is counted and nothing outside it (or, collecting from the
    start, everything but the recursion), as with callgrind."""
    exe = compile_prog(tools, 'roi_rec')
    kg, cg = tools.kgrind(exe, opts=opts), tools.reference('callgrind', exe, opts=opts)
    assert kg.stdout == cg.stdout == tools.native(exe).stdout
    kf, cf = nonzero(kg.profile().by_function()), nonzero(cg.profile().by_function())
    program = ('main', 'outside', 'rec')
    assert {f: kf.get(f) for f in program} == {f: cf.get(f) for f in program}
    if collect_atstart:
        # ld.so's start-up is counted too, longer under the in-place launcher
        # (docs/design/shadow-stacks.md): only the program's functions are compared.
        assert 'outside' in kf and 'rec' not in kf
        return
    assert kf == cf
    assert set(kf) == {'rec'}
    assert context_calls(kg.profile())["rec'rec'rec"] + context_calls(kg.profile())["rec'rec'main"] + \
        context_calls(kg.profile())["rec'main'(below main)"] == 301


# ---- Dumps ----

@pytest.mark.parametrize('depth', DEPTHS)
def test_dumps_in_a_loop_join_to_the_whole_run(tools, depth):
    exe = compile_prog(tools, 'roi_dumps')
    run = tools.kgrind(exe, 'dumps', opts=depth)   # the same calls as "whole" (lazy binding)
    whole = tools.kgrind(exe, 'whole', opts=depth, out='whole.out')
    assert run.returncode == whole.returncode == 0
    assert run.stdout == whole.stdout
    files = dump_files(tools)
    assert len(files) == 5   # four dumps and the final profile
    assert not (tools.dir / 'kgrind.out').exists()
    parts = [callgrind_format.parse(f) for f in files]
    excl, calls, incl = collections.Counter(), collections.Counter(), collections.Counter()
    for p in parts:
        excl.update(p.by_context())
        for caller, callee, count, inclusive in p.calls:
            calls[(caller, callee)] += count
            incl[(caller, callee)] += inclusive
    wp = whole.profile()
    wcalls, wincl = collections.Counter(), collections.Counter()
    for caller, callee, count, inclusive in wp.calls:
        wcalls[(caller, callee)] += count
        wincl[(caller, callee)] += inclusive
    assert one_name_per_function(parts)
    assert nonzero(unqualified(excl)) == nonzero(unqualified(wp.by_context()))
    assert nonzero(unqualified(calls)) == nonzero(unqualified(wcalls))
    assert nonzero(unqualified(incl)) == nonzero(unqualified(wincl))
    assert sum(p.summary for p in parts) == wp.summary
    # Each file says why it was written and which Ir it covers: contiguous.
    triggers = [desc(f, 'Trigger') for f in files]
    assert triggers == ['Client Request: pass'] * 4 + ['Program termination']
    ranges = [tuple(map(int, desc(f, 'Ir range').split(' - '))) for f in files]
    assert ranges[0][0] == 0
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    assert all(hi - lo == p.summary for (lo, hi), p in zip(ranges, parts))
    # kgrind_annotate joins them like any profiles of one program.
    joined = json.loads(subprocess.run(ANNOTATE + ['--format=json', *map(str, files)], check=True,
                                       capture_output=True, text=True).stdout)
    single = json.loads(subprocess.run(ANNOTATE + ['--format=json', str(whole.profile_path)], check=True,
                                       capture_output=True, text=True).stdout)
    strip = lambda path: tuple(re.sub(r' \[[^]]*\]', '', name) for name in path)
    as_set = lambda d: sorted((strip(c['path']), c['calls'], c['Ir'], c['inclusive'])
                              for t in d['threads'] for c in t['contexts'] if c['calls'] or c['Ir'])
    assert as_set(joined) == as_set(single)


@pytest.mark.parametrize('option, trigger', [('--dump-before=work', '--dump-before=work'),
                                             ('--dump-after=w?rk', '--dump-after=work')])
def test_dump_before_and_after_a_function(tools, option, trigger):
    """roi_dumps calls work() five times: five dumps at its entries (the
    first holds no call of it) or at its exits (each holds one), and the
    files join to the whole run."""
    exe = compile_prog(tools, 'roi_dumps')
    run = tools.kgrind(exe, 'whole', opts=[option])
    whole = tools.kgrind(exe, 'whole', out='whole.out')
    assert run.returncode == 0 and run.stdout == whole.stdout
    files = dump_files(tools)
    assert [desc(f, 'Trigger') for f in files] == [trigger] * 5 + ['Program termination']
    parts = [callgrind_format.parse(f) for f in files]
    work_calls = [context_calls(p)["work'main'(below main)"] for p in parts]
    assert work_calls == ([0, 1, 1, 1, 1, 1] if 'before' in option else [1, 1, 1, 1, 1, 0])
    excl = collections.Counter()
    for p in parts:
        excl.update(p.by_context())
    assert one_name_per_function(parts)
    assert nonzero(unqualified(excl)) == nonzero(unqualified(whole.profile().by_context()))


def test_zero_before_a_function(tools):
    """--zero-before=phase_b: the profile starts at phase_b's entry."""
    exe = compile_prog(tools, 'roi_phases')
    run = tools.kgrind(exe, 'whole', opts=['--zero-before=phase_b'])
    whole = tools.kgrind(exe, 'whole', out='whole.out')
    rp, wp = run.profile(), whole.profile()
    assert 'phase_a' not in nonzero(rp.by_function())
    for c in ("step'phase_b'main", "phase_b'main'(below main)", "step'phase_c'main", "phase_c'main'(below main)"):
        assert rp.by_context()[c] == wp.by_context()[c], c
        assert context_calls(rp)[c] == context_calls(wp)[c], c


@pytest.mark.parametrize('depth', DEPTHS)
def test_dumps_while_collection_is_off_hold_nothing(tools, depth):
    """--collect-atstart=no and no toggle: the dumps (made while nothing is
    counted) and the final profile hold no calls and no Ir."""
    exe = compile_prog(tools, 'roi_dumps')
    run = tools.kgrind(exe, 'dumps', opts=depth + ['--collect-atstart=no'])
    assert run.returncode == 0
    files = dump_files(tools)
    assert len(files) == 5
    for p in map(callgrind_format.parse, files):
        assert p.summary == 0 and nonzero(p.by_context()) == {}
        assert [c for c in p.calls if c[2] or c[3]] == []


@pytest.mark.parametrize('depth', DEPTHS)
def test_zero_then_dump_holds_only_what_ran_between(tools, depth):
    exe = compile_prog(tools, 'roi_phases')
    run = tools.kgrind(exe, opts=depth)
    whole = tools.kgrind(exe, 'whole', opts=depth, out='whole.out')
    files = dump_files(tools)
    assert [f.name for f in files] == ['kgrind.out.1', 'kgrind.out.2']
    between, after = (callgrind_format.parse(f) for f in files)
    wp = whole.profile()
    fns = nonzero(between.by_function())
    assert set(fns) <= {'main', 'phase_b', 'step'} and {'phase_b', 'step'} <= set(fns)
    assert context_calls(between)["step'phase_b'main"] == own_counts(run.stdout)["step'phase_b'main"]
    assert context_calls(between)["phase_b'main'(below main)"] == 1
    for c in ("step'phase_b'main", "phase_b'main'(below main)"):
        assert between.by_context()[c] == wp.by_context()[c]
    assert set(nonzero(after.by_function())) <= {'main', 'phase_c', 'step', 'printf'} | \
        set(nonzero(wp.by_function())) - {'phase_a', 'phase_b'}
    assert not {'phase_a', 'phase_b'} & set(nonzero(after.by_function()))


# ---- Context ids ----

def test_current_context_ids_decode_to_the_known_chains(tools):
    exe = compile_prog(tools, 'roi_context')
    run = tools.kgrind(exe)
    assert run.returncode == 0, run.stderr
    logged = [l.split(' ', 1) for l in run.stdout.splitlines()]
    assert len(logged) == 7
    ids_of = collections.defaultdict(set)
    for cid, chain in logged:
        out = subprocess.run(ANNOTATE + [f'--context-id={cid}', str(run.profile_path)],
                             capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split(': ', 1)[1].rstrip('\n') == chain
        ids_of[chain].add(cid)
    # One id per context, different contexts different ids.
    assert all(len(ids) == 1 for ids in ids_of.values())
    assert len({next(iter(ids)) for ids in ids_of.values()}) == len(ids_of) == 5
    bad = subprocess.run(ANNOTATE + ['--context-id=99', str(run.profile_path)], capture_output=True, text=True)
    assert bad.returncode != 0 and 'context id 99 is in none of' in bad.stderr


# ---- Live control ----

def read_line(stream, timeout):
    sel = selectors.DefaultSelector()
    sel.register(stream, selectors.EVENT_READ)
    assert sel.select(timeout), 'the program did not get ready in time'
    return stream.readline()


class WaitingProgram:
    """roi_wait (or exe with args) under kgrind, with a FIFO prefix of its
    own (kgrind_control and vgdb see this process only), stopped at its
    "ready" line."""

    def __init__(self, tools, out, exe=None, args=(), opts=()):
        self.exe = exe or compile_prog(tools, 'roi_wait')
        self.prefix = f'--vgdb-prefix={tools.dir}/vgdb'
        self.proc = subprocess.Popen(VALGRIND.argv('kgrind', self.prefix, *opts, f'--kgrind-out-file={out}', self.exe, *args),
                                     env=VALGRIND.env(), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tools.dir)
        self.pid = str(self.proc.pid)
        assert read_line(self.proc.stdout, 120) == 'ready\n'

    def control(self, *args):
        return subprocess.run(CONTROL + [self.prefix, *args], capture_output=True, text=True, timeout=60)

    def go_on(self):
        """Lets it work and end: its stdout after "ready", its stderr."""
        return self.proc.communicate('go\n', timeout=300)

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def test_kgrind_control_dumps_a_waiting_program_that_goes_on(tools):
    native = subprocess.run([str(compile_prog(tools, 'roi_wait'))], input='go\n', capture_output=True, text=True,
                            timeout=60)
    prog = WaitingProgram(tools, tools.dir / 'kgrind.out')
    try:
        pid = prog.pid
        listed = prog.control('-l')
        assert listed.stdout.startswith(f'PID {pid}: ') and listed.stdout.count('\n') == 1
        status = prog.control('-s', pid)
        assert status.returncode == 0, status.stderr
        # Blocked in read(), called from fgets() under main: deeper than main.
        depth = re.search(r"^thread 1 \(Valgrind tid 1\): shadow stack depth (\d+), context (\S+)$",
                          status.stdout, re.M)
        assert depth and int(depth[1]) > 3, status.stdout
        # -b: the whole shadow stack, innermost first, each frame with its context
        back = prog.control('-b', pid)
        assert back.returncode == 0, back.stderr
        lines = back.stdout.splitlines()
        assert lines[0] == f'Backtrace for thread 1 (Valgrind tid 1), {depth[1]} frames, innermost first:'
        frames = [re.fullmatch(r'  \[ ?(\d+)\] (.+?)   \((.+)\)', l).groups() for l in lines[1:]]
        assert [int(f[0]) for f in frames] == list(range(int(depth[1])))
        assert frames[0][2] == depth[2]
        names = [f[1] for f in frames]
        assert all(ctx.startswith(f"{name}'") for _d, name, ctx in frames)
        # each frame's context is the frame and its callers below it
        assert all(frames[i][2].split("'")[:3] == names[i:i + 3] for i in range(len(frames) - 2))
        assert names.index('fgets') < names.index('main') < names.index('(below main)') < len(names) - 1
        assert names[-1] == '_start'
        unknown = subprocess.run(['vgdb', prog.prefix, f'--pid={pid}', 'frobnicate'], capture_output=True,
                                 text=True, timeout=60)
        assert "unknown monitor command 'frobnicate'" in unknown.stdout
        dumped = prog.control('-d', pid)
        assert dumped.returncode == 0, dumped.stderr
        first = tools.dir / 'kgrind.out.1'
        assert first.exists()
        assert desc(first, 'Trigger') == 'Monitor command: dump'
        assert 'warm_up' in callgrind_format.parse(first).by_function()
        stdout, _stderr = prog.go_on()
    finally:
        prog.kill()
    assert prog.proc.returncode == native.returncode == 3
    assert 'ready\n' + stdout == native.stdout
    final = callgrind_format.parse(tools.dir / 'kgrind.out.2')
    assert final.by_function()['work'] > 0 and 'warm_up' not in nonzero(final.by_function())


def test_kgrind_control_events_are_the_dumps_totals_and_kill_ends_the_run(tools):
    prog = WaitingProgram(tools, tools.dir / 'kgrind.out')
    try:
        events = prog.control('-e', prog.pid)
        assert events.returncode == 0, events.stderr
        m = re.fullmatch(r'events: Ir\ntotals: (\d+)\nthread 1 \(Valgrind tid 1\): Ir (\d+)\n', events.stdout)
        assert m and m[1] == m[2] and int(m[1]) > 10000, events.stdout
        # blocked in read(): the dump holds what -e counted
        assert prog.control('-d', prog.pid).returncode == 0
        assert callgrind_format.parse(tools.dir / 'kgrind.out.1').totals == int(m[1])
        # the dump zeroed the counters
        again = prog.control('-e', prog.pid)
        assert again.stdout == 'events: Ir\ntotals: 0\nthread 1 (Valgrind tid 1): Ir 0\n'
        killed = prog.control('-k', prog.pid)
        assert killed.returncode == 0 and killed.stdout == '' and killed.stderr == ''
        stdout, _stderr = prog.proc.communicate(timeout=60)
    finally:
        prog.kill()
    # killed, not ended: the program neither worked nor returned its 3
    assert prog.proc.returncode != 3 and 'sum' not in stdout
    assert sorted(p.name for p in tools.dir.glob('kgrind.out*')) == ['kgrind.out.1']


def test_live_dump_to_a_vanished_directory_is_reported_and_the_run_goes_on(tools):
    """(As root no permission makes a directory unwritable: it is removed.)"""
    native = subprocess.run([str(compile_prog(tools, 'roi_wait'))], input='go\n', capture_output=True, text=True,
                            timeout=60)
    gone = tools.dir / 'gone'
    gone.mkdir()
    prog = WaitingProgram(tools, gone / 'out')
    try:
        (gone / 'out').unlink()
        gone.rmdir()
        dumped = prog.control('--dump=now', prog.pid)
        assert dumped.returncode == 1
        # Messages during a monitor command go to vgdb (Valgrind's output control).
        assert f"kgrind: cannot create output file '{gone}/out.1': No such file or directory" in dumped.stdout
        assert f"kgrind: dump to '{gone}/out.1' failed; the run goes on" in dumped.stdout
        stdout, stderr = prog.go_on()
    finally:
        prog.kill()
    assert prog.proc.returncode == native.returncode == 3
    assert 'ready\n' + stdout == native.stdout
    # No dump was written: the final profile keeps the plain name.
    assert f"kgrind: cannot create output file '{gone}/out': No such file or directory" in stderr


def test_kgrind_control_without_a_kgrind_process(tools):
    # A FIFO prefix no process uses: other kgrind runs on this machine stay
    # out of reach whatever the script does.
    control = lambda *args: subprocess.run(CONTROL + [f'--vgdb-prefix={tools.dir}/none', *args],
                                           capture_output=True, text=True, timeout=60)
    r = control('-d', '999999999')
    assert r.returncode == 1
    assert r.stderr == 'kgrind_control: no kgrind process with pid 999999999 (kgrind_control -l lists them)\n'
    r = control('-z')
    assert r.returncode == 1
    assert r.stderr == 'kgrind_control: no kgrind process is running (with --vgdb=yes, the default)\n'
    r = control('-i', 'maybe')
    assert r.returncode == 1 and "-i takes on or off, not 'maybe'" in r.stderr


# ---- Bad uses ----

@pytest.mark.parametrize('opt, message', [
    ('--instr-atstart=maybe', "Invalid boolean value 'maybe'"),
    ('--collect-atstart=2', "Invalid boolean value '2'"),
    ('--toggle-collect=', '--toggle-collect needs a function name or glob pattern'),
    ('--dump-before=', '--dump-before needs a function name or glob pattern'),
    ('--dump-every-bb=0', '--dump-every-bb takes a positive whole number'),
    ('--dump-every-bb=1k', '--dump-every-bb takes a positive whole number'),
    ('--dump-line=no', 'kgrind always writes source line positions'),
])
def test_bad_region_option_values(tools, opt, message):
    exe = tools.compile('simple.c')
    r = tools.kgrind(exe, opts=[opt])
    assert r.returncode != 0
    assert message in r.stderr
    assert r.stdout == ''


def test_region_options_need_function_mode(tools):
    exe = tools.compile('simple.c')
    r = tools.kgrind(exe, opts=['--mode=intra', '--instr-atstart=no'])
    assert r.returncode != 0 and 'need --mode=func' in r.stderr


def test_dump_to_an_unwritable_place_is_reported_and_the_run_goes_on(tools):
    exe = compile_prog(tools, 'roi_dumps')
    bad = tools.dir / 'no-such-dir' / 'out'
    r = tools.kgrind(exe, opts=[], out='no-such-dir/out')
    assert r.returncode == 0
    assert r.stdout == tools.native(exe).stdout
    assert f"kgrind: cannot create output file '{bad}.1'" in r.stderr


def test_another_tools_requests_are_reported_once(tools):
    exe = compile_prog(tools, 'roi_other_tool')
    r = tools.kgrind(exe)
    assert r.returncode == 0 and r.stdout == tools.native(exe).stdout
    assert r.stderr.count("kgrind: ignoring client request 0x4d43") == 1
    assert "('M','C'+" in r.stderr


def test_dump_every_bb_dumps_during_the_run(tools):
    exe = tools.compile('loops.c', '-O1')
    r = tools.kgrind(exe, opts=['--dump-every-bb=20000'])
    assert r.returncode == 0
    files = dump_files(tools)
    assert len(files) >= 2
    assert [desc(f, 'Trigger') for f in files[:-1]] == ['--dump-every-bb'] * (len(files) - 1)
    whole = tools.kgrind(exe, out='whole.out')
    assert sum(callgrind_format.parse(f).summary for f in files) == whole.profile().summary


def test_toggle_collect_in_threads(tools):
    """--toggle-collect=worker: what each thread ran in worker, in its
    contexts, as in the whole run; nothing of main's thread outside it."""
    exe = tools.compile('threads.c', '-O1')
    run = tools.kgrind(exe, opts=['--toggle-collect=worker', '--collect-atstart=no'])
    whole = tools.kgrind(exe, out='whole.out')
    assert run.returncode == 0 and run.stdout == whole.stdout
    rp, wp = run.profile(), whole.profile()
    inside = lambda c: re.match(r"(worker|sum_to'worker|squares'worker)'", c)
    expected = {c: ir for c, ir in nonzero(wp.by_context()).items() if inside(c)}
    assert len(expected) >= 3
    assert nonzero(rp.by_context()) == expected
    assert {c: n for c, n in nonzero(context_calls(rp)).items()} == \
        {c: n for c, n in nonzero(context_calls(wp)).items() if inside(c)}


def forest_counts(path):
    """{root path: (calls, exclusive Ir, inclusive Ir)} of a one-thread profile's k-SF."""
    forest, = ksf_records.parse(path).forests
    return {tuple(forest.root_path(n)): node[2:] for n, node in forest.nodes.items()}


def test_kinf_dumps_of_coroutines_sharing_contexts_agree_with_joined_forest(tools):
    """At k=inf a thread's activation records live in its own forest's nodes
    and know which of their frames are outermost without counting them
    (docs/design/ksf.md, "The k=inf node record"); --join-threads=yes keeps
    the general records. Two coroutines run the same chain (rolled
    recursion) and dump while the other is suspended in the same contexts:
    every dump of the one-thread program agrees node for node."""
    exe = compile_prog(tools, 'co_dumps')
    counts = {}
    for joined in ('no', 'yes'):
        base = f'co.{joined}.out'
        run = tools.kgrind(exe, 3, opts=['--k=inf', f'--join-threads={joined}'], out=base)
        assert run.returncode == 0, run.stderr
        counts[joined] = [forest_counts(f) for f in dump_files(tools, base)]
    assert len(counts['no']) == 7   # a dump in each of 3 rounds of 2 coroutines, and the end
    assert counts['no'] == counts['yes']
    # At k=inf with only simple recursion rolled, a node's inclusive cost is
    # its exclusive cost plus its children's inclusive costs, in every dump:
    # a frame of the suspended coroutine settled while the running one has a
    # frame in the same node still counts what it ran (left out, dumps 2-6
    # would be 60 Ir short).
    for dump in counts['no']:
        for path, (_, excl, incl) in dump.items():
            children = sum(c[2] for p, c in dump.items() if len(p) == len(path) + 1 and p[:-1] == path)
            assert incl == excl + children, (path, dump)
