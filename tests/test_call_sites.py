"""kgrind_annotate --sites: the line each level of a context called the
next one from, and the innermost call's calls per line, against a
brute-force count independent of kgrind: tests/progs/call_sites.c built
with -finstrument-functions counts each (callee, return address) pair in
its hooks and prints them; addr2line maps each return address to its
caller and line."""
import collections
import json
import re
import subprocess

import pytest

from test_annotate import SCHEMA, annotate, annotate_cmd  # noqa: F401  (fixture)

OWN = {'main', 'work', 'leaf', 'rec'}
FLAGS = ['-O1', '-no-pie', '-finstrument-functions']


def addr2line(exe, addrs):
    """[(function, line)] of each address."""
    out = subprocess.run(['addr2line', '-f', '-e', str(exe), *[f'{a:#x}' for a in addrs]],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    return [(out[2 * i], int(out[2 * i + 1].rsplit(':', 1)[1].split()[0])) for i in range(len(addrs))]


def brute_force(exe, stdout):
    """Counter((caller, line, callee)) of the program's own calls."""
    rows = [line.split() for line in stdout.splitlines() if line.startswith('0x')]
    fns = addr2line(exe, [int(r[0], 16) for r in rows])
    # the return address less one: the call instruction's line
    sites = addr2line(exe, [int(r[1], 16) - 1 for r in rows])
    got = collections.Counter()
    for (callee, _), (caller, line), r in zip(fns, sites, rows):
        if callee in OWN and caller in OWN:
            got[(caller, line, callee)] += int(r[2])
    return got




@pytest.mark.parametrize('k,opts', [(1, []), (2, []), (2, ['--view-k=1']), (3, ['--unroll-simple-rec=yes']),
                                    ('inf', ['--view-k=inf'])])
def test_site_calls_equal_brute_force(tools, annotate, k, opts):  # noqa: F811
    exe = tools.compile('call_sites.c', *FLAGS)
    run = tools.kgrind(exe, opts=[f'--k={k}', *opts])
    assert run.returncode == 0, run.stderr
    want = brute_force(exe, run.stdout)
    # the calls counted: in a loop, a branch, once, from two callers, recursive
    assert len({line for (c, line, f) in want if (c, f) == ('work', 'leaf')}) == 3
    assert ('rec', 'rec') in {(c, f) for (c, _l, f) in want}
    d = annotate('--sites', '--format=json', '--top=0', '--threshold=100', run.profile_path).json()
    import jsonschema
    jsonschema.validate(d, json.loads(SCHEMA.read_text()))
    got = collections.Counter()
    pairs = collections.defaultdict(set)
    for _c, line, f in want:
        pairs[(_c, f)].add(line)
    for c in d['threads'][0]['contexts']:
        path = c['path']
        if path[-1] not in OWN or path[-2] not in OWN:
            continue
        assert sum(s['calls'] for s in c['sites']) == c['calls'], c
        for s in c['sites']:
            got[(s['caller'], s['line'], path[-1])] += s['calls']
        # each level's lines: some of those its function calls the next
        # one from (all of them with recursion rolled: every chain here
        # goes through each; unrolled, main > rec > leaf only through the
        # odd n's line)
        for j, lines in enumerate(c['lines']):
            if path[j] in OWN and path[j + 1] in OWN:
                assert lines and set(lines) <= pairs[(path[j], path[j + 1])], (path, j)
                if '--unroll-simple-rec=yes' not in opts:
                    assert set(lines) == pairs[(path[j], path[j + 1])], (path, j)
    assert got == want


def test_text_table(tools, annotate):  # noqa: F811
    exe = tools.compile('call_sites.c', *FLAGS)
    run = tools.kgrind(exe, opts=['--k=2'])
    want = brute_force(exe, run.stdout)
    work_leaf = sorted(line for (c, line, f) in want if (c, f) == ('work', 'leaf'))
    main_work = sorted(line for (c, line, f) in want if (c, f) == ('main', 'work'))
    out = annotate('--sites', '--top=0', '--threshold=100', '--width=0', run.profile_path)
    assert out.rc == 0, out.err
    text = out.out
    row = f"main:{'|'.join(map(str, main_work))} > work:{'|'.join(map(str, work_leaf))} > leaf"
    assert row in text, text
    after = text.split(row, 1)[1].splitlines()[1:4]
    for line, sub in zip(work_leaf, after):
        assert sub.rstrip().endswith(f'from work:{line}') and f"{want[('work', line, 'leaf')]:>12}" in sub


def test_block_modes_refused(tools, annotate):  # noqa: F811
    exe = tools.compile('call_sites.c', '-O1')
    run = tools.kgrind(exe, opts=['--mode=inter'])
    out = annotate('--sites', run.profile_path)
    assert out.rc == 2 and out.out == ''
    assert out.err.count('\n') == 1 and '--sites' in out.err and 'function mode' in out.err


def test_tree_and_exports_carry_the_lines(tools, annotate):  # noqa: F811
    """--tree, folded, speedscope, DOT and pprof name each level's calling
    lines (the brute force's); --diff refuses --sites."""
    exe = tools.compile('call_sites.c', *FLAGS)
    run = tools.kgrind(exe, opts=['--k=2'])
    want = brute_force(exe, run.stdout)

    def lines(caller, callee):
        return '|'.join(str(x) for x in sorted(line for (c, line, f) in want if (c, f) == (caller, callee)))
    work_leaf, main_work = lines('work', 'leaf'), lines('main', 'work')
    tree = annotate('--sites', '--tree', '--tree-min=0', run.profile_path).out
    assert f'leaf (from work:{work_leaf})' in tree and f'work (from main:{main_work})' in tree
    folded = annotate('--sites', '--format=folded', run.profile_path).out
    assert f'[truncated k=2];main:{main_work};work:{work_leaf};leaf ' in folded
    ss = json.loads(annotate('--sites', '--format=speedscope', run.profile_path).out)
    frame = next(f for f in ss['shared']['frames'] if f['name'] == f'work:{work_leaf}')
    assert frame['file'].endswith('call_sites.c') and str(frame['line']) == work_leaf.split('|')[0]
    dot = annotate('--sites', '--format=dot', '--top=0', '--threshold=100', run.profile_path).out
    labels = set(re.findall(r'label="(\d+)x\\n[\d,]+\\nline ([\d|]+)"', dot))
    assert (str(sum(n for (c, _l, f), n in want.items() if (c, f) == ('work', 'leaf'))), work_leaf) in labels
    # pprof: a location per call line where the chain has one, all of
    # one function (its -top by function unchanged)
    import pprof_wire
    pb = tools.dir / 'sites.pb.gz'
    pb.write_bytes(subprocess.run([*annotate_cmd(), '--sites', '--format=pprof', str(run.profile_path)],
                                  check=True, capture_output=True).stdout)
    p = pprof_wire.decode(pb)
    work_lines = {loc['line'] for loc in p['locations'].values() if loc['function']['name'] == 'work'}
    assert int(lines('work', 'rec')) in work_lines
    assert [f['name'] for f in p['functions'].values()].count('work') == 1
    # work's calls of leaf come from three lines in every chain: none is its location's
    assert not work_lines & {int(x) for x in work_leaf.split('|')}
    bad = annotate('--sites', '--diff', run.profile_path, run.profile_path)
    assert bad.rc == 2 and bad.out == '' and '--sites' in bad.err and bad.err.count('\n') == 1


def test_inlined_levels_show_their_call_lines(tools, annotate):  # noqa: F811
    """With --inline-frames=yes an inlined level's line is where its
    caller's source calls it (the debug info's call line): the source's
    own lines of those calls."""
    import pathlib
    text = (pathlib.Path(__file__).parent / 'progs' / 'inline_levels.c').read_text().splitlines()

    def line_of(s):
        (n,) = [i + 1 for i, t in enumerate(text) if s in t]
        return n
    exe = tools.compile('inline_levels.c', '-O2', '-no-pie', '-fno-plt')
    run = tools.kgrind(exe, opts=['--k=2', '--inline-frames=yes'])
    d = annotate('--sites', '--format=json', '--top=0', '--threshold=100', run.profile_path).json()
    by_path = {tuple(c['path']): c for c in d['threads'][0]['contexts']}
    sq = by_path[('work', 'outer [inlined]', 'sq [inlined]')]
    assert sq['lines'] == [[line_of('s += outer(i)')], [line_of('return sq(x) + 1')]]
    assert sq['sites'] == [{'caller': 'outer [inlined]', 'line': line_of('return sq(x) + 1'), 'calls': 1000,
                            'inclusive': sq['inclusive']}]
    bump = by_path[('branchy', 'tick [inlined]', 'bump')]
    assert bump['lines'] == [[line_of('if (i % 3 == 0) tick()')], [line_of('static inline void tick')]]
    assert [s['calls'] for s in bump['sites']] == [334]
