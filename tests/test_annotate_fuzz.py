"""Fuzzing kgrind_annotate's reader: mutants of real
profiles (made here with the uninstalled tool, plus the hand-written
fixtures) are truncated, have lines swapped, duplicated or deleted, bytes
flipped, numbers made huge, lines made very long or deeply nested, invalid
UTF-8 put into names.  Every run must either be rejected with exit status 2
and one clear line, or be accepted quietly with a report whose numbers agree
with each other, as checked here from the JSON output independently of the
reader (sums of parts equal totals, no share above 100 %, trees sum up).

Bounded and reproducible: ANNOTATE_FUZZ_SECONDS (default 45) of mutants, at
least MIN_MUTANTS of them; mutant i of seed ANNOTATE_FUZZ_SEED (default 21)
is always the same, whatever the time budget.  A failure names the mutant
and keeps it in pytest's tmp dir."""
import json
import os
import random
import re
import subprocess
import time

import pytest

from annotate_json import check_flat
from test_annotate import DATA, THESIS, THESIS_V1, annotate_cmd

SECONDS = float(os.environ.get('ANNOTATE_FUZZ_SECONDS', '45'))
SEED = int(os.environ.get('ANNOTATE_FUZZ_SEED', '21'))
MIN_MUTANTS = 60
RUN_TIMEOUT = 30     # seconds for one run: far above any seed's time (a hang)
HUGE = [b'1000000000000000', b'18446744073709551615', b'99999999999999999999999', b'0',
        b'9223372036854775807']
NOT_UTF8 = [b'\xe9', b'\xff', b'\xc3', b'\xed\xa0\x80', b'\xf8\x88\x80\x80\x80']
# Lines the reader checks most: the k-SF records and the header and totals.
CHECKED = re.compile(rb'^(?:# ksf-|summary:|totals:|events:|desc:|cmd:|positions:)')


@pytest.fixture(scope='module')
def seeds(tmp_path_factory):
    """Real profiles of every shape the reader knows, and the fixtures."""
    from conftest import Toolbox
    tools = Toolbox(tmp_path_factory.mktemp('fuzz-seeds'))
    prog1 = tools.compile('prog1.c')
    prog4 = tools.compile('prog4.c')
    deep = tools.compile('deeprec.c', '-O1')
    runs = [
        (prog1, (), ['--k=2'], 'prog1-k2'),
        (prog1, (), ['--k=inf', '--funcs=main,a,b,c,d,e,f'], 'prog1-inf'),
        (prog1, (), ['--k=3', '--join-threads=yes', '--funcs=main,a,b,c,d,e,f'], 'prog1-k3-joined'),
        (prog1, (), ['--k=0', '--funcs=main,a,b,c,d,e,f'], 'prog1-k0'),
        (deep, (40,), ['--k=inf', '--unroll-simple-rec=yes', '--funcs=main,rec,odd,even'], 'deep-inf'),
        (prog4, (), ['--mode=intra', '--k=2'], 'prog4-intra'),
        (prog4, (), ['--mode=inter', '--roll-loops=yes'], 'prog4-inter-loops'),
    ]
    out = [THESIS.read_bytes(), THESIS_V1.read_bytes()]
    for exe, args, opts, name in runs:
        run = tools.kgrind(exe, *args, opts=opts, out=f'{name}.out')
        assert run.returncode == 0, run.stderr
        out.append(run.profile_path.read_bytes())
    return out


# ---------------------------------------------------------------------------
# Mutations: each takes the profile's lines and a random generator.

def pick_line(lines, rng):
    """A line index, the reader's checked lines three times out of four."""
    checked = [i for i, l in enumerate(lines) if CHECKED.match(l)]
    if checked and rng.random() < 0.75:
        return rng.choice(checked)
    return rng.randrange(len(lines))


def m_truncate(lines, rng):
    data = b''.join(lines)
    cut = rng.randrange(len(data))
    return data[:cut].splitlines(keepends=True), f'truncated to {cut} bytes'


def m_swap(lines, rng):
    i = min(pick_line(lines, rng), len(lines) - 2)
    lines[i], lines[i + 1] = lines[i + 1], lines[i]
    return lines, f'lines {i + 1} and {i + 2} swapped'


def m_duplicate(lines, rng):
    i = pick_line(lines, rng)
    lines.insert(i, lines[i])
    return lines, f'line {i + 1} duplicated'


def m_delete(lines, rng):
    i = pick_line(lines, rng)
    del lines[i]
    return lines, f'line {i + 1} deleted'


def m_flip(lines, rng):
    i = pick_line(lines, rng)
    b = bytearray(lines[i])
    j = rng.randrange(len(b))
    b[j] ^= 1 << rng.randrange(8)
    lines[i] = bytes(b)
    return lines, f'a bit of line {i + 1} flipped'


