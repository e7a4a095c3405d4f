"""Basic-block modes (--mode=intra|inter, --roll-loops): the thesis's prog4,
prog5 and prog6 (IHPP Listings 4.13-4.24), option checks, and an oracle: the
raw block sequence written by --dump-blocks, rebuilt into k-SFs by a brute
force reference (Def. 7 over the per-activation block paths; path-list loop
rolling) and compared with the forests the tool built online."""
import collections
import random
import re
import subprocess

import pytest

import callgrind_format
import ksf_records
from conftest import PROGS, assert_plt_moves

# ---------------------------------------------------------------------------
# Reading the block records (docs/output-format.md, "Block modes")


class BlockForest:
    def __init__(self, tid, fn):
        self.tid = tid
        self.fn = fn                 # function name (intra) or None (inter)
        self.nodes = {}              # id -> (parent, label, calls, excl)
        self.kids = collections.defaultdict(list)
        self.roots = []
        self.ir = None

    def path(self, nid):
        """Labels from the node's tree root down to the node."""
        out = []
        while nid is not None:
            out.append(self.nodes[nid][1])
            nid = self.nodes[nid][0]
        return tuple(reversed(out))

    def trees(self):
        """{tree key: {relative label path: calls}}; the first tree's key is
        'first', an R tree's is its root label."""
        out = {}
        for i, root in enumerate(self.roots):
            key = 'first' if i == 0 else self.nodes[root][1]
            assert key not in out
            out[key] = {}
        for nid in self.nodes:
            r = nid
            while self.nodes[r][0] is not None:
                r = self.nodes[r][0]
            key = 'first' if r == self.roots[0] else self.nodes[r][1]
            out[key][self.path(nid)] = self.nodes[nid][2]
        return out

    def canonical_calls(self, k):
        """calls per label over canonical nodes (not in a cleared top region)."""
        out = collections.Counter()
        for i, root in enumerate(self.roots):
            stack = [(root, 0)]
            while stack:
                nid, level = stack.pop()
                if i == 0 or k is None or level >= k:
                    out[self.nodes[nid][1]] += self.nodes[nid][2]
                stack.extend((c, level + 1) for c in self.kids[nid])
        return out

    def dump(self, names):
        lines = []

        def walk(nid, depth):
            lines.append('  ' * depth + f'| {names[self.nodes[nid][1]]},{self.nodes[nid][2]}')
            for c in self.kids[nid]:
                walk(c, depth + 1)
        for r in self.roots:
            walk(r, 0)
        return '\n'.join(lines)


class BlockProfile:
    """A block-mode profile, read by the shared record reader."""

    def __init__(self, path):
        prof = ksf_records.parse(path)
        self.options, self.fns, self.files, self.blocks = prof.options, prof.names, prof.files, prof.blocks
        self.forests = []
        for f in prof.forests:
            cur = BlockForest(f.tid, f.fn)
            cur.ir = f.ir
            cur.nodes = {nid: node[:4] for nid, node in f.nodes.items()}   # (parent, label, calls, excl)
            cur.kids = f.children
            cur.roots = f.roots
            assert cur.ir == sum(n[3] for n in cur.nodes.values())   # costs only on canonical nodes
            self.forests.append(cur)

    @property
    def k(self):
        return None if self.options['k'] == 'inf' else int(self.options['k'])

    def names(self):
        return {label: b['name'] for label, b in self.blocks.items()}

    def forest(self, fn=None, tid=None):
        found = [f for f in self.forests if f.fn == fn and (tid is None or f.tid == str(tid))]
        assert len(found) == 1, (fn, tid, [(f.fn, f.tid) for f in self.forests])
        return found[0]

    def tree(self, fn=None, tid=None):
        """The forest as nested (block name without file, calls, kids)."""
        f = self.forest(fn, tid)

        def build(nid):
            name = re.sub(r' at .*}', '}', self.blocks[f.nodes[nid][1]]['name'])
            return (name, f.nodes[nid][2], [build(c) for c in f.kids[nid]])
        return [build(r) for r in f.roots]


