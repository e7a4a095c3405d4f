"""Exports of k-contexts at finite k that do not mislead: the same
truncation marker in every format, no constant pprof labels, what pprof's
cum column then says, the note to a user at a terminal; and the call graph
of recursive contexts, joined to the root."""
import collections
import json
import os
import pty
import re
import subprocess

import pytest

import pprof_wire
import speedscope_file
from test_annotate import annotate, annotate_cmd, ok  # noqa: F401
from test_annotate_export import go_pprof, parse_top
from test_annotate_views import parse_dot

MARK = '[truncated k={}]'


@pytest.fixture(scope='module')
def rec_profiles(tmp_path_factory):
    """tests/progs/mutual_rec.c at k = 1, 2, 3 and inf: {k: profile}."""
    from conftest import Toolbox
    tools = Toolbox(tmp_path_factory.mktemp('mutual_rec'))
    exe = tools.compile('mutual_rec.c', '-O1')
    out = {}
    for k in (1, 2, 3, 'inf'):
        run = tools.kgrind(exe, opts=[f'--k={k}'], out=f'rec-k{k}.out')
        assert run.returncode == 0 and run.stdout == '4200\n', run.stderr
        out[k] = run.profile_path
    return out


def json_stacks(d):
    """Counter of (stack, Ir) of the JSON's contexts with Ir, each stack with
    the marker before a path that does not start at __root__ (finite k)."""
    want = collections.Counter()
    for t in d['threads']:
        for c in t['contexts']:
            cut = d['k'] != 'inf' and c['path'][0] != '__root__'
            assert c.get('truncated', False) == cut
            if c['Ir']:
                want[(tuple([MARK.format(d['k'])] * cut + c['path']), c['Ir'])] += 1
    return want


@pytest.mark.parametrize('k', [1, 2, 'inf'])
def test_the_same_marker_in_every_format(annotate, tmp_path, rec_profiles, k):
    prof = rec_profiles[k]
    d = annotate('--format=json', prof).json()
    want = json_stacks(d)
    assert any(s[0] == MARK.format(k) for s, _ in want) == (k != 'inf')
    # folded (summed by stack: here one context a stack)
    folded = collections.Counter()
    for line in ok(annotate('--format=folded', prof)).out.splitlines():
        stack, n = line.rsplit(' ', 1)
        folded[(tuple(stack.split(';')), int(n))] += 1
    assert folded == want
    # --callers: the marker outermost, last
    callers = {tuple(l.rsplit(' ', 1)[0].split(';')) for l in ok(annotate('--format=folded', '--callers', prof)).out.splitlines()}
    assert callers == {tuple(reversed(s)) for s, _ in want}
    # pprof
    path = tmp_path / 'p.pb.gz'
    r = subprocess.run([*annotate_cmd(), '--format=pprof', str(prof)], capture_output=True, check=True)
    path.write_bytes(r.stdout)
    p = pprof_wire.decode(path)
    assert collections.Counter((tuple(reversed(s['stack'])), s['values'][1]) for s in p['samples'] if s['values'][1]) == want
    # one thread, k the same everywhere: no labels (a tag box on every node), both in the comments
    assert all(s['labels'] == {} for s in p['samples'])
    assert 'threads: 1' in p['comments'] and any(f'(k={k})' in c for c in p['comments'])
    # speedscope
    sp = json.loads(ok(annotate('--format=speedscope', prof)).out)
    frames = [f['name'] for f in sp['shared']['frames']]
    assert collections.Counter(s for s in speedscope_file.samples(sp['profiles'][0], frames) if s[1]) == want
    # DOT: the tooltip is the context's path, the marker before it (parse_dot checks it)
    nodes, _edges = parse_dot(ok(annotate('--format=dot', '--top=0', '--threshold=100', prof)).out, k)
    assert len(nodes) == len(d['threads'][0]['contexts'])


