"""Whole (unlimited) outputs of k=inf profiles, written as they are produced,
against the brute-force model of
tests/test_annotate_model.py: the inf-CCF's node count (a suffix automaton
of the CCT, never the inf-CCF), the whole inf-CCF (walked from the
automaton's chains), the folded stacks (a walk in the order of the stacks,
not a sorted hash of them), and bad input still printing nothing."""
import collections
import random
import subprocess

import pytest

import speedscope_file
from annotate_json import check_flat, nested
import test_annotate_model as M
from test_annotate import annotate, annotate_cmd, ok  # noqa: F401

# Names that are prefixes of their siblings' with characters before and
# after ';' (the folded separator) next: "f", "f const", "f!x", "f::g", and
# a ';' in a name (written %3B).
TRICKY = ('f', 'f const', 'f!x', 'f::g', 'g', 'h;i')


def chain_run(pattern, repeat):
    """__root__ calling a chain of activations whose labels repeat pattern
    (recursion: many equal vertical paths), each with 1 Ir."""
    acts = [M.Act(pattern[i % len(pattern)], 1) for i in range(repeat * len(pattern))]
    for a, b in zip(acts, acts[1:]):
        a.kids = [b]
    return M.Act(M.ROOT, 1, [acts[0]])


def random_runs(rng, labels):
    return {tid: M.random_activations(rng, labels=labels, max_depth=rng.randint(3, 9))
            for tid in range(1, rng.randint(1, 3) + 1)}


def header_counts(out):
    """{thread: (k-SF nodes, inf-CCF nodes)} from the text header."""
    rows = {}
    for line in out.splitlines():
        if line.startswith('Thread ') and 'inf-CCF nodes' in line:
            tid = line.split()[1].rstrip(':')
            ksf = int(line.split('k-SF nodes ')[1].split(',')[0])
            rows[tid] = (ksf, int(line.split('inf-CCF nodes ')[1]))
    return rows


def model_tree(forest):
    """The model's k-CCF as {name: (calls, Ir, incl, {callers})}."""
    return {n: (c, x, i, model_tree(k)) for n, (c, x, i, k) in forest.items()}


def json_tree(flat, kidkey):
    """A JSON tree (flat, annotate_json) as {name: (calls, Ir, inclusive, {children})}."""
    def tree(nodes):
        return {n['name']: (n['calls'], n['Ir'], n['inclusive'], tree(n.get(kidkey, []))) for n in nodes}
    return tree(nested(flat, kidkey))


def test_inf_ccf_count_equals_brute_force(annotate, tmp_path):
    """The header's (and JSON's) inf-CCF node count equals the nodes of the
    model's inf-CCF (Def. 5: the reversed contexts joined), on random
    runs with few labels (much recursion), on chains of repeating labels,
    and equals the nodes of the whole inf-CCF that JSON prints."""
    rng = random.Random(2026112515)
    cases = [random_runs(rng, tuple('abcdefg'[:rng.randint(1, 4)])) for _ in range(10)]
    cases += [{1: chain_run(p, r)} for p, r in ((('a',), 60), (('a', 'b'), 40), (('a', 'b', 'a', 'c'), 15))]
    cases.append({1: chain_run(('a', 'b'), 30), 2: chain_run(('b', 'a', 'a'), 20)})
    for i, runs in enumerate(cases):
        p = M.write_profile(tmp_path / f'c{i}.out', runs, M.INF)
        want = {str(tid): M.count_nodes(M.kccf(M.contexts(root, M.INF))) for tid, root in runs.items()}
        got = header_counts(ok(annotate('--top=1', p)).out)
        assert {t: n for t, (_ksf, n) in got.items()} == want, i
        d = annotate('--format=json', p).json()
        for t in d['threads']:
            assert t['kccf_nodes'] == want[str(t['tid'])]
            check_flat(t['kccf'])
            assert len(t['kccf']) == t['kccf_nodes']