def chain(tree):
    """A one-path tree as [(name, calls), ...]."""
    out = []
    node = tree
    while True:
        out.append((node[0], node[1]))
        if not node[2]:
            return out
        assert len(node[2]) == 1, node
        node = node[2][0]


def run(tools, exe, opts, out='kgrind.out'):
    r = tools.kgrind(exe, opts=opts, out=out)
    assert r.returncode == 0, r.stderr
    return BlockProfile(r.profile_path)


# ---------------------------------------------------------------------------
# Options


@pytest.mark.parametrize('opts,message', [
    (['--mode=block'], '--mode takes func, intra or inter'),
    (['--mode=intra', '--k=inf'], '--k=inf in a basic-block mode needs --roll-loops=yes'),
    (['--mode=inter', '--k=inf'], '--k=inf in a basic-block mode needs --roll-loops=yes'),
    (['--roll-loops=yes'], '--roll-loops needs a basic-block mode'),
    (['--mode=intra', '--roll-loops=yes', '--k=3'], '--roll-loops=yes implies --k=inf'),
    (['--mode=intra', '--roll-loops=perhaps'], "Invalid boolean value 'perhaps'"),
])
def test_bad_block_options(tools, opts, message):
    tools.assert_refused(opts, message)


def test_roll_loops_accepts_explicit_inf(tools):
    exe = tools.compile('prog4.c', '-O0')
    prof = run(tools, exe, ['--mode=inter', '--roll-loops=yes', '--k=inf'])
    assert prof.options['k'] == 'inf' and prof.options['roll-loops'] == 'yes'


# ---------------------------------------------------------------------------
# The thesis programs

def test_prog4_intra_k100(tools):
    exe = tools.compile('prog4.c', '-O0')
    prof = run(tools, exe, ['--mode=intra', '--k=100', '--funcs=foo,p'])
    assert prof.options['mode'] == 'intra' and prof.options['k'] == '100'
    assert {f.fn for f in prof.forests} == {'foo', 'p'}
    foo = prof.tree('foo')
    assert len(foo) == 1
    root = foo[0]
    assert root[0] == '{foo+0}' and root[1] == 2          # two activations (recursion)
    then, other = sorted(root[2], key=lambda n: -len(str(n)))
    # The then-branch: p(0), the loop unrolled (3 iterations: body block, increment
    # block), the recursive call, the end of foo.
    path = chain(then)
    body = [n for n, c in path]
    loop_body = collections.Counter(body)
    assert all(c == 1 for _, c in path)
    assert max(loop_body.values()) == 3                    # body/increment blocks 3 times each on the path
    assert sum(1 for v in loop_body.values() if v == 3) == 2
    # The else-branch runs in the second activation: p(2), then the end of foo.
    assert len(chain(other)) == 2 and chain(other)[-1][0] == path[-1][0]
    # The root is foo's first block (line 7, offset 0).
    f = prof.forest('foo')
    first = prof.blocks[f.nodes[f.roots[0]][1]]
    assert first['line'] == 7 and first['offset'] == 0 and first['fn'] == 'foo'
    p = prof.tree('p')
    assert chain(p[0])[0][1] == 5                          # p runs 5 times


def test_prog4_intra_rolled(tools):
    exe = tools.compile('prog4.c', '-O0')
    prof = run(tools, exe, ['--mode=intra', '--roll-loops=yes'])
    assert prof.options['k'] == 'inf'
    # Default --funcs: the main executable's functions, not the C library's.
    fns = {f.fn for f in prof.forests}
    assert {'main', 'foo', 'p'} <= fns
    assert not fns & {'printf', 'puts', '__printf', '_IO_printf', 'vfprintf', '_dl_start'}
    foo = prof.tree('foo')
    assert len(foo) == 1 and foo[0][1] == 2
    then, other = sorted(foo[0][2], key=lambda n: -len(str(n)))
    path = chain(then)
    # The loop (lines 11-12) is rolled: its body and increment blocks are
    # single nodes counted 3 times, and no block repeats on the path.
    assert len({n for n, _ in path}) == len(path)
    assert sorted(c for _, c in path).count(3) == 2
    assert [c for _, c in path].count(1) == len(path) - 2
    line_of = {re.sub(r' at .*}', '}', b['name']): b['line'] for b in prof.blocks.values()}
    assert {line_of[n] for n, c in path if c == 3} == {11, 12}
    assert chain(other)[0][1] == 1


