"""kgrind_annotate agrees with the C++ core node for node.

tests/unit/kccf_dump.cpp rebuilds every thread's k-SF from a profile's
`# ksf-` records with the core's own primitives (kgrind/core/ksf.h), joins
threads and profiles with the core's join and computes inv_k' with the core's
inv_k (kgrind/core/forest_ops.h); it prints the k-SF and the k'-CCF in the
shape of kgrind_annotate --format=json.  The tests feed the same profiles to
both and require equal forests (names, counters, sibling order), node counts
and thread totals, for every k' <= k: the thesis's Listing 4.5 fixture, real
prog1 profiles (with and without --funcs, threads joined by the tool, by
kgrind_annotate or not at all, k = 0, 1, 2, 3, inf), and random runs written
by the brute-force model (several threads, several profiles merged)."""
import json
import pathlib
import random
import subprocess

import pytest

import test_annotate_model as M
from annotate_json import nested
from test_annotate import ROOT, THESIS, annotate, ok  # noqa: F401

DRIVER_SRC = ROOT / 'tests' / 'unit' / 'kccf_dump.cpp'
CORE = ROOT / 'kgrind' / 'core'


@pytest.fixture(scope='session')
def kccf_dump(tmp_path_factory):
    """The driver, built once per session into pytest's tmp dir."""
    exe = tmp_path_factory.mktemp('kccf_dump') / 'kccf_dump'
    cmd = ['g++', '-std=c++17', '-O2', '-Wall', '-Wextra', '-Werror', f'-I{CORE}', str(DRIVER_SRC),
           '-o', str(exe)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr

    def run(*args):
        p = subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stderr
        assert p.stderr == ''
        return json.loads(p.stdout)
    return run


def first_diff(a, b, path='$'):
    """Where two JSON values first differ (for a readable failure)."""
    if type(a) is not type(b):
        return f'{path}: {a!r:.200} != {b!r:.200}'
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f'{path}.{key}: only in {"core" if key in b else "kgrind_annotate"}'
            d = first_diff(a[key], b[key], f'{path}.{key}')
            if d:
                return d
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b)):
            d = first_diff(x, y, f'{path}[{i}]' + (f'({x.get("name")})' if isinstance(x, dict) else ''))
            if d:
                return d
        if len(a) != len(b):
            return f'{path}: {len(a)} != {len(b)} elements'
        return None
    return None if a == b else f'{path}: {a!r} != {b!r}'


def kprime_values(k):
    return [0, 1, 2, 3, 'inf'] if k == 'inf' else list(range(k + 1))


def check_agreement(annotate, kccf_dump, files, k, extra=(), sorts=('Ir',)):
    """kgrind_annotate's k-SF and k'-CCF == the core's, for every k' <= k."""
    checked = 0
    for kk in kprime_values(k):
        for sort in sorts:
            opts = [f'--k={kk}', f'--sort={sort}', *extra]
            a = annotate('--format=json', *opts, *files)
            ok(a)
            a = a.json()
            c = kccf_dump(*opts, *files)
            assert (a['k'], a['recorded_k']) == (c['k'], c['recorded_k'])
            ta = [{key: t[key] for key in ('tid', 'Ir', 'ksf_nodes', 'kccf_nodes', 'kccf', 'ksf')}
                  for t in a['threads']]
            tc = [{key: t[key] for key in ('tid', 'Ir', 'ksf_nodes', 'kccf_nodes', 'kccf', 'ksf')}
                  for t in c['threads']]
            assert ta == tc, (files, opts, first_diff(ta, tc))
            for t_a, t_c in zip(a['threads'], c['threads']):
                # the contexts are the chain ends: their activations are the
                # run's canonical activations, as the core counts them
                assert sum(x['calls'] for x in t_a['contexts']) == t_c['calls']
                # and each k'-CCF root holds all activations of its function
                assert sum(r['calls'] for r in t_c['kccf'] if r['parent'] is None) == t_c['calls']
            checked += 1
    return checked


def kgrind_profile(tools, exe, *opts, out='kgrind.out'):
    run = tools.kgrind(exe, opts=list(opts), out=out)
    assert run.returncode == 0, run.stderr
    if '# ksf-version' not in run.profile_path.read_text():
        pytest.skip('this kgrind does not write k-SF records yet')
    return run.profile_path


def test_driver_reproduces_listing45(kccf_dump):
    d = kccf_dump(THESIS)
    (t,) = d['threads']
    assert (t['tid'], t['ksf_nodes'], t['kccf_nodes'], t['Ir']) == ('all', 20, 25, 176)
    c = {r['name']: r for r in nested(t['kccf'], 'callers')}
    assert c['c']['calls'] == 9 and {x['name']: x['calls'] for x in c['c']['callers']} == \
        {'a': 3, 'd': 4, 'e': 2}


