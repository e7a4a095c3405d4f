"""Stress test: hostile programs (tests/progs/hostile/) under
every mode. Each run is compared with the same program under `--tool=none`
(same launcher, same library directory): its stdout, its exit status or
death signal. Its stderr holds no internal error, and every profile it left
is read by kgrind_annotate (in-tree) and callgrind_annotate with exit 0 and
nothing on stderr. Cheap semantic checks where the program knows the
answer: the immediate callers of the functions main calls after a long
unwind, after coroutines and after a get-PC idiom, with the program's own
call counts (callgrind shows the same callers; it also counts the get-PC
`call` as a call, which it is not); one forest per thread; the total Ir
beside the thread forests' sum; the program's own lines' Ir beside
callgrind's (function mode) or cachegrind's (block modes).

Programs run in a fresh directory with the default output name
(kgrind.out.<pid>), so each process's profile is found, and a chdir must
not move it. A death shows as the same negative return code (signal)."""
import collections
import dataclasses
import os
import re
import resource
import signal
import subprocess

import pytest

import callgrind_format
import ksf_records
import profile_check
from conftest import PROGS, ROOT, VALGRIND

HOSTILE = PROGS / 'hostile'
ANNOTATE = ROOT / 'perl' / 'kgrind_annotate.pl'
TIMEOUT = 120

MODES = {
    'k0': ['--k=0'],
    'k2': ['--k=2'],
    'kinf': ['--k=inf'],
    'join': ['--k=2', '--join-threads=yes'],
    'intra': ['--mode=intra'],
    'inter': ['--mode=inter'],
    'intra-roll': ['--mode=intra', '--roll-loops=yes'],
    'inter-roll': ['--mode=inter', '--roll-loops=yes'],
    'smc': ['--k=2', '--smc-check=all'],
}
# Modes whose k-SF records are function forests, one per thread (or one).
FUNCTION_MODES = {'k0', 'k2', 'kinf', 'join', 'smc'}
# --join-threads tests nothing new in a program with one thread.
ONE_THREAD = tuple(m for m in MODES if m != 'join')
ALL_MODES = tuple(MODES)
# What is decided before the program runs (the cmd: header) or is the
# same way out as another case (a SIGKILL to itself, which Valgrind turns
# into an exit through the tool's fini, like the other deaths) needs one
# function mode and one block mode.
ONE_OF_EACH = ('k2', 'intra')


@dataclasses.dataclass
class Case:
    name: str
    prog: str                    # source in tests/progs/hostile, without suffix
    args: tuple = ()             # '{plugin}' is replaced by the built plugin's path
    modes: tuple = ONE_THREAD
    profiles: int = 1            # processes that end under the tool, each writing a profile
    exec_profiles: int = 0       # and processes that exec (function mode writes their profile then)
    # fn -> {immediate caller: calls}, the program's own counts, in every
    # mode; func_callers only in function mode (they go through code that
    # the block modes do not trace: --funcs is the main executable there).
    callers: dict = dataclasses.field(default_factory=dict)
    func_callers: dict = dataclasses.field(default_factory=dict)
    threads: int = None          # thread forests (function mode not joined, inter mode)
    max_depth: int = None        # longest root path of the --k=inf forests (the CCT)
    reference_lines: bool = False    # own lines cost what callgrind says
    libs: tuple = ()             # to link the program with