def test_prog5_threads(tools):
    exe = tools.compile('prog5.c', '-O0')
    prof = run(tools, exe, ['--mode=intra', '--roll-loops=yes', '--funcs=foo'])
    assert len(prof.forests) == 2
    by_line = {}
    for tid, iterations in ((1, 3), (2, 9)):
        t = prof.tree('foo', tid)
        assert len(t) == 1 and t[0][1] == 1
        f = prof.forest('foo', tid)
        counts = collections.Counter()
        for nid, (_p, label, calls, _e) in f.nodes.items():
            counts[prof.blocks[label]['line']] += calls
        # printf (line 15) and i++ (line 16) once per iteration; the test of
        # the branch taken (line 9 or 12) once more than that.
        assert counts[15] == iterations and counts[16] == iterations
        assert counts[9 if tid == 1 else 12] == iterations + 1
        by_line[tid] = counts
    joined = run(tools, exe, ['--mode=intra', '--roll-loops=yes', '--funcs=foo', '--join-threads=yes'],
                 out='joined.out')
    assert len(joined.forests) == 1 and joined.forests[0].tid == 'all'
    t = joined.tree('foo')
    assert t[0][1] == 2
    counts = collections.Counter()
    for _nid, (_p, label, calls, _e) in joined.forest('foo').nodes.items():
        counts[joined.blocks[label]['line']] += calls
    assert counts == by_line[1] + by_line[2]


def test_prog6_inter(tools):
    exe = tools.compile('prog6.c', '-O0')
    prof = run(tools, exe, ['--mode=inter', '--k=100', '--funcs=foo,bar,f3'])
    assert prof.options['mode'] == 'inter'
    t = prof.tree()
    assert len(t) == 1
    path = chain(t[0])
    fns = [re.match(r'\{(\w+)\+', n).group(1) if n != '__root__' else n for n, _ in path]
    # Listing 4.23: one chain through foo, bar, f3, bar, f3, back to foo.
    assert fns == ['__root__', 'foo', 'bar', 'bar', 'foo', 'f3', 'foo', 'bar', 'bar', 'f3', 'bar', 'foo']
    assert all(c == 1 for _, c in path)


def test_prog4_inter_recursion_is_a_loop(tools):
    exe = tools.compile('prog4.c', '-O0')
    prof = run(tools, exe, ['--mode=inter', '--k=100', '--funcs=foo'])
    path = chain(prof.tree()[0])
    names = [n for n, _ in path]
    # Listing 4.24: foo's first block follows the call block as a successor.
    assert names[1] == '{foo+0}' and names.count('{foo+0}') == 2
    rolled = run(tools, exe, ['--mode=inter', '--roll-loops=yes', '--funcs=foo'], out='rolled.out')
    t = rolled.tree()[0]
    assert t[0] == '__root__'
    foo0 = t[2][0]
    assert foo0[0] == '{foo+0}' and foo0[1] == 2           # the recursion rolled onto foo's entry


# ---------------------------------------------------------------------------
# The oracle