@pytest.mark.parametrize('extra', [(), ('--join-threads',)])
def test_thesis_listing45(annotate, kccf_dump, extra):
    assert check_agreement(annotate, kccf_dump, [THESIS], 2, extra, sorts=('Ir', 'calls', 'inclusive')) == 9


@pytest.mark.parametrize('k', [0, 1, 2, 3, 'inf'])
def test_prog1_funcs_joined(annotate, kccf_dump, tools, k):
    exe = tools.compile('prog1.c', '-O0')
    prof = kgrind_profile(tools, exe, f'--k={k}', '--funcs=a,b,c,d,e,f', '--join-threads=yes')
    check_agreement(annotate, kccf_dump, [prof], k, sorts=('Ir', 'calls'))


@pytest.mark.parametrize('k', [1, 2, 'inf'])
def test_prog1_funcs_per_thread(annotate, kccf_dump, tools, k):
    exe = tools.compile('prog1.c', '-O0')
    prof = kgrind_profile(tools, exe, f'--k={k}', '--funcs=a,b,c,d,e,f')
    for extra in ((), ('--join-threads',)):
        check_agreement(annotate, kccf_dump, [prof], k, extra)


@pytest.mark.parametrize('k', [1, 2, 3, 'inf'])
def test_prog1_whole_program(annotate, kccf_dump, tools, k):
    """Every function, ld.so and libc included (names such as mmap occur
    twice in the label table: two functions of different objects)."""
    exe = tools.compile('prog1.c', '-O0')
    prof = kgrind_profile(tools, exe, f'--k={k}')
    a = annotate('--format=json', prof).json()
    assert len(a['threads']) == 2
    for extra in ((), ('--join-threads',)):
        check_agreement(annotate, kccf_dump, [prof], k, extra)
    # two runs merged: same threads joined across files
    prof2 = kgrind_profile(tools, exe, f'--k={k}', out='kgrind.out.2')
    check_agreement(annotate, kccf_dump, [prof, prof2], k)


@pytest.mark.parametrize('k', [1, 2, 3, M.INF])
def test_random_model_profiles(annotate, kccf_dump, tmp_path, k):
    rng = random.Random(20261122 + (k or 99))
    kk = 'inf' if k is M.INF else k
    for i in range(6):
        runs = {tid: M.random_activations(rng, labels=tuple('abcdefg'[:rng.randint(2, 7)]))
                for tid in range(1, rng.randint(1, 3) + 1)}
        p = M.write_profile(tmp_path / f'r{i}.out', runs, k, pid=1000 + i)
        check_agreement(annotate, kccf_dump, [p], kk, ('--join-threads',) if i % 2 else ())
        if i == 5:
            # merging profiles: the core joins equal thread ids across files
            q = M.write_profile(tmp_path / 'other.out', {1: M.random_activations(rng)}, k, pid=77)
            check_agreement(annotate, kccf_dump, [p, q], kk)


@pytest.mark.parametrize('k', [1, 2, M.INF])
def test_contexts_without_trees_equal_json(annotate, tmp_path, k):
    """The text table and folded stacks come from inv_k without the k-CCF's
    trees (faster); they must equal the JSON contexts (built with the trees):
    node counts, every context's counters, the shown order."""
    rng = random.Random(99 + (k or 50))
    runs = {tid: M.random_activations(rng) for tid in (1, 2)}
    p = M.write_profile(tmp_path / 'r.out', runs, k)
    kks = kprime_values('inf' if k is M.INF else k)
    for kk in kks:
        d = annotate('--format=json', f'--k={kk}', p).json()
        folded = {}
        for t in d['threads']:
            for c in t['contexts']:
                if c['Ir']:
                    cut = d['k'] != 'inf' and c['path'][0] != '__root__'    # a cut stack: marked
                    key = ';'.join([f"[truncated k={d['k']}]"] * cut + c['path'])
                    folded[key] = folded.get(key, 0) + c['Ir']
        f = ok(annotate('--format=folded', f'--k={kk}', p)).out
        assert dict((s.rsplit(' ', 1)[0], int(s.rsplit(' ', 1)[1])) for s in f.splitlines()) == folded
        for sort in ('Ir', 'calls', 'inclusive'):
            txt = ok(annotate('--top=0', '--threshold=100', '--width=0', f'--sort={sort}', f'--k={kk}', p)).out
            d = annotate('--format=json', f'--sort={sort}', f'--k={kk}', p).json()
            for t in d['threads']:
                assert f"k-SF nodes {t['ksf_nodes']}, {kk}-CCF nodes {t['kccf_nodes']}" in txt
                head = f"Hottest {kk}-contexts, thread {t['tid']}:"
                body = txt.split(head, 1)[1].split('\n\n', 1)[0].splitlines()[3:]
                rows = [(int(r.split()[0].replace(',', '')), int(r.split()[3].replace(',', '')),
                         r.split(None, 4)[4]) for r in body]
                assert rows == [(c['Ir'], c['calls'], ' > '.join(c['path'])) for c in t['contexts']]
