"""kgrind_annotate --diff: per k-context changes between two
profiles (or two sets), text, JSON, differential folded stacks, the
--fail-above exit status for CI, on real runs of tests/progs/twice.c whose
`scaled` does twice the work in the second run."""
import collections
import json
import random
import subprocess

import pytest

import test_annotate_model as M
from test_annotate import annotate, annotate_cmd, bad, ok  # noqa: F401
from test_annotate_export import twice_profile  # noqa: F401
from test_annotate_inclusive import brute_outermost, cct_outermost, recursive_run


def run(*args):
    return subprocess.run([*annotate_cmd(), *map(str, args)], capture_output=True, text=True, timeout=300)


def diff_json(*args):
    r = run('--diff', '--format=json', *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def contexts(annotate, *profiles):
    """Path -> [calls, Ir, inclusive of the outermost activations] summed
    over the threads, from the JSON."""
    out = collections.defaultdict(lambda: [0, 0, 0])
    for t in annotate('--format=json', *profiles).json()['threads']:
        for c in t['contexts']:
            x = out[tuple(c['path'])]
            x[0] += c['calls']
            x[1] += c['Ir']
            x[2] += c['inclusive_outermost']
    return dict(out)


@pytest.mark.parametrize('k', [2, 'inf'])
def test_diff_with_itself_is_empty(annotate, twice_profile, k):
    p = twice_profile(k)
    d = diff_json(p, p, '--fail-above=0')
    assert d['contexts'] == [] and d['delta'] == {'Ir': 0, 'calls': 0}
    assert d['counts']['changed'] == d['counts']['new'] == d['counts']['vanished'] == 0
    assert d['counts']['same'] == len(contexts(annotate, p))
    r = run('--diff', p, p, '--fail-above=0')
    assert r.returncode == 0 and r.stderr == ''
    assert 'No k-context changed.' in r.stdout
    assert run('--diff', '--normalize', p, p).stdout.endswith('No k-context changed.\n')


@pytest.mark.parametrize('k', [2, 'inf'])
def test_twice_the_work_in_one_function(annotate, twice_profile, k):
    base, new = twice_profile(k, 1), twice_profile(k, 2)
    b, n = contexts(annotate, base), contexts(annotate, new)
    assert set(b) == set(n)
    (scaled,) = [p for p in b if p[-1] == 'scaled']
    growth = n[scaled][1] - b[scaled][1]
    assert growth > 0
    d = diff_json(base, new)
    # exactly scaled's context changed its exclusive Ir, by what the two
    # profiles' own JSON say; no calls changed, nothing came or went
    (first, *rest) = d['contexts']
    assert tuple(first['path']) == scaled and first['delta'] == {'calls': 0, 'Ir': growth, 'inclusive': growth}
    assert first['base'] == dict(zip(('calls', 'Ir', 'inclusive'), b[scaled]))
    assert first['new'] == dict(zip(('calls', 'Ir', 'inclusive'), n[scaled]))
    assert all(c['delta']['Ir'] == 0 and c['delta']['calls'] == 0 for c in rest)
    # the others changed their inclusive Ir only, by the same amount: the
    # contexts of scaled's callers
    assert all(c['delta']['inclusive'] == growth for c in rest)
    assert {tuple(c['path']) for c in rest} == {p for p in b if n[p][2] != b[p][2]} - {scaled}
    assert 'twice' in {c['path'][-1] for c in rest}
    assert d['counts']['new'] == d['counts']['vanished'] == 0
    assert d['delta']['Ir'] == growth == d['new']['total']['Ir'] - d['base']['total']['Ir']
    # text: the same context first
    r = run('--diff', base, new)
    assert r.returncode == 0, r.stderr
    table = r.stdout.split('status   context\n')[1].splitlines()
    assert table[0].split()[0] == f'+{growth:,}' and table[0].endswith(' > '.join(scaled))


def test_fail_above(twice_profile):
    base, new = twice_profile(2, 1), twice_profile(2, 2)
    d = diff_json(base, new)
    growth = 100 * d['delta']['Ir'] / d['base']['total']['Ir']
    r = run('--diff', base, new, f'--fail-above={growth * 0.9:.3f}')
    assert r.returncode == 1, r.stderr
    assert r.stdout.startswith('---') and 'scaled' in r.stdout
    (line,) = r.stderr.splitlines()
    assert line.startswith('kgrind_annotate: above --fail-above=') and 'total Ir' in line and 'scaled' in line
    assert run('--diff', base, new, f'--fail-above={growth * 1.1:.3f}').returncode == 0
    # a shrinking program does not fail
    assert run('--diff', new, base, '--fail-above=0').returncode == 0


def copy(path, name):
    """The same profile under another name (a file given twice is refused)."""
    other = path.with_name(name)
    other.write_bytes(path.read_bytes())
    return other


def test_several_profiles_a_side(annotate, twice_profile):
    one, two = twice_profile(2, 1), twice_profile(2, 2)
    one_again = copy(one, 'again.out')
    single = diff_json(one, two)
    double = diff_json(one, one_again, '--vs', one, two)
    assert [(c['path'], c['delta']) for c in double['contexts']] == \
           [(c['path'], c['delta']) for c in single['contexts']]
    assert double['base']['files'] == [str(one), str(one_again)]
    # twice the same run against it once: every context doubled, and
    # normalised to the base's totals nothing changed
    doubled = diff_json(one, '--vs', one, one_again)
    want = contexts(annotate, one)
    assert {tuple(c['path']): c['delta']['Ir'] for c in doubled['contexts'] if c['delta']['Ir']} == \
           {p: v[1] for p, v in want.items() if v[1]}
    assert diff_json('--normalize', one, '--vs', one, one_again)['contexts'] == []


def test_differential_folded(annotate, twice_profile):
    base, new = twice_profile('inf', 1), twice_profile('inf', 2)
    r = run('--diff', '--format=folded', base, new)
    assert r.returncode == 0, r.stderr
    rows = {}
    for line in r.stdout.splitlines():
        stack, b, n = line.rsplit(' ', 2)
        rows[stack] = (int(b), int(n))
    b, n = contexts(annotate, base), contexts(annotate, new)
    assert rows == {';'.join(p): (b[p][1], n[p][1]) for p in b if b[p][1] or n[p][1]}
    assert [s for s, (x, y) in rows.items() if x != y] == [next(';'.join(p) for p in b if p[-1] == 'scaled')]


def test_diff_bad_usage(annotate, twice_profile, tmp_path):
    p = twice_profile(2)
    bad(annotate('--diff', p), '--diff needs two profiles')
    bad(annotate('--diff', p, p, p), '--vs')
    bad(annotate('--vs', p, p), '--vs separates')
    bad(annotate('--diff', p, '--vs', p, '--vs', p), '--vs given twice')
    bad(annotate('--diff', p, p, '--fail-above=x'), "bad --fail-above value 'x'")
    bad(annotate('--fail-above=3', p), 'only with --diff')
    bad(annotate('--diff', '--format=pprof', p, p), 'not a diff format')
    bad(annotate('--diff', p, tmp_path / 'missing.out'), 'missing.out')


# ---------------------------------------------------------------------------
# Inclusive Ir counts recursion once, as in the text report.

def sides(d):
    """Path -> (base inclusive, new inclusive) of the diff's changed rows."""
    return {tuple(c['path']): (c['base']['inclusive'], c['new']['inclusive']) for c in d['contexts']}


def summed(per_thread):
    out = collections.Counter()
    for ctx in per_thread:
        out.update(ctx)
    return out


@pytest.mark.parametrize('k', [2, M.INF])
def test_diff_inclusive_against_brute_force(tmp_path, k):
    """Random recursive runs (most activations nested in one of the same
    context): the diff's inclusive Ir of each side is the brute force's
    outermost inclusive Ir summed over threads, exact at k = inf, an upper
    bound at most the side's total at finite k (as the report's)."""
    rng = random.Random(91 + (k or 0))
    base_runs = {1: recursive_run(rng)}
    new_runs = {1: recursive_run(rng), 2: recursive_run(rng)}
    base = M.write_profile(tmp_path / 'base.out', base_runs, k)
    new = M.write_profile(tmp_path / 'new.out', new_runs, k)
    plain_above = False
    for kk in (['inf', 0, 1, 2] if k is M.INF else [0, 1, 2]):
        d = diff_json(f'--k={kk}', base, new)
        depth = M.INF if kk == 'inf' else kk
        want_b = summed(brute_outermost(r, depth) for r in base_runs.values())
        want_n = summed(brute_outermost(r, depth) for r in new_runs.values())
        got = sides(d)
        assert got and {c['status'] for c in d['contexts']} <= {'changed', 'new', 'vanished'}
        for ctx, (b, n) in got.items():
            if k is M.INF:
                assert (b, n) == (want_b[ctx], want_n[ctx]), (kk, ctx)
            else:
                assert want_b[ctx] <= b <= d['base']['total']['Ir'], (kk, ctx)
                assert want_n[ctx] <= n <= d['new']['total']['Ir'], (kk, ctx)
        plain = contexts_plain(new, kk)
        plain_above = plain_above or any(v > d['new']['total']['Ir'] for v in plain.values())
    assert plain_above or k is not M.INF    # recursion the plain counter counts twice


def contexts_plain(profile, kk):
    out = collections.Counter()
    r = run('--format=json', f'--k={kk}', profile)
    for t in json.loads(r.stdout)['threads']:
        for c in t['contexts']:
            out[tuple(c['path'])] += c['inclusive']
    return out


def test_diff_inclusive_recursive_program(tools):
    """tests/progs/deeprec.c, rec and the mutual recursion of even and odd
    20 and 31 levels deep, at k = inf: each side's inclusive Ir at --k=0, 1,
    2 and inf is the brute force over the calling context tree's nodes (a
    node counts unless a proper prefix of its path ends with the same
    context), never above the side's total."""
    exe = tools.compile('deeprec.c')
    prof = {}
    for side, depth in (('base', 20), ('new', 31)):
        r = tools.kgrind(exe, depth, opts=['--k=inf'], out=f'{side}.out')
        assert r.returncode == 0, r.stderr
        prof[side] = r.profile_path
    whole = {s: json.loads(run('--format=json', p).stdout) for s, p in prof.items()}
    for kk in (0, 1, 2, 'inf'):
        want = {s: cct_outermost(whole[s], 10 ** 6 if kk == 'inf' else kk) for s in whole}
        got = sides(diff_json(f'--k={kk}', prof['base'], prof['new']))
        assert {'rec', 'even', 'odd'} <= {p[-1] for p in got}
        for ctx, (b, n) in got.items():
            assert (b, n) == (want['base'].get(ctx, 0), want['new'].get(ctx, 0)), (kk, ctx)
            assert b <= whole['base']['total']['Ir'] and n <= whole['new']['total']['Ir']


# ---------------------------------------------------------------------------
# Profiles of different programs.

def test_different_programs_refused_unless_forced(annotate, tmp_path):
    """Two programs' profiles are neither joined nor compared: one line
    naming both commands, exit status 2; --force does it anyway.  The same
    program run with other arguments or by another path is the same."""
    rng = random.Random(8)
    prof = {name: M.write_profile(tmp_path / f'{name}.out', {1: M.random_activations(rng)}, 2, cmd=cmd)
            for name, cmd in (('a', './app --fast in.txt'), ('a2', '/opt/build/app other.txt'),
                              ('b', '/usr/bin/other-tool -x'))}
    for args, first, verb in (((prof['a'], prof['b']), './app', 'joined'),
                              (('--format=json', prof['a'], prof['b']), './app', 'joined'),
                              (('--diff', prof['a'], prof['b']), './app', 'compared'),
                              (('--diff', prof['a'], '--vs', prof['a2'], prof['b']), '/opt/build/app', 'joined')):
        bad(annotate(*args), f'is a profile of {first},', 'of /usr/bin/other-tool:',
            f'profiles of different programs are not {verb} (--force does it anyway)')
    forced = annotate('--force', '--format=json', prof['a'], prof['b']).json()
    assert forced['total']['Ir'] == sum(annotate('--format=json', prof[n]).json()['total']['Ir'] for n in 'ab')
    assert forced['cmds'] == ['./app --fast in.txt', '/usr/bin/other-tool -x']
    assert 'Command:              ./app --fast in.txt | /usr/bin/other-tool -x' in \
        ok(annotate('--force', prof['a'], prof['b'])).out
    r = run('--force', '--diff', prof['a'], prof['b'])
    assert r.returncode == 0 and r.stderr == '' and 'Diff of k-contexts' in r.stdout
    # the same executable by file name, other arguments
    same = ok(annotate('--format=json', prof['a'], prof['a2']))
    assert same.err == '' and same.json()['files'] == [str(prof['a']), str(prof['a2'])]
    assert run('--diff', prof['a'], prof['a2']).returncode == 0