# The deaths come from 10 frames of descend() down.
DEATH_PATH = {'descend': {'main': 1, 'descend': 10}}
CASES = [
    # raise_at(i % 7) 50 times, raise_at(50 + i) 20 times; fault_at(i % 30)
    # 200 times, each left by siglongjmp from the SIGSEGV handler.
    Case('signals', 'signals',
         callers={'raise_at': {'main': 70, 'raise_at': sum(i % 7 for i in range(50)) + sum(range(50, 70))},
                  'fault_at': {'main': 200, 'fault_at': sum(i % 30 for i in range(200))},
                  'after_signals': {'main': 1}}),
    # pthread_exit and pthread_cancel 40 calls deep, in their own threads.
    Case('threads-mix', 'threads', ('mix',), modes=ALL_MODES,
         callers={'exit_at': {'exiter': 1, 'exit_at': 40}, 'block_at': {'blocker': 1, 'block_at': 40}}),
    Case('threads-exit', 'threads', ('exit',), modes=ALL_MODES,
         callers={'exit_deep': {'exit_thread': 1, 'exit_deep': 20}}),
    # pthread_cancel 30 frames deep through C++ frames with destructors (31
    # Guards), and a throw from 30 deep caught at the top 5 times, while
    # two other threads compute: each destructor is called by its own frame.
    Case('cancel-destructors', 'cancel', modes=('k2', 'kinf', 'join', 'intra', 'inter'),
         callers={'Guard::~Guard()': {'block_at(long)': 31, 'throw_at(long)': 5 * 31},
                  'cleanup_work(long)': {'Guard::~Guard()': 6 * 31},
                  'after_catch(long)': {'thrower(void*)': 5}, 'after_cancel()': {'main': 1}}),
    Case('threads-600', 'threads', ('many', '600'), modes=ALL_MODES, threads=601,
         reference_lines=True, callers={'middle': {'worker': 600}, 'leaf': {'middle': 12000}}),
    # The parent, 5 forked children that exit and a child whose exec fails;
    # the two children that exec write their profile up to the exec (not in
    # the block modes, which say so), and the exec'd programs run natively.
    Case('fork-exec', 'procs', profiles=7, exec_profiles=2),
    Case('long-unwinds', 'unwind',
         callers={'after_longjmp(long)': {'main': 3}, 'after_throw(long)': {'main': 3},
                  'dive_jmp(long)': {'main': 3, 'dive_jmp(long)': 60000},
                  'dive_throw(long)': {'main': 3, 'dive_throw(long)': 60000}}),
    # 4 coroutines x 50 rounds, nested 3, 4, 5 and 3 deep: a resumed
    # coroutine goes on in its own contexts. No stack of the program is
    # deeper than about 20 frames with the loader's and libc's, so a longer
    # CCT path is made of stale frames.
    Case('coroutines', 'coroutines', max_depth=40,
         callers={'nest': {'coroutine': 200, 'nest': 750}, 'yield_': {'nest': 200},
                  'after_scheduler': {'main': 1}, 'after_link': {'main': 1}}),
    # triple() is called by the generated code, which has no symbol.
    Case('jit', 'jit', func_callers={'triple': {'0x': 1000}}),
    Case('jit-rewritten', 'jit', ('rewrite',), func_callers={'triple': {'0x': 5000}}),
    Case('get-pc', 'getpc', callers={'where': {'main': 100}, 'after_where': {'main': 99}}),
    Case('death-segv', 'deaths', ('segv',), callers=DEATH_PATH),
    Case('death-abort', 'deaths', ('abort',), callers=DEATH_PATH),
    # Valgrind sees the kill(getpid(), SIGKILL) and ends the process itself,
    # after the tool's fini: a complete profile.
    Case('death-sigkill', 'deaths', ('kill',), modes=ONE_OF_EACH, callers=DEATH_PATH),
    Case('death-stack-overflow', 'deaths', ('overflow',), callers=DEATH_PATH),
    Case('dlopen-chdir', 'misc', ('dl', '{plugin}'), callers={'load_and_call': {'main': 2}},
         func_callers={'plugin_entry': {'load_and_call': 2}}),
    Case('newline-in-arg', 'misc', ('args', 'first line\nsecond line', 'plain'), modes=ONE_OF_EACH),
    # 4 threads, each with its own alternate signal stack, raise SIGUSR1
    # 50 frames deep 50 times; the handler siglongjmps back to thr().
    Case('altstack-longjmp', 'altstack_longjmp', ('4', 'heap'), modes=ALL_MODES, threads=5,
         callers={'after': {'thr': 800}, 'work': {'thr': 200}, 'leaf': {'work': 600},
                  'in_handler': {'handler': 200}}),
    # 4 boost.context fibers (nothing registered) yielding to main's
    # scheduler from 3 to 5 nested calls, 3 rounds.
    Case('boost-fibers', 'boost_fibers_nested', ('3',), libs=('-lboost_context',),
         callers={'nest(int, int, int)': {'body(int, int)': 12, 'nest(int, int, int)': 21},
                  'work(int)': {'nest(int, int, int)': 66}, 'yield_()': {'nest(int, int, int)': 12}}),
    # 1,000 threads made and ended, at most 8 alive: each its own forest.
    Case('thread-churn', 'thread_churn', ('1000',), modes=ALL_MODES, threads=1001,
         callers={'request': {'body': 1000}, 'parse': {'request': 2000}, 'reply': {'request': 2000},
                  'format': {'reply': 2000}}),
]
MATRIX = [pytest.param(case, mode, id=f'{case.name}-{mode}') for case in CASES for mode in case.modes]