def m_huge(lines, rng):
    i = pick_line(lines, rng)
    nums = list(re.finditer(rb'\d+', lines[i]))
    if not nums:
        return m_flip(lines, rng)
    m = rng.choice(nums)
    lines[i] = lines[i][:m.start()] + rng.choice(HUGE) + lines[i][m.end():]
    return lines, f'a number of line {i + 1} made huge'


def m_long(lines, rng):
    """A very long or very deeply nested node list."""
    i = next((i for i, l in enumerate(lines) if l.startswith(b'# ksf-nodes ')), None)
    if i is None:
        return m_duplicate(lines, rng)
    n = rng.choice([20000, 100000])
    extra = b' 1' * n if rng.random() < 0.5 else b'(1' * n + b')' * n
    body = lines[i].rstrip(b'\n')
    lines[i] = body + extra + b'\n'
    return lines, f'line {i + 1} made {len(extra)} bytes longer'


def m_not_utf8(lines, rng):
    names = [i for i, l in enumerate(lines) if l.startswith((b'# ksf-fns ', b'# ksf-fn ', b'cmd:', b'fn=('))]
    i = rng.choice(names) if names else pick_line(lines, rng)
    j = rng.randrange(len(lines[i]) // 2, len(lines[i]))
    lines[i] = lines[i][:j] + rng.choice(NOT_UTF8) + lines[i][j:]
    return lines, f'invalid UTF-8 in line {i + 1}'


MUTATIONS = [m_truncate, m_swap, m_swap, m_duplicate, m_duplicate, m_delete, m_flip, m_flip,
             m_huge, m_huge, m_long, m_not_utf8]
OPTIONS = [['--format=json'], ['--format=json'], ['--format=json', '--sort=calls'],
           ['--format=json', '--k=1'], ['--format=json', '--auto=yes'], ['--top=0']]


def mutant(seeds, i):
    """Mutant i: a seed, one to three mutations, the options to run it with."""
    rng = random.Random(SEED * 1_000_003 + i)
    lines = seeds[rng.randrange(len(seeds))].splitlines(keepends=True)
    what = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        if len(lines) < 2:      # truncated to nearly nothing already
            break
        lines, w = rng.choice(MUTATIONS)(lines, rng)
        what.append(w)
    return b''.join(lines), rng.choice(OPTIONS), '; '.join(what)


# ---------------------------------------------------------------------------
# The independent checks of an accepted report.

def check_json(d, options):
    problems = []

    def expect(cond, what):
        if not cond:
            problems.append(what)
    func = d['mode'] == 'func'
    threads = d['threads']
    if func and '--thread' not in ' '.join(options):
        expect(sum(t['Ir'] for t in threads) == d['total']['Ir'],
               f"threads' Ir {sum(t['Ir'] for t in threads)} != total {d['total']['Ir']}")
    for t in threads:
        tid = t['tid']
        ctx = t['contexts']
        expect(sum(c['Ir'] for c in ctx) == t['Ir'], f'thread {tid}: contexts sum to {sum(c["Ir"] for c in ctx)}, '
               f'thread Ir {t["Ir"]}')
        expect(len({tuple(c['path']) for c in ctx}) == len(ctx), f'thread {tid}: a context listed twice')
        for c in ctx:
            expect(0 <= c['Ir'] <= c['inclusive'], f'thread {tid}: context {c["path"]}: Ir above inclusive')
            expect(c['Ir'] <= t['Ir'], f'thread {tid}: context {c["path"]}: Ir above the thread\'s (> 100 %)')
        for tree in ('ksf', 'kccf'):
            try:
                check_flat(t[tree])
            except AssertionError as e:
                expect(False, f'thread {tid}: {tree} is not a flat pre-order forest: {e}')
        ksf = t['ksf']
        expect(len(ksf) == t['ksf_nodes'], f'thread {tid}: {len(ksf)} k-SF nodes listed, ksf_nodes {t["ksf_nodes"]}')
        expect(sum(n['Ir'] for n in ksf) == t['Ir'], f'thread {tid}: k-SF nodes sum to another Ir')
        if func:
            root = next((r for r in ksf if r['parent'] is None and r['name'] == '__root__'), None)
            expect(root is not None and root['inclusive'] == t['Ir'],
                   f'thread {tid}: __root__ inclusive differs from the thread Ir')
        kccf = t['kccf']
        expect(len(kccf) == t['kccf_nodes'], f'thread {tid}: {len(kccf)} k-CCF nodes listed, '
               f'kccf_nodes {t["kccf_nodes"]}')
        for key in ('calls', 'Ir', 'inclusive'):
            below = [0] * len(kccf)
            for n in kccf:
                if n['parent'] is not None and 0 <= n['parent'] < len(kccf):
                    below[n['parent']] += n[key]
            for n, b in zip(kccf, below):
                expect(n[key] >= b, f'thread {tid}: k-CCF node {n["name"]}: {key} below its callers\' sum')
        for r in (r for r in kccf if r['parent'] is None):
            mine = [c for c in ctx if c['path'][-1] == r['name']]
            for key in ('calls', 'Ir', 'inclusive'):
                expect(r[key] == sum(c[key] for c in mine),
                       f'thread {tid}: k-CCF root {r["name"]}: {key} is not the sum of its contexts\'')
    return problems


def check_text(out):
    problems = []
    thread_ir = {m.group(1): int(m.group(2).replace(',', ''))
                 for m in re.finditer(r'^Thread (\S+?):\s+Ir ([\d,]+),', out, re.M)}
    for block in re.split(r'\n(?=-+\nHottest )', out)[1:]:
        tid = re.search(r'Hottest \S+(?: block)?-contexts, thread (\S+?)[:,]', block).group(1)
        rows = re.findall(r'^\s*([\d,]+)\s+(\S+)%\s+[\d,]+\s+[\d,]+  ', block, re.M)
        for ir, pct in rows:
            if float(pct) > 100:
                problems.append(f'thread {tid}: a context at {pct}% of its thread')
        shown = sum(int(ir.replace(',', '')) for ir, _ in rows)
        if tid in thread_ir and shown > thread_ir[tid]:
            problems.append(f'thread {tid}: the contexts shown sum to {shown} > thread Ir {thread_ir[tid]}')
    return problems


def verdict(proc, options):
    """What is wrong with one run (empty: nothing)."""
    err = proc.stderr.decode('utf-8', 'replace')
    if proc.returncode not in (0, 2):
        return [f'exit status {proc.returncode}: {err[-500:]}']
    if re.search(r' at \S+ line \d+|internal error|Use of uninitialized|isn\'t numeric|recursion limit', err):
        return [f'Perl diagnostics on stderr: {err[-500:]}']
    if proc.returncode == 2:
        lines = err.splitlines()
        if proc.stdout or len(lines) != 1 or not lines[0].startswith('kgrind_annotate: '):
            return [f'a rejection is not one clear line: stdout {len(proc.stdout)} bytes, stderr {err[-500:]!r}']
        return []
    if err:
        return [f'accepted with text on stderr: {err[-500:]}']
    try:
        out = proc.stdout.decode('utf-8')
    except UnicodeDecodeError as e:
        return [f'output is not valid UTF-8: {e}']
    if '--format=json' in options:
        return check_json(json.loads(out), options)
    return check_text(out)


def test_fuzz_reader(seeds, tmp_path):
    cmd = annotate_cmd()
    deadline = time.monotonic() + SECONDS
    outcomes = {0: 0, 2: 0}
    i = 0
    while i < MIN_MUTANTS or time.monotonic() < deadline:
        data, options, what = mutant(seeds, i)
        path = tmp_path / f'mutant-{i}.out'
        path.write_bytes(data)
        try:
            proc = subprocess.run([*cmd, *options, str(path)], capture_output=True, timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail(f'mutant {i} (seed {SEED}; {what}; {" ".join(options)}): no answer in {RUN_TIMEOUT} s; '
                        f'kept as {path}')
        problems = verdict(proc, options)
        assert not problems, (f'mutant {i} (seed {SEED}; {what}; {" ".join(options)}; kept as {path}): '
                              + '; '.join(problems[:5]))
        outcomes[proc.returncode] += 1
        path.unlink()
        i += 1
    print(f'annotate fuzz: {i} mutants, {outcomes[0]} accepted, {outcomes[2]} rejected (seed {SEED})')
    # Both kinds happen: most mutations break what the reader checks, some
    # (in the body, in comments, harmless swaps) leave a valid profile.
    assert outcomes[0] > 0 and outcomes[2] > i // 3, outcomes


def test_fuzz_checks_catch_wrong_reports():
    """The independent checks reject reports whose numbers disagree (so the
    fuzz test can fail): a context above its thread's Ir, totals that do not
    sum, a k-CCF root that is not the sum of its contexts."""
    good = json.loads(subprocess.run([*annotate_cmd(), '--format=json', str(THESIS)],
                                     capture_output=True, check=True).stdout)
    assert check_json(good, ['--format=json']) == []
    for mutate in (lambda d: d['threads'][0]['contexts'][0].update(Ir=10 ** 15),
                   lambda d: d['total'].update(Ir=100000),
                   lambda d: d['threads'][0]['kccf'][0].update(calls=7),
                   lambda d: d['threads'][0]['ksf'][0].update(inclusive=1)):
        d = json.loads(json.dumps(good))
        mutate(d)
        assert check_json(d, ['--format=json'])
    text = subprocess.run([*annotate_cmd(), str(THESIS)], capture_output=True, check=True, text=True).stdout
    assert check_text(text) == []
    assert check_text(text.replace('  56.82%', '5682.00%'))
    assert DATA.is_dir()
