#!/usr/bin/env python3
"""Benchmark (not a test): time kgrind_annotate on a profile with N k-SF nodes
(default 10^6, k=2), target under 10 s.

  bench/annotate_bench.py [--nodes=1000000] [--k=2] [--funcs=5000] [--keep=FILE]
                          [--annotate=CMD] [-- extra kgrind_annotate options]

It writes a synthetic but well-formed kgrind profile (docs/output-format.md):
a first tree rooted at __root__ and many other trees of depth <= 2k-1 over
--funcs labels, top regions of the non-first trees with counts only, costs on
canonical nodes, and a callgrind body with one function (k-context) per
canonical node: an fn= line, two cost lines and a calls= line with its cost
line.  Then it runs kgrind_annotate in the default text mode, with --kccf,
and with --format=json, and prints the wall-clock times."""
import argparse
import base64
import os
import pathlib
import random
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / 'tests'))
import ksf_records  # noqa: E402  (the tests' reader and version 3 encoder)


def generate(path, nodes, k, nfuncs, seed=1, version=3):
    rng = random.Random(seed)
    names = ['__root__'] + [f'fn_{i:05d}' for i in range(1, nfuncs)]
    out = open(path, 'w')
    w = out.write
    body = []
    # forest shape: trees of depth <= 2k-1, fan-out decreasing with depth
    recs = []
    ctx_ir = {}
    total = 0
    roots = [0] + rng.sample(range(1, nfuncs), min(nfuncs - 1, max(1, nodes // 200)))
    per_tree = nodes // len(roots)
    for t, root_fn in enumerate(roots):
        if len(recs) >= nodes:
            break
        budget = nodes - len(recs) if t == len(roots) - 1 else per_tree
        first = t == 0
        # BFS growth
        start = len(recs)
        recs.append([None, root_fn, 0, 0, 0, 0])   # parent, fn, calls, excl, incl, depth
        frontier = [start]
        made = 1
        while frontier and made < budget:
            nxt = []
            for p in frontier:
                if recs[p][5] >= 2 * k - 1:
                    continue
                used = set()
                for _ in range(rng.randint(1, 12)):
                    if made >= budget:
                        break
                    f = rng.randrange(1, nfuncs)
                    if f in used:
                        continue
                    used.add(f)
                    recs.append([p, f, 0, 0, 0, recs[p][5] + 1])
                    nxt.append(len(recs) - 1)
                    made += 1
            frontier = nxt
    # Listing 3.2's copies: every slab node (depth >= k) has a copy of its
    # path from depth k in the top region of the tree rooted at its depth-k
    # ancestor's label (created here when the random trees lack it)
    rootof = {r[1]: v for v, r in enumerate(recs) if r[0] is None and v != 0}
    child = {(r[0], r[1]): v for v, r in enumerate(recs) if r[0] is not None}
    twin = {}
    for v in range(len(recs)):    # parents come first
        p, f, d = recs[v][0], recs[v][1], recs[v][5]
        if d < k:
            continue
        if d == k:
            if f not in rootof:
                recs.append([None, f, 0, 0, 0, 0])
                rootof[f] = len(recs) - 1
            twin[v] = rootof[f]
        else:
            key = (twin[p], f)
            if key not in child:
                recs.append([twin[p], f, 0, 0, 0, recs[twin[p]][5] + 1])
                child[key] = len(recs) - 1
            twin[v] = child[key]
    in_first = []
    for v, r in enumerate(recs):
        in_first.append(v == 0 if r[0] is None else in_first[r[0]])
    # counters: calls; costs on canonical nodes (first tree, or depth >= k);
    # a top-region copy counts the activations of its slab nodes, no cost
    for v in range(len(recs) - 1, -1, -1):
        r = recs[v]
        if in_first[v] or r[5] >= k:
            r[2] = max(r[2], rng.randint(1, 50))
            r[3] = r[2] * rng.randint(1, 30)
            r[4] += r[3]
            total += r[3]
            if r[0] is not None and (in_first[v] or recs[r[0]][5] >= k):
                recs[r[0]][4] += r[4]
    for v, t in twin.items():
        recs[t][2] += recs[v][2]
    recs[0][4] = total    # __root__'s activation includes the whole thread
    # reorder into pre-order (children after parents already; BFS ids are fine
    # for "parent precedes", but the format wants pre-order)
    kids = [[] for _ in recs]
    tree_roots = []
    for v, r in enumerate(recs):
        (tree_roots if r[0] is None else kids[r[0]]).append(v)
    order = []
    for tr in tree_roots:
        st = [tr]
        while st:
            v = st.pop()
            order.append(v)
            st.extend(reversed(kids[v]))
    newid = {v: i for i, v in enumerate(order)}
    w('# callgrind format\nversion: 1\ncreator: kgrind-0.1.0\npid: 1\ncmd: ./synthetic\n'
      f'positions: line\nevents: Ir\nsummary: {total}\ndesc: k: {k}\ndesc: mode: func\n\n')
    # body: one context per canonical node (named by its k-context)
    w('part: 1\nthread: 1\nfl=(1) synthetic.c\n')
    paths = {}
    fnid = {}
    lines = []
    for v in order:
        r = recs[v]
        path = [r[1]]
        u = r[0]
        while u is not None and len(path) <= k:
            path.append(recs[u][1])
            u = recs[u][0]
        paths[v] = path
        if not r[3]:
            continue
        name = "'".join(names[f] for f in path)
        if name in fnid:
            lines.append(f'fn=({fnid[name]})\n')
        else:
            fnid[name] = len(fnid) + 1
            lines.append(f'fn=({fnid[name]}) {name}\n')
        ln = 10 * r[1]
        a = r[3] // 2
        lines.append(f'{ln} {a}\n+1 {r[3] - a}\n')
        lines.append(f"cfn=({fnid[name]})\ncalls={r[2]} {ln}\n{ln + 1} {r[4] - r[3]}\n")
    w(''.join(lines))
    w(f'\ntotals: {total}\n')
    w(f'# ksf-version: {version}\n# ksf-options: k={k} mode=func rolling=yes joined=no\n')
    for i in range(0, len(names), 20):
        w('# ksf-fns ' + '\t'.join(names[i:i + 20]) + '\n')
    w(f'# ksf-thread 1 nodes={len(order)} ir={total}\n')
    (write_nodes_v3 if version == 3 else write_nodes_v2)(w, recs, order)
    w('# ksf-end-thread 1\n# ksf-end\n')
    out.close()
    return len(order)


def write_nodes_v2(w, recs, order):
    """Version 2: pre-order nested lists, "label[*calls][=excl[/incl]]", lines of ~240 characters."""
    chunk, line, prev = [], [], None
    used = 0
    for v in order:
        r = recs[v]
        tok = str(r[1]) + (f'*{r[2]}' if r[2] != 1 else '') + (f'={r[3]}' if r[3] or r[4] else '') \
            + (f'/{r[4]}' if r[4] != r[3] else '')
        if prev is not None:
            if r[5] > prev:
                line.append('(')
            else:
                line.append(')' * (prev - r[5]))
                if used > 240:
                    chunk.append('# ksf-nodes ' + ''.join(line) + '\n')
                    line, used = [], 0
                else:
                    line.append(' ')
        line.append(tok)
        used += len(tok) + 2
        prev = r[5]
        if len(chunk) > 10000:
            w(''.join(chunk))
            chunk = []
    chunk.append('# ksf-nodes ' + ''.join(line) + ')' * prev + '\n')
    w(''.join(chunk))


def write_nodes_v3(w, recs, order):
    """Version 3 (what the tool writes): base64 of BER node numbers, whole
    nodes a line of about 2,000 bytes (tests/ksf_records.py encodes them)."""
    forest = ksf_records.Forest(1, None)
    for v in order:
        r = recs[v]
        forest.add(v, r[0], r[1], r[2], r[3], r[4])
    chunk, line = [], bytearray()
    for numbers in ksf_records.node_groups(forest):
        line += ksf_records.ber(numbers)
        if len(line) >= 1500:
            chunk.append('# ksf-nodes ' + base64.b64encode(bytes(line)).decode() + '\n')
            line = bytearray()
    if line:
        chunk.append('# ksf-nodes ' + base64.b64encode(bytes(line)).decode() + '\n')
    w(''.join(chunk))


def annotate_cmd():
    built = ROOT / 'build' / 'perl' / 'kgrind_annotate'
    src = ROOT / 'perl' / 'kgrind_annotate.pl'
    if built.exists() and built.stat().st_mtime >= src.stat().st_mtime:
        return [str(built)]
    return ['perl', str(src)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--nodes', type=int, default=10 ** 6)
    ap.add_argument('--k', type=int, default=2)
    ap.add_argument('--funcs', type=int, default=8000)
    ap.add_argument('--keep')
    ap.add_argument('--ksf-version', type=int, choices=(2, 3), default=3,
                    help='k-SF record version to write (3: what the tool writes)')
    ap.add_argument('extra', nargs='*')
    a = ap.parse_args()
    d = tempfile.mkdtemp()
    path = a.keep or os.path.join(d, 'bench.kgrind.out')
    t0 = time.time()
    n = generate(path, a.nodes, a.k, a.funcs, version=a.ksf_version)
    size = os.path.getsize(path)
    print(f'generated {path}: {n} k-SF nodes, k={a.k}, {size / 1e6:.0f} MB in {time.time() - t0:.1f} s')
    cmd = annotate_cmd()
    for opts in ([], ['--kccf'], ['--format=json'], ['--k=1']):
        opts = opts + a.extra
        t0 = time.time()
        p = subprocess.run([*cmd, *opts, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        dt = time.time() - t0
        if p.returncode != 0:
            print(p.stderr.decode(), file=sys.stderr)
            sys.exit(1)
        print(f'kgrind_annotate {" ".join(opts) or "(text)"}: {dt:.2f} s, {len(p.stdout) / 1e6:.1f} MB output')
    if not a.keep:
        os.unlink(path)
        os.rmdir(d)


if __name__ == '__main__':
    main()