# (A block mode's exec says that it writes no profile: expected.)
INTERNAL_ERROR = re.compile(r"VALGRIND INTERNAL ERROR|the 'impossible' happened|Assertion .* failed|"
                            r"kgrind:(?! exec of .*: --mode=\w+ writes no profile at exec)|valgrind: m_")


def no_core_dumps():
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


class Ran:
    def __init__(self, pid, returncode, stdout, stderr):
        self.pid, self.returncode, self.stdout, self.stderr = pid, returncode, stdout, stderr


def run_tool(tool, opts, exe, args, cwd):
    """The program under the build's launcher, in cwd; a hang fails."""
    cmd = VALGRIND.argv(tool, *opts, exe, *args)
    proc = subprocess.Popen(cmd, cwd=cwd, env=VALGRIND.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, errors='replace', preexec_fn=no_core_dumps,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f'{" ".join(cmd)}: no end after {TIMEOUT} s')
    return Ran(proc.pid, proc.returncode, out, err)


class Programs:
    """The hostile programs, each compiled once per session."""

    def __init__(self, dir):
        self.dir = dir
        self.built = {}

    def _compile(self, name, *flags, libs=()):
        if name not in self.built:
            # a hostile program, else one of the other tests' programs
            src = next(d / f'{name}{suffix}' for d in (HOSTILE, PROGS) for suffix in ('.c', '.cpp')
                       if (d / f'{name}{suffix}').exists())
            compiler = 'g++' if src.suffix == '.cpp' else 'gcc'
            out = self.dir / (name + ('.so' if '-shared' in flags else ''))
            subprocess.run([compiler, '-g', '-O1', '-pthread', *flags, str(src), '-o', str(out), *libs],
                           check=True, capture_output=True, timeout=TIMEOUT)
            self.built[name] = out
        return self.built[name]

    def command(self, case):
        plugin = self._compile('plugin', '-shared', '-fPIC') if case.prog == 'misc' else None
        return self._compile(case.prog, libs=case.libs), [a.format(plugin=plugin) for a in case.args]


@pytest.fixture(scope='module')
def programs(tmp_path_factory):
    return Programs(tmp_path_factory.mktemp('hostile'))


@pytest.fixture(scope='module')
def reference(programs, tmp_path_factory):
    """case name -> its run under --tool=none (once per case)."""
    runs = {}

    def get(case):
        if case.name not in runs:
            exe, args = programs.command(case)
            runs[case.name] = run_tool('none', [], exe, args, tmp_path_factory.mktemp('none'))
        return runs[case.name]
    return get


def own_lines(profile, case):
    """Ir per line of the program's own source. (Not the total: libc's
    waits for threads vary from run to run by several per cent.)"""
    return {(fl, line): ir for (fl, line), ir in profile.by_file_line().items()
            if fl.rsplit('/', 1)[-1].split('.')[0] == case.prog}


# The reference for the program's own lines: every mode charges a PLT
# stub's instructions to the calling line, as callgrind does (cachegrind
# leaves them at `???` line 0).
LINE_REFERENCES = {
    'callgrind': lambda out: [f'--callgrind-out-file={out}'],
}


def line_reference(mode):
    return 'callgrind'