def test_pprof_cum_at_finite_k(annotate, tmp_path, rec_profiles):
    """go tool pprof -top -cum: at k = 2 its first row is the marker, whose
    cum is the Ir of the stacks the k-contexts cut; a function's cum is the
    Ir of the contexts that hold it (real_main: only those in which it is
    at most 2 calls above the instructions).  At k = inf real_main's cum is
    its inclusive Ir."""
    d2 = annotate('--format=json', rec_profiles[2]).json()
    path = tmp_path / 'k2.pb.gz'
    path.write_bytes(subprocess.run([*annotate_cmd(), '--format=pprof', str(rec_profiles[2])],
                                    capture_output=True, check=True).stdout)
    text = go_pprof(path, '-top', '-cum', '-nodecount=100000')
    rows, total = parse_top(text)
    first = text.split('\n      flat  flat%')[1].splitlines()[1]
    assert first.endswith(' ' + MARK.format(2))
    cut = sum(c['Ir'] for c in d2['threads'][0]['contexts'] if c.get('truncated'))
    assert rows[MARK.format(2)] == (0, cut) and cut > total // 2
    held = sum(c['Ir'] for c in d2['threads'][0]['contexts'] if 'real_main' in c['path'])
    assert rows['real_main'][1] == held
    dinf = annotate('--format=json', '--k=0', rec_profiles['inf']).json()
    incl = {c['path'][0]: c['inclusive_outermost'] for c in dinf['threads'][0]['contexts']}
    pinf = tmp_path / 'inf.pb.gz'
    pinf.write_bytes(subprocess.run([*annotate_cmd(), '--format=pprof', str(rec_profiles['inf'])],
                                    capture_output=True, check=True).stdout)
    rows_inf, total_inf = parse_top(go_pprof(pinf, '-top', '-cum', '-nodecount=100000'))
    assert rows_inf['real_main'][1] == incl['real_main'] > 0.9 * total_inf
    assert held < incl['real_main']


def stderr_at_terminal(*args):
    """kgrind_annotate's standard error when it is a terminal (a pty)."""
    master, slave = pty.openpty()
    try:
        p = subprocess.run([*annotate_cmd(), *map(str, args)], stdout=subprocess.DEVNULL, stderr=slave, timeout=120)
        os.close(slave)
        slave = None
        err = b''
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
    finally:
        if slave is not None:
            os.close(slave)
        os.close(master)
    assert p.returncode == 0, err
    return err.decode().replace('\r\n', '\n')


def test_note_at_a_terminal(annotate, rec_profiles):
    note = ('kgrind_annotate: note: k=2: each stack is a k-context (at most 3 functions); one that does not reach '
            '__root__ starts with [truncated k=2], so a function\'s total over the stacks (pprof\'s cum, a flame '
            'graph\'s width) counts only the contexts in which it is at most 2 calls above the instructions; '
            'profile with --k=inf for whole stacks\n')
    for fmt in ('folded', 'pprof', 'speedscope'):
        assert stderr_at_terminal(f'--format={fmt}', rec_profiles[2]) == note
        assert stderr_at_terminal(f'--format={fmt}', rec_profiles['inf']) == ''
        r = subprocess.run([*annotate_cmd(), f'--format={fmt}', str(rec_profiles[2])], capture_output=True)
        assert r.returncode == 0 and r.stderr == b''     # scripts read the marker
    assert stderr_at_terminal('--format=folded', '--k=1', rec_profiles['inf']) == note.replace('k=2', 'k=1') \
        .replace('at most 3 functions', 'at most 2 functions').replace('at most 2 calls', 'at most 1 calls')
    for fmt in ('text', 'json', 'dot'):
        assert stderr_at_terminal(f'--format={fmt}', rec_profiles[2]) == ''


@pytest.mark.parametrize('k', [1, 2, 3])
def test_dot_recursive_contexts_reach_the_root(annotate, rec_profiles, k):
    """Every box of the call graph is reached from __root__'s along the
    arrows, recursive contexts (rec's rolled, even's and odd's) too, however
    many boxes are drawn; the calls on an arrow into a context are at most
    its calls."""
    for top in ('5', '12', '0'):
        nodes, edges = parse_dot(ok(annotate('--format=dot', f'--top={top}', '--threshold=100', rec_profiles[k])).out, k)
        kids = collections.defaultdict(set)
        for a, b, _c, _i in edges:
            kids[a].add(b)
        roots = [n for n, (p, _c, _l) in nodes.items() if p == ('__root__',)]
        assert len(roots) == 1
        seen, todo = set(), roots
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += kids[n]
        assert seen == set(nodes), [nodes[n][0] for n in set(nodes) - seen]
        names = {p[-1] for p, _c, _l in nodes.values()}
        if top != '5':
            assert {'rec', 'even', 'odd', 'leaf'} <= names
        into = collections.Counter()
        for _a, b, c, _i in edges:
            if _a != b:
                into[b] += c
        assert all(into[n] <= nodes[n][1] for n in nodes if nodes[n][0] != ('__root__',))