def generate_program(path, seed, spin=0):
    """A program of loops with early exits, recursion and longjmp in two
    threads; each also runs a loop without calls `spin` times."""
    rng = random.Random(seed)
    n1, n2, stop = rng.randint(2, 4), rng.randint(2, 5), rng.randint(1, 4)
    depth = rng.randint(2, 5)
    src = f'''#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
volatile long sink;
__attribute__((noinline)) int leaf(int x) {{
   if (x % 3 == 0) return 1;          /* early exit */
   sink += x;
   return 0;
}}
__attribute__((noinline)) int nested(int n) {{
   for (int i = 0; i < n; i++) {{
      for (int j = 0; j < {n2}; j++) {{
         if (leaf(i * j + {seed})) continue;
         if (i + j > {n1 + n2 - 2}) break;
         sink++;
      }}
      if (i == {n1 + 1}) return i;       /* early return */
   }}
   return 0;
}}
__attribute__((noinline)) int rec(int n) {{
   if (n == 0) return 0;
   if (n % 2) sink++;
   return rec(n - 1) + 1;
}}
__attribute__((noinline)) void jumper(jmp_buf* jb, int n) {{
   for (int i = 0; i < n; i++) {{
      if (i == {stop}) longjmp(*jb, 1);
      sink += leaf(i);
   }}
}}
__attribute__((noinline)) void spin(int n) {{
   for (int i = 0; i < n; i++)
      if (i % 3) sink++;
}}
__attribute__((noinline)) void work(int variant) {{
   jmp_buf jb;
   spin({spin});
   nested({n1} + variant);
   rec({depth} + variant);
   if (setjmp(jb) == 0) jumper(&jb, {stop} + 2);
   else sink += 7;
   nested(1);
}}
void* thread_main(void* arg) {{ work(1); return 0; }}
int main(void) {{
   pthread_t th;
   work(0);
   pthread_create(&th, 0, thread_main, 0);
   pthread_join(th, 0);
   printf("%ld\\n", sink);
   return 0;
}}
'''
    path.write_text(src)


FUNCS = '--funcs=leaf,nested,rec,jumper,spin,work,thread_main,main'


def read_dump(path):
    """[(thread, activation, function id, block label)] in run order."""
    out = []
    for line in open(path):
        if line.startswith('#'):
            continue
        tid, act, fn, label = line.split()[:4]
        out.append((int(tid), int(act), int(fn), int(label)))
    return out


def activations(dump, mode, joined):
    """{forest key: [block path of each activation]} as the tool forms them."""
    seqs = collections.OrderedDict()
    for tid, act, fn, label in dump:
        if mode == 'inter':
            fkey = 'all' if joined else tid
            seqs.setdefault(fkey, collections.OrderedDict()).setdefault(tid, [0]).append(label)
        else:
            fkey = (fn, 'all' if joined else tid)
            seqs.setdefault(fkey, collections.OrderedDict()).setdefault((tid, act), []).append(label)
    out = {}
    for fkey, acts in seqs.items():
        paths = list(acts.values())
        root = paths[0][0]
        # An activation that starts elsewhere hangs under the forest's root.
        out[fkey] = [p if p[0] == root else [root] + p for p in paths]
    return out


def cct(paths, roll):
    """{label path: count} of the calling-context tree of the blocks."""
    counts = collections.Counter()
    for seq in paths:
        path = []
        for b in seq:
            if roll and b in path:
                path = path[:path.index(b) + 1]
            else:
                path.append(b)
            counts[tuple(path)] += 1
    return counts