@pytest.fixture(scope='module')
def reference_lines(programs, tmp_path_factory):
    lines = {}

    def get(case, tool):
        if (case.name, tool) not in lines:
            exe, args = programs.command(case)
            cwd = tmp_path_factory.mktemp(tool)
            run = run_tool(tool, LINE_REFERENCES[tool](cwd / 'ref.out'), exe, args, cwd)
            assert run.returncode == 0, run.stderr
            lines[case.name, tool] = own_lines(callgrind_format.parse(cwd / 'ref.out'), case)
        return lines[case.name, tool]
    return get


def pid_of(path):
    with open(path, errors='replace') as f:
        for line in f:
            if line.startswith('pid: '):
                return int(line.split()[1])
    return None


def annotators_read(path):
    for cmd in (['perl', str(ANNOTATE), str(path)], ['callgrind_annotate', str(path)]):
        r = subprocess.run(cmd, capture_output=True, text=True, errors='replace', timeout=TIMEOUT)
        assert r.returncode == 0 and r.stderr == '', f'{cmd[-2]} {path.name}: exit {r.returncode}\n{r.stderr}'
    profile_check.note_read(path)


def callers(body, fn):
    """{immediate caller of fn: calls} from the callgrind body's calls= lines;
    functions without a symbol (0x...) are grouped as '0x'."""
    out = collections.Counter()
    for caller, callee, count, _incl in body.calls:
        if callgrind_format.callee(callee) == fn:
            name = callgrind_format.callee(caller)
            out['0x' if name.startswith('0x') else name] += count
    return dict(out)


def internal_error(stderr):
    """stderr from the line of the first sign of an internal error, or ''."""
    m = INTERNAL_ERROR.search(stderr)
    return '' if m is None else stderr[stderr.rfind('\n', 0, m.start()) + 1:][:600]


def check_profile(path, case, mode, main_pid, reference_lines):
    annotators_read(path)
    body = callgrind_format.parse(path)
    assert body.summary == body.totals == body.total()
    forests = ksf_records.parse(path).forests
    if mode in FUNCTION_MODES:
        assert sum(f.ir for f in forests) == body.summary
    if pid_of(path) != main_pid:
        return
    # The program's own expectations, all reported together.
    wrong = []
    expected = dict(case.callers, **(case.func_callers if mode in FUNCTION_MODES else {}))
    for fn, want in expected.items():
        got = callers(body, fn)
        if got != want:
            wrong.append(f'callers of {fn}: {got}, expected {want}')
    tids = [f.tid for f in forests]
    if case.threads and mode == 'join' and tids != ['all']:
        wrong.append(f'joined threads: forests {tids}')
    elif case.threads and (mode in FUNCTION_MODES - {'join'} or mode.startswith('inter')) \
            and not len(set(tids)) == len(tids) == case.threads:
        wrong.append(f'{len(tids)} thread forests ({len(set(tids))} threads), expected {case.threads}')
    if case.max_depth and mode == 'kinf':
        depth = max(f.depth_in_tree(n) for f in forests for n in f.nodes)
        if depth > case.max_depth:
            wrong.append(f'a CCT path {depth} calls deep, expected at most {case.max_depth}')
    if case.reference_lines:
        tool = line_reference(mode)
        ref, ours = reference_lines(case, tool), own_lines(body, case)
        if not ref or ours != ref:
            wrong.append(f'own lines\' Ir {sorted(ours.items())}, {tool} {sorted(ref.items())}')
    assert not wrong, '\n'.join(wrong)


@pytest.mark.parametrize('case,mode', MATRIX)
def test_hostile_program(case, mode, programs, reference, reference_lines, tmp_path):
    exe, args = programs.command(case)
    ref = reference(case)
    run = run_tool('kgrind', MODES[mode], exe, args, tmp_path)

    error = internal_error(run.stderr)
    assert not error, error
    assert (run.returncode, run.stdout) == (ref.returncode, ref.stdout), run.stderr[-3000:]
    # Profiles are written where the program started (dlopen-chdir leaves it).
    profiles = sorted(tmp_path.glob('kgrind.out.*'))
    expected = case.profiles + (case.exec_profiles if mode in FUNCTION_MODES else 0)
    assert len(profiles) == expected, [p.name for p in profiles]
    assert run.pid in [pid_of(p) for p in profiles]
    for path in profiles:
        check_profile(path, case, mode, run.pid, reference_lines)
