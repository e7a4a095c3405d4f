"""--collect-data=yes: data reads and writes (Dr Dw) without the cache
simulation, counted inline: per k-context and line the counts of
--cache-sim=yes, and summed over contexts cachegrind 3.19's --cache-sim=yes
per function, per line of the program and in total."""
import subprocess

import pytest

import callgrind_format

from conftest import ROOT
from test_events import GEOMETRY, PROGRAMS, cachegrind, own_source_events

ANNOTATE = ['perl', str(ROOT / 'perl' / 'kgrind_annotate.pl')]


def only(costs, events):
    return {e: costs[e] for e in events if costs.get(e)}


@pytest.mark.parametrize('source,flags,functions', PROGRAMS, ids=[p[0] for p in PROGRAMS])
def test_data_accesses_equal_cachegrind(tools, source, flags, functions):
    exe = tools.compile(source, *flags)
    kg = tools.kgrind(exe, opts=['--collect-data=yes', '--inline-frames=no'], out='kg.out.1')
    assert kg.returncode == 0, kg.stderr
    ref = callgrind_format.parse(cachegrind(tools, exe, ['--cache-sim=yes', *GEOMETRY], 'cg.out.1'))
    mine = kg.profile()
    assert mine.events == ['Ir', 'Dr', 'Dw']
    assert mine.summary_events == mine.totals_events == only(ref.summary_events, ['Ir', 'Dr', 'Dw'])
    lines, ref_lines = own_source_events(mine, source), own_source_events(ref, source)
    assert lines and lines == {k: only(c, ['Ir', 'Dr', 'Dw']) for k, c in ref_lines.items()}
    by_fn, ref_fn = mine.by_function_events(), ref.by_function_events()
    for fn in functions:
        assert by_fn[fn] == only(ref_fn[fn], ['Ir', 'Dr', 'Dw']) and by_fn[fn]['Dr'] > 0, fn
    r = subprocess.run([*ANNOTATE, '--sort=Dr', str(kg.profile_path)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_data_accesses_per_context_are_the_simulations(tools):
    """Per context and line, Dr and Dw are those of --cache-sim=yes (the
    same accesses, counted without simulating them), at k=2; the k-SF
    records' nodes carry them too."""
    exe = tools.compile('cache_work.c', '-O1')
    data = tools.kgrind(exe, opts=['--collect-data=yes'], out='kg.out.1').profile()
    sim = tools.kgrind(exe, opts=['--cache-sim=yes', *GEOMETRY], out='kg.out.2').profile()
    assert {k: only(c, ['Ir', 'Dr', 'Dw']) for k, c in data.event_lines.items()} == \
        {k: only(c, ['Ir', 'Dr', 'Dw']) for k, c in sim.event_lines.items()}
    walk = {fn: c for (_ob, _fl, fn, _l), c in data.event_lines.items() if fn.startswith("walk'")}
    assert len(walk) == 2


def test_collect_data_with_cache_sim_adds_nothing(tools):
    exe = tools.compile('simple.c', '-O1')
    sim = tools.kgrind(exe, opts=['--cache-sim=yes', *GEOMETRY], out='kg.out.1')
    both = tools.kgrind(exe, opts=['--cache-sim=yes', '--collect-data=yes', *GEOMETRY], out='kg.out.2')
    assert sim.profile().event_lines == both.profile().event_lines
    assert sim.profile().events == both.profile().events


@pytest.mark.parametrize('opts,message', [
    (['--collect-data=maybe'], '--collect-data'),
    (['--collect-data=yes', '--mode=inter'], '--collect-data=yes needs function mode (--mode=func)'),
    (['--collect-data=yes', '--D1=1024,1,64'], '--D1 sets a cache of --cache-sim=yes: add --cache-sim=yes or drop --D1'),
])
def test_bad_collect_data_options_are_refused(tools, opts, message):
    tools.assert_refused(opts, message)