def ksf_of_cct(counts, k):
    """Def. 7: subtrees of the CCT rooted at levels multiple of k, depth at
    most 2k-1, joined by root label (the level-0 one is the first tree)."""
    trees = collections.defaultdict(collections.Counter)
    for path, c in counts.items():
        level = len(path) - 1
        if k is None:
            trees['first'][path] += c
            continue
        base = (level // k) * k
        for r in (base, base - k):
            if r < 0 or level - r > 2 * k - 1:
                continue
            key = 'first' if r == 0 else path[r]
            trees[key][path[r:]] += c
    return {key: dict(t) for key, t in trees.items()}


def build_oracle_program(d, spin):
    src = d / 'gen.c'
    generate_program(src, 7, spin)
    exe = d / 'gen'
    subprocess.run(['gcc', '-g', '-O0', '-pthread', str(src), '-o', str(exe)], check=True)
    return exe


@pytest.fixture(scope='module')
def oracle_program(tmp_path_factory):
    return build_oracle_program(tmp_path_factory.mktemp('oracle'), 1)


# Entries of the block trace (kTraceBytes / 8 in kgrind/kg_blocks.h): runs
# recorded inline are stepped through the forests in batches of this many.
TRACE_ENTRIES = 8192


@pytest.fixture(scope='module')
def long_oracle_program(tmp_path_factory):
    """The oracle program with a loop that fills the trace several times
    in each thread."""
    return build_oracle_program(tmp_path_factory.mktemp('long-oracle'), 16000)


# Joined threads: k = 2 and rolled loops suffice.
ORACLE_CASES = [(mode, k, joined) for mode in ('intra', 'inter') for k in ('1', '2', '5', 'roll')
                for joined in ('no', 'yes') if joined == 'no' or k in ('2', 'roll')]


def by_address(prof, forests):
    """forests_by_key's trees with block labels replaced by addresses and
    function ids by names."""
    addr = {label: b['addr'] for label, b in prof.blocks.items()}
    relabel = lambda path: tuple(addr[l] for l in path)
    name = lambda key: (prof.fns[key[0]], key[1]) if isinstance(key, tuple) else key
    return {name(key): {(t if t == 'first' else addr[t]): {relabel(p): c for p, c in paths.items()}
                  for t, paths in trees.items()}
            for key, trees in forests.items()}


def forests_by_key(prof, mode):
    """{thread (inter) or (function id, thread) (intra): trees}."""
    got = {}
    for f in prof.forests:
        tid = f.tid if f.tid == 'all' else int(f.tid)
        if mode == 'inter':
            key = tid
        else:
            fid = [i for i, n in prof.fns.items() if n == f.fn]
            assert len(fid) == 1
            key = (fid[0], tid)
        got[key] = f.trees()
    return got


def oracle_opts(tools, mode, k, joined, funcs=FUNCS):
    opts = [f'--mode={mode}', funcs, f'--dump-blocks={tools.dir}/dump', f'--join-threads={joined}']
    return opts + ['--roll-loops=yes' if k == 'roll' else f'--k={k}']


def assert_trace_run_equal(tools, exe, opts, mode, prof):
    """--dump-blocks sends every block through the helper; the same run
    without it records blocks in the block trace (instrument/block_modes_ir.cpp,
    add_block_step) and must build the same forests and block counts.
    Labels follow the translation order, which thread scheduling may change
    between the runs: compare by block address."""
    fast = run(tools, exe, [o for o in opts if not o.startswith('--dump-blocks')], out='fast.out')
    assert by_address(fast, forests_by_key(fast, mode)) == by_address(prof, forests_by_key(prof, mode))
    assert ({b['addr']: b['count'] for b in fast.blocks.values()} ==
            {b['addr']: b['count'] for b in prof.blocks.values()})


def assert_block_counts(prof, dump, kk, mode):
    """The table's block counts, the dump's runs and the forests' canonical
    nodes agree; in intra mode also per function."""
    runs = collections.Counter(label for *_, label in dump)
    canonical = collections.Counter()
    for f in prof.forests:
        canonical.update(f.canonical_calls(kk))
    for label, b in prof.blocks.items():
        if label == 0:
            continue
        assert b['count'] == runs[label] == canonical[label], b['name']
    if mode == 'intra':
        # Per function: block runs summed over the function's forests (all
        # threads) equal the function's block counts.
        per_fn = collections.Counter()
        for f in prof.forests:
            per_fn[f.fn] += sum(f.canonical_calls(kk).values())
        table = collections.Counter()
        for label, b in prof.blocks.items():
            if label:
                table[b['fn']] += b['count']
        assert +per_fn == +table


def assert_forests_equal_brute_force(prof, acts, mode, k):
    """The forests the tool built equal the brute force's over the dump's
    per-activation block paths."""
    kk = None if k == 'roll' else int(k)
    got = forests_by_key(prof, mode)
    want = {key: ksf_of_cct(cct(paths, k == 'roll'), kk) for key, paths in acts.items()}
    assert got.keys() == want.keys()
    for key in want:
        assert got[key] == want[key], key


@pytest.mark.parametrize('mode,k,joined', ORACLE_CASES)
def test_online_forests_equal_brute_force(tools, oracle_program, mode, k, joined):
    opts = oracle_opts(tools, mode, k, joined)
    prof = run(tools, oracle_program, opts)
    dump = read_dump(tools.dir / 'dump')
    assert len(dump) > 100
    acts = activations(dump, mode, joined == 'yes')
    if mode == 'intra':
        # Recursion and longjmp: rec has several activations, jumper leaves by longjmp.
        assert any(len(v) >= 4 for key, v in acts.items() if prof.fns[key[0]] == 'rec')
    assert_forests_equal_brute_force(prof, acts, mode, k)
    assert_block_counts(prof, dump, None if k == 'roll' else int(k), mode)
    assert_trace_run_equal(tools, oracle_program, opts, mode, prof)


@pytest.mark.parametrize('mode,k', [('intra', '2'), ('inter', '2'), ('intra', 'roll'), ('inter', 'roll')])
def test_signal_handler_blocks_equal_brute_force(tools, mode, k):
    """A traced loop interrupted 40 times by a handler that runs traced code
    (tests/progs/blocksig.c): in intra mode the handler's functions are
    activations of their own and the loop's activation continues after
    them; in inter mode the handler's blocks are part of the sequence."""
    exe = tools.compile('blocksig.c', '-O1')
    opts = oracle_opts(tools, mode, k, 'no', funcs='--funcs=main,loop,on_signal,handler_work')
    prof = run(tools, exe, opts)
    dump = read_dump(tools.dir / 'dump')
    acts = activations(dump, mode, False)
    if mode == 'intra':
        handler_acts = [v for key, v in acts.items() if prof.fns[key[0]] == 'on_signal']
        assert len(handler_acts) == 1 and len(handler_acts[0]) == 40
    assert_forests_equal_brute_force(prof, acts, mode, k)
    assert_block_counts(prof, dump, None if k == 'roll' else int(k), mode)
    assert_trace_run_equal(tools, exe, opts, mode, prof)


@pytest.mark.parametrize('mode,k', [('intra', '2'), ('inter', '2'), ('intra', 'roll'), ('inter', 'roll')])
def test_full_block_traces_equal_helper_steps(tools, long_oracle_program, mode, k):
    """Each thread fills the block trace several times in one activation
    (the loop in spin): the batches stepped in C build what the helper
    builds block by block, and with rolled loops what the brute force does
    (unrolled, its paths are as long as the loop: quadratic)."""
    opts = oracle_opts(tools, mode, k, 'no')
    prof = run(tools, long_oracle_program, opts)
    dump = read_dump(tools.dir / 'dump')
    runs = collections.Counter(tid for tid, *_ in dump)
    assert len(runs) == 2 and min(runs.values()) > 3 * TRACE_ENTRIES
    if k == 'roll':
        assert_forests_equal_brute_force(prof, activations(dump, mode, False), mode, k)
    assert_trace_run_equal(tools, long_oracle_program, opts, mode, prof)
    assert_block_counts(prof, dump, None if k == 'roll' else int(k), mode)


@pytest.mark.parametrize('mode', ['intra', 'inter'])
def test_fork_child_block_counts_start_at_zero(tools, mode):
    """A fork child's profile counts only the child's block runs, and the
    parent's all of its own (those still in the block trace at the fork
    included): each function's loop block runs the n its caller passes
    (tests/progs/forker.c; at -O0 a loop's body is a block of its own), and
    the other functions' blocks not at all."""
    exe = tools.compile('forker.c', '-O0')
    r = tools.kgrind(exe, opts=[f'--mode={mode}', '--k=2', '--funcs=main,before_fork,child_work,parent_work'],
                     out='kg.%p')
    assert r.returncode == 0, r.stderr
    loop_runs = {}
    for path in tools.dir.glob('kg.*'):
        most = collections.Counter()
        for label, b in BlockProfile(path).blocks.items():
            if label:
                most[b['fn']] = max(most[b['fn']], b['count'])
        loop_runs['child' if most['child_work'] else 'parent'] = most
    parent, child = loop_runs['parent'], loop_runs['child']
    assert (parent['before_fork'], parent['parent_work'], parent['child_work']) == (3000, 1000, 0)
    assert (child['before_fork'], child['parent_work'], child['child_work']) == (0, 0, 2000)


def test_intra_mode_line_costs_equal_cachegrind(tools):
    """Per-line Ir: cachegrind's, but for PLT stubs, charged to the calling
    line as plain callgrind charges them (prog4.c calls printf through
    .plt)."""
    exe = tools.compile('prog4.c', '-O0')
    kg = tools.kgrind(exe, opts=['--mode=intra', '--roll-loops=yes'])
    cg = tools.reference('cachegrind', exe)
    cl = tools.reference('callgrind', exe)
    mine, ref, ref_cl = kg.profile(), cg.profile(), cl.profile()
    assert mine.total() == ref.summary
    own = {key: ir for key, ir in ref_cl.by_file_line().items() if key[0] == str(PROGS / 'prog4.c')}
    assert own != {key: ir for key, ir in ref.by_file_line().items() if key[0] == str(PROGS / 'prog4.c')}
    assert_plt_moves(mine, ref, ref_cl, own)
    prof = BlockProfile(kg.profile_path)
    assert prof.options['mode'] == 'intra'


# ---------------------------------------------------------------------------
# Jumps in the callgrind body (positions: instr line, jump=/jcnd= lines)

JUMP_FUNCS = {'main', 'walk', 'classify'}      # tests/progs/jumps.c


def jump_counts(prof, fns):
    """{(function, from, to, conditional): (taken, executed)} of a callgrind
    profile, summed over the contexts (kgrind) or BBs (callgrind)."""
    out = collections.Counter()
    for j in prof.jumps:
        fn = callgrind_format.callee(j.fn)
        if fn in fns:
            out[(fn, j.from_addr, j.to_addr, j.cond, 'taken')] += j.taken
            out[(fn, j.from_addr, j.to_addr, j.cond, 'executed')] += j.executed
    return out


def instr_costs(prof, fns):
    out = collections.Counter()
    for (_ob, fn, addr), ir in prof.instrs.items():
        if callgrind_format.callee(fn) in fns:
            out[addr] += ir
    return +out


@pytest.mark.parametrize('opt', ['-O0', '-O2'])
@pytest.mark.parametrize('mode', ['intra', 'inter'])
def test_jumps_equal_callgrind(tools, mode, opt):
    exe = tools.compile('jumps.c', opt)
    kg = tools.kgrind(exe, opts=[f'--mode={mode}', '--k=2'])
    assert kg.returncode == 0, kg.stderr
    cg = tools.reference('callgrind', exe, opts=['--collect-jumps=yes', '--dump-instr=yes'])
    mine, ref = kg.profile(), cg.profile()
    assert mine.header['positions'] == ref.header['positions'] == 'instr line'
    expected = jump_counts(ref, JUMP_FUNCS)
    kinds = {k[3] for k in expected}
    assert kinds == {True, False}, expected         # jcnd= and jump= both occur
    sources = collections.Counter(k[1] for k in expected if k[4] == 'taken')
    assert max(sources.values()) >= 5                # the switch's computed jump
    assert jump_counts(mine, JUMP_FUNCS) == expected
    # Every cost line carries an instruction: per-instruction Ir as callgrind's.
    assert instr_costs(mine, JUMP_FUNCS) == instr_costs(ref, JUMP_FUNCS)


def disassemble(exe):
    """{file address: (length, mnemonic)} of the executable's code."""
    out = subprocess.run(['objdump', '-d', '--no-show-raw-insn', str(exe)],
                         capture_output=True, text=True, check=True).stdout
    found = []
    for line in out.splitlines():
        m = re.match(r'^\s*([0-9a-f]+):\s+(?:(?:bnd|notrack)\s+)?(\S+)', line)
        if m:
            found.append((int(m.group(1), 16), m.group(2)))
    return {a: (b[0] - a, mn) for (a, mn), b in zip(found, found[1:])}


def function_symbols(exe):
    out = subprocess.run(['nm', str(exe)], capture_output=True, text=True, check=True).stdout
    return {f[2]: int(f[0], 16) for f in (l.split() for l in out.splitlines())
            if len(f) == 3 and f[1] in 'tT'}


def test_jumps_equal_dump_transitions(tools):
    """The jumps equal the transitions of the --dump-blocks raw sequence
    between consecutive blocks of an activation: from the block's last
    instruction (its first jump, call or return, by objdump) to the next
    block, except after a call, to the next instruction (a fall-through) or
    to a function's entry (a call for callgrind)."""
    exe = tools.compile('jumps.c', '-O2')
    r = tools.kgrind(exe, opts=['--mode=intra', '--k=1', '--funcs=' + ','.join(JUMP_FUNCS),
                               f'--dump-blocks={tools.dir}/dump'])
    assert r.returncode == 0, r.stderr
    prof = BlockProfile(r.profile_path)
    insns, syms = disassemble(exe), function_symbols(exe)
    start = {label: syms[b['fn']] + b['offset'] for label, b in prof.blocks.items() if label}

    def last_instr(a):
        while not re.match(r'(j|call|ret)', insns[a][1]):
            a += insns[a][0]
        return a

    expected = collections.Counter()
    prev = {}
    for tid, act, _fn, label in read_dump(tools.dir / 'dump'):
        b = start[label]
        if (tid, act) in prev:
            x = last_instr(prev[(tid, act)])
            if not insns[x][1].startswith('call') and b != x + insns[x][0] and b not in syms.values():
                expected[(x, b)] += 1
        prev[(tid, act)] = b
    assert len(expected) >= 10
    mine = collections.Counter()
    for j in r.profile().jumps:
        if callgrind_format.callee(j.fn) in JUMP_FUNCS:
            mine[(j.from_addr, j.to_addr)] += j.taken
    assert mine == expected


def test_instr_profile_readers(tools):
    """callgrind_annotate reads the block-mode file (exclusive and inclusive)
    without warnings; its totals and per-line Ir equal cachegrind's (with
    the C library's PLT stubs charged to their calling lines)."""
    exe = tools.compile('jumps.c', '-O2')
    kg = tools.kgrind(exe, opts=['--mode=intra', '--k=2'])
    cg = tools.reference('cachegrind', exe)
    cl = tools.reference('callgrind', exe)
    mine, ref = kg.profile(), cg.profile()
    assert mine.total() == ref.summary == mine.totals
    own = {key: ir for key, ir in ref.by_file_line().items() if key[0] == str(PROGS / 'jumps.c')}
    assert_plt_moves(mine, ref, cl.profile(), own)
    for extra in ([], ['--inclusive=yes']):
        ann = subprocess.run(['callgrind_annotate', *extra, str(kg.profile_path)],
                             capture_output=True, text=True, check=True)
        assert 'WARNING' not in ann.stderr, ann.stderr
        total = re.search(r'^([\d,]+) \(100\.0%\)\s+PROGRAM TOTALS', ann.stdout, re.M)
        assert int(total.group(1).replace(',', '')) == ref.summary