def test_whole_outputs_equal_brute_force_and_limited(annotate, tmp_path):
    """The whole JSON inf-CCF and k-SF, the whole --kccf tree and the
    folded stacks equal the model's; the contexts and inf-CCF of JSON,
    speedscope and folded stacks without a limit equal those limited to all
    contexts (--top: the chains of the contexts selected, every context's
    path: built another way)."""
    rng = random.Random(151125)
    for i in range(6):
        runs = random_runs(rng, TRICKY)
        p = M.write_profile(tmp_path / f'w{i}.out', runs, M.INF)
        d = annotate('--format=json', p).json()
        for t in d['threads']:
            root = runs[t['tid']]
            assert json_tree(t['kccf'], 'callers') == model_tree(M.kccf(M.contexts(root, M.INF)))
            assert json_tree(t['ksf'], 'children') == cct_with_costs(root)
        everything = (f'--top={10 ** 6}', '--threshold=100')    # all contexts, through the limited code
        limited = annotate('--format=json', *everything, p).json()
        for a, b in zip(d['threads'], limited['threads']):
            assert a['contexts'] == b['contexts'] and a['kccf'] == b['kccf']
        # speedscope and folded: streamed walks of the trees, else from all contexts' paths
        for sort in ('--sort=Ir', '--sort=calls'):
            assert ok(annotate('--format=folded', sort, p)).out == ok(annotate('--format=folded', sort, *everything, p)).out
            whole, chosen = (annotate('--format=speedscope', sort, *opts, p).json() for opts in ((), everything))
            assert [speedscope_stacks(w) for w in (whole, chosen)] == [['evented'] * len(runs), ['sampled'] * len(runs)]
            assert speedscope_stacks(whole, 1) == speedscope_stacks(chosen, 1)
        # the folded stacks: every activation's path, threads summed, sorted by bytes
        want = {}
        for root in runs.values():
            for path, a, _inc in M.walk(root):
                if a.excl:
                    key = ';'.join(f.replace(';', '%3B') for f in path)
                    want[key] = want.get(key, 0) + a.excl
        folded = ok(annotate('--format=folded', p)).out
        assert folded == ''.join(f'{k} {want[k]}\n' for k in sorted(want, key=lambda s: s.encode()))
        # the whole --kccf tree, siblings by Ir then name (thesis style)
        txt = ok(annotate('--kccf', p)).out
        for tid, root in runs.items():
            dump = txt.split(f'DUMP of K-CCF (k=inf, thread {tid}, ', 1)[1].split('\n', 2)[2]
            assert dump.split('\n\n', 1)[0].splitlines() == tree_lines(M.kccf(M.contexts(root, M.INF)))


def speedscope_stacks(s, what=0):
    """Per profile of a speedscope file its type (what=0) or its stacks with
    their exclusive Ir (what=1; stacks of no Ir left out)."""
    frames = [f['name'] for f in s['shared']['frames']]
    if what == 0:
        return [p['type'] for p in s['profiles']]
    out = []
    for p in s['profiles']:
        out.append(collections.Counter())
        for stack, w in speedscope_file.samples(p, frames):
            out[-1][stack] += w
        out[-1] = +out[-1]    # stacks of no Ir left out
    return out


def cct_with_costs(root):
    """The CCT of a run with its counters, as json_tree's dicts."""
    tree = {}
    for path, a, inc in M.walk(root):
        level, node = tree, None
        for name in path:
            node = level.setdefault(name, [0, 0, 0, {}])
            level = node[3]
        node[0] += 1
        node[1] += a.excl
        node[2] += inc
    return model_tree(tree)


def tree_lines(forest, depth=0):
    out = []
    for name, (c, x, i, kids) in sorted(forest.items(), key=lambda kv: (-kv[1][1], kv[0].encode())):
        label = name if name.endswith(')') else name + '()'
        out.append(f"{'  ' * depth}| {label},{c}  [Ir {x}, incl {i}]")
        out += tree_lines(kids, depth + 1)
    return out


@pytest.mark.writes_bad_profiles
def test_bad_input_prints_nothing(annotate, tmp_path):
    """Outputs are written as produced only after the whole input was read
    and checked: a profile whose last line is bad prints nothing on stdout,
    one message, a non-zero status, in every whole format."""
    runs = {1: chain_run(('a', 'b'), 200)}
    p = M.write_profile(tmp_path / 'bad.out', runs, M.INF)
    p.write_text(p.read_text().replace('\ntotals: ', '\ntotals: x'))
    for opts in (['--format=json'], ['--kccf', '--ksf'], ['--format=folded'], ['--format=speedscope'],
                 ['--format=pprof'], []):
        r = annotate(*opts, p)
        assert r.rc != 0 and r.out == '' and len(r.err.splitlines()) == 1 and 'totals' in r.err, (opts, r.err)


def test_closed_pipe_ends_quietly(tmp_path):
    """A reader that leaves (closed pipe: `| head`) stops the streamed
    outputs with status 0 and nothing on stderr: the pipe is closed before
    kgrind_annotate has read the profile, so its first write fails."""
    p = M.write_profile(tmp_path / 'pipe.out', {1: chain_run(('a', 'b'), 150)}, M.INF)
    for fmt in ('pprof', 'speedscope', 'json', 'folded'):
        proc = subprocess.Popen([*annotate_cmd(), f'--format={fmt}', str(p)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        proc.stdout.close()
        err = proc.stderr.read()
        assert proc.wait(timeout=120) == 0 and err == b'', (fmt, err)
