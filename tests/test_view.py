"""The body's contexts at --view-k: a k=inf or k=4 run writes the
callgrind body of a k=2 run (per-line costs, calls), while its k-SF records
stay those of the full k. The k-SF's exclusive costs then come from the
call edges' inclusive costs instead of the block counters: they must equal
what the counters give (--view-k=k) node for node."""
import pytest

import ksf_records
from test_pitfalls import compile_with_plt_lib


def ksf(path):
    """Every thread's forest as its records say: (thread, Ir, names, nodes by
    pre-order id: (parent, label, calls, excl, incl)). Two runs of one
    deterministic program build their forests in the same order."""
    prof = ksf_records.parse(path)
    return [(f.tid, f.ir, prof.names, f.nodes) for f in prof.forests]


PROGRAMS = [
    ('siglongjmp.c', ()),        # handlers left by siglongjmp
    ('tailcall.c', ()),          # tail calls: frames that share an SP
    ('exceptions.cpp', ()),      # unwinds through several frames
    ('co_sched.c', (20,)),       # coroutines: suspended frames pause
    ('deeprec.c', ()),           # recursion 100,000 deep (rolled, or not)
    ('plt_contexts.c', ()),      # lazy PLT stubs' costs in their callers' contexts
]


def compile(tools, source):
    if source == 'plt_contexts.c':
        return compile_with_plt_lib(tools, source, '-O1')
    return tools.compile(source, '-O1')


@pytest.mark.parametrize('source,args', PROGRAMS)
@pytest.mark.parametrize('k,extra', [('inf', []), ('4', []), ('inf', ['--unroll-simple-rec=yes']),
                                     ('8', ['--join-threads=yes'])])
def test_ksf_costs_from_edges_equal_costs_from_counters(tools, source, args, k, extra):
    exe = compile(tools, source)
    # Output names of equal length: the client's start-up reads them.
    by_counters = tools.kgrind(exe, *args, opts=[f'--k={k}', f'--view-k={k}', *extra], out='counters.out')
    by_edges = tools.kgrind(exe, *args, opts=[f'--k={k}', *extra], out='edgesxxx.out')
    assert by_counters.returncode == by_edges.returncode, by_edges.stderr
    assert by_edges.stdout == by_counters.stdout
    assert 'view-k=2' in by_edges.profile_path.read_text().split('# ksf-options: ', 1)[1].split('\n', 1)[0]
    assert ksf(by_edges.profile_path) == ksf(by_counters.profile_path)


@pytest.mark.parametrize('source,args', PROGRAMS)
def test_body_of_a_deep_run_is_the_k2_body(tools, source, args):
    """Contexts, per-line costs and call lines of a --k=inf (and --k=4) run's
    body equal a --k=2 run's: the view is a k=2 forest beside the k-SF."""
    exe = compile(tools, source)
    k2 = tools.kgrind(exe, *args, opts=['--k=2'], out='k2.out').profile()
    for k, out in (('inf', 'ki.out'), ('4', 'k4.out')):
        deep = tools.kgrind(exe, *args, opts=[f'--k={k}'], out=out)
        body = deep.profile()
        assert body.lines == k2.lines, k
        assert sorted(body.calls) == sorted(k2.calls), k
        assert body.summary == k2.summary


@pytest.mark.parametrize('opts,message', [
    (['--k=4', '--view-k=3'], '--view-k must divide --k'),
    (['--k=2', '--view-k=4'], '--view-k must not exceed --k'),
    (['--k=2', '--view-k=inf'], '--view-k must not exceed --k'),
    (['--view-k=x'], '--view-k takes a whole number'),
    (['--mode=intra', '--view-k=1'], '--view-k applies to function mode only'),
])
def test_bad_view_k(tools, opts, message):
    exe = tools.compile('marker.c')
    kg = tools.kgrind(exe, opts=opts, out=None)
    assert kg.returncode == 1
    assert 'marker: ran' not in kg.stdout
    assert message in kg.stderr


def test_default_view_k(tools):
    exe = tools.compile('marker.c')
    for k, view in (('0', '0'), ('1', '1'), ('2', '2'), ('3', '3'), ('4', '2'), ('8', '2'), ('inf', '2')):
        kg = tools.kgrind(exe, opts=[f'--k={k}'])
        options = kg.profile_path.read_text().split('# ksf-options: ', 1)[1].split('\n', 1)[0]
        assert f'k={k} view-k={view} ' in options, options
