"""kgrind_annotate's exports for today's tools : pprof's
profile.proto (decoded by tests/pprof_wire.py and by `go tool pprof`) and
speedscope's file format, each compared with kgrind_annotate's own JSON
context by context."""
import collections
import gzip
import json
import pathlib
import random
import re
import subprocess

import pytest

import callgrind_format
import pprof_wire
import speedscope_file
import test_annotate_model as M
import testdeps
from test_annotate import THESIS, annotate, annotate_cmd, ok  # noqa: F401


def run_bytes(*args):
    """kgrind_annotate with binary stdout."""
    r = subprocess.run([*annotate_cmd(), *map(str, args)], capture_output=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr == b''
    return r.stdout


def model_profile(tmp_path, k, seed=1, threads=(1, 2)):
    rng = random.Random(seed)
    return M.write_profile(tmp_path / f'model-{k}.out', {t: M.random_activations(rng) for t in threads}, k)


@pytest.fixture(scope='session')
def twice_profile(tmp_path_factory):
    """twice.c's profile at k and scale: one run each for the session's
    tests, which read them (several modules import this fixture)."""
    from conftest import Toolbox
    tools = Toolbox(tmp_path_factory.mktemp('twice'))
    exe = tools.compile('twice.c')
    made = {}

    def profile(k, scale=1):
        if (k, scale) not in made:
            run = tools.kgrind(exe, scale, opts=[f'--k={k}'], out=f'twice-k{k}-s{scale}.out')
            assert run.returncode == 0, run.stderr
            made[k, scale] = run.profile_path
        return made[k, scale]
    return profile


def truncated(k):
    return f'[truncated k={k}]'


def expected_stacks(d):
    """JSON contexts as pprof stacks (outermost first, with the truncation
    frame of a context that does not reach __root__): Counter of
    (thread, stack, calls, Ir)."""
    k = d['k']
    want = collections.Counter()
    for t in d['threads']:
        for c in t['contexts']:
            stack = tuple(c['path'])
            if k != 'inf' and stack[0] != '__root__':
                stack = (truncated(k),) + stack
            want[(str(t['tid']), stack, c['calls'], c['Ir'])] += 1
    return want


def pprof_file(tmp_path, *args):
    p = tmp_path / 'profile.pb.gz'
    p.write_bytes(run_bytes('--format=pprof', *args))
    return p


# ---------------------------------------------------------------------------
# pprof: the wire format decoded independently.

def check_pprof_equals_json(tmp_path, annotate, *args):
    d = annotate('--format=json', *args).json()
    p = pprof_wire.decode(pprof_file(tmp_path, *args))
    assert p['sample_types'] == [('calls', 'count'), ('Ir', 'count')]
    assert p['default_sample_type'] == 'Ir'
    got = collections.Counter()
    tids = [str(t['tid']) for t in d['threads']]
    for s in p['samples']:
        # a label only where samples differ (no tag box on every node): the
        # thread when there are several, k never (it is in the comments)
        assert 'k' not in s['labels'] and ('thread' in s['labels']) == (len(tids) > 1)
        calls, ir = s['values']
        got[(s['labels'].get('thread', tids[0]), tuple(reversed(s['stack'])), calls, ir)] += 1
    assert f"threads: {', '.join(tids)}" in p['comments']
    assert got == expected_stacks(d)
    assert sum(s['values'][1] for s in p['samples']) == d['total']['Ir']
    # one function per name, and its location points at it
    names = [f['name'] for f in p['functions'].values()]
    assert len(names) == len(set(names))
    # one location per function with the functions inlined into it (--inline-frames), innermost first
    chains = [tuple(line['function']['name'] for line in loc['lines']) for loc in p['locations'].values()]
    assert len(chains) == len(set(chains))
    assert all(callgrind_format.inlined_level(n) for c in chains for n in c[:-1])
    return d, p


@pytest.mark.parametrize('k', [1, 3, M.INF])
def test_pprof_model_profiles_equal_json(annotate, tmp_path, k):
    prof = model_profile(tmp_path, k, seed=7 + (k or 9))
    for kk in ([k] if k is M.INF else range(k + 1)):
        check_pprof_equals_json(tmp_path, annotate, f'--k={"inf" if kk is M.INF else kk}', prof)
    check_pprof_equals_json(tmp_path, annotate, '--join-threads', prof)


def test_pprof_thesis_listing(annotate, tmp_path):
    d, p = check_pprof_equals_json(tmp_path, annotate, THESIS)
    stacks = {tuple(reversed(s['stack'])) for s in p['samples']}
    assert ('[truncated k=2]', 'e', 'd', 'c') in stacks      # not rooted: marked
    assert ('__root__', 'e') in stacks                       # rooted: as it is


def test_pprof_real_program_files_and_lines(annotate, tmp_path, twice_profile):
    prof = twice_profile(2)
    d, p = check_pprof_equals_json(tmp_path, annotate, prof)
    src = pathlib.Path(__file__).parent / 'progs' / 'twice.c'
    lines = src.read_text().splitlines()
    by_name = {f['name']: f for f in p['functions'].values()}
    for fn in ('step', 'fixed', 'scaled', 'even', 'odd', 'twice'):
        f = by_name[fn]
        assert f['filename'].endswith('tests/progs/twice.c'), f
        # the first costly line of the function is its definition's line
        assert re.search(rf'\b{fn}\(', lines[f['start_line'] - 1]), (fn, f)


def deep_chain(depth, labels='abc'):
    """__root__ calling a chain of depth activations, each with 1 Ir."""
    acts = [M.Act(labels[i % len(labels)], 1) for i in range(depth)]
    for a, b in zip(acts, acts[1:]):
        a.kids = [b]
    return M.Act(M.ROOT, 1, [acts[0]])


def test_pprof_streamed_equals_brute_force(annotate, tmp_path):
    """pprof is written as it is produced: the sample types, each context's
    sample as its path is made, then the tables the samples refer to
    (mapping, locations, functions, strings), gzipped piece by piece.  Its
    samples equal the model's k=inf contexts (a random run, and deep
    recursions whose samples fill several gzip pieces); with --top, the
    hottest of them; go tool pprof reads that order the same."""
    rng = random.Random(221116)
    runs = {1: M.random_activations(rng, max_depth=9), **{tid: deep_chain(350) for tid in range(2, 6)}}
    prof = M.write_profile(tmp_path / 'deep.out', runs, M.INF)
    want = collections.Counter()
    for tid, root in runs.items():
        for path, (calls, excl, _incl) in M.contexts(root, M.INF).items():
            want[(str(tid), path, calls, excl)] += 1
    path = pprof_file(tmp_path, prof)
    p = pprof_wire.decode(path)
    got = collections.Counter((s['labels']['thread'], tuple(reversed(s['stack'])), *s['values'])
                              for s in p['samples'])
    assert got == want
    assert len(gzip.decompress(path.read_bytes())) > 3 * (1 << 16)
    order = pprof_wire.top_level_fields(path)
    last_sample = len(order) - 1 - order[::-1].index(2)
    assert order[:3] == [1, 1, 2] and not {3, 4, 5, 6} & set(order[:last_sample])
    assert parse_raw(go_pprof(path, '-raw')) == want
    top = pprof_wire.decode(pprof_file(tmp_path, '--top=5', prof))['samples']
    assert all(want[(s['labels']['thread'], tuple(reversed(s['stack'])), *s['values'])] for s in top)
    for tid in runs:    # --top is per thread
        hottest = sorted((ir for (t, *_, ir) in want.elements() if t == str(tid)), reverse=True)[:5]
        assert sorted((s['values'][1] for s in top if s['labels']['thread'] == str(tid)), reverse=True) == hottest


# ---------------------------------------------------------------------------
# pprof: what `go tool pprof` shows.

def go_pprof(path, *args):
    go = testdeps.debian_tool('go', 'golang-go')
    r = subprocess.run([go, 'tool', 'pprof', '-nodefraction=0', '-edgefraction=0', *args, str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return r.stdout


def parse_raw(text, tid=None):
    """go tool pprof -raw: samples as Counter((thread, stack, calls, Ir));
    tid: the thread of samples without a thread label (a one-thread file)."""
    samples_part, rest = text.split('\nSamples:\n', 1)[1].split('\nLocations\n', 1)
    names = {}      # location id -> its lines' functions, innermost first
    last = None
    for line in rest.split('\nMappings\n')[0].splitlines():
        m = re.match(r'\s*(\d+): 0x[0-9a-f]+ M=\d+ (.*) \S*:\d+ s=\d+$', line)
        if m:
            last = names[m[1]] = [m[2]]
            continue
        m = re.match(r'\s+(.*) \S*:\d+ s=\d+$', line)     # an inline chain's next line
        if m and last is not None:
            last.append(m[1])
    got = collections.Counter()
    lines = samples_part.splitlines()[1:]     # after the value-type line
    samples = []    # [sample line, its labels' line (none without labels)]
    for line in lines:
        if re.match(r'\s*(\d+)\s+(\d+): ([\d ]+)$', line):
            samples.append([line, ''])
        else:
            assert samples and not samples[-1][1], line
            samples[-1][1] = line
    for line, labels in samples:
        m = re.match(r'\s*(\d+)\s+(\d+): ([\d ]+)$', line)
        thread = re.search(r'thread:\[(\S+)\]', labels)
        thread = thread[1] if thread else tid
        stack = tuple(reversed([n for i in m[3].split() for n in names[i]]))
        got[(thread, stack, int(m[1]), int(m[2]))] += 1
    return got


def parse_traces(text):
    """go tool pprof -traces: Counter((stack, Ir)) of the samples it lists."""
    got = collections.Counter()
    for block in text.split('-----------+-------------------------------------------------------')[1:]:
        frames = [l for l in block.splitlines() if l.strip() and not re.match(r'\s+\w+:\s', l)]
        if not frames:
            continue
        m = re.match(r'\s*(\d+)\s+(.*)$', frames[0])
        # an inlined frame is marked " (inline)" (a line of a location's chain)
        stack = [re.sub(r' \(inline\)$', '', f.strip()) for f in [m[2]] + frames[1:]]
        got[(tuple(reversed(stack)), int(m[1]))] += 1
    return got


def parse_top(text):
    """go tool pprof -top: {function: (flat, cum)} and the total (without
    the `(inline)` or `(partial-inline)` pprof adds to an inlined frame's
    name)."""
    total = int(re.search(r'of (\d+) total', text)[1])
    rows = {}
    for line in text.split('\n      flat  flat%')[1].splitlines()[1:]:
        m = re.match(r'\s*(\d+)\s+\S+%\s+\S+%\s+(\d+)\s+\S+%\s+(.*?)(?: \((?:partial-)?inline\))?$', line)
        rows[m[3]] = (int(m[1]), int(m[2]))
    return rows, total


@pytest.mark.parametrize('k', [1, 2, 'inf'])
def test_go_tool_pprof_equals_json(annotate, tmp_path, twice_profile, k):
    prof = twice_profile(k)
    d = annotate('--format=json', prof).json()
    want = expected_stacks(d)
    path = pprof_file(tmp_path, prof)
    assert parse_raw(go_pprof(path, '-raw'), str(d['threads'][0]['tid'])) == want
    # -traces lists every sample with its Ir (the default sample type),
    # 0 too (an inlined level whose code all lies in deeper levels)
    traces = collections.Counter()
    for (_t, stack, _calls, ir), n in want.items():
        traces[(stack, ir)] += n
    assert parse_traces(go_pprof(path, '-traces')) == traces
    # -top: a function's flat Ir is that of the contexts it is the last of;
    # cum, that of the stacks holding it
    rows, total = parse_top(go_pprof(path, '-top', '-nodecount=100000'))
    assert total == d['total']['Ir']
    flat, cum = collections.Counter(), collections.Counter()
    for (_t, stack, _calls, ir), n in want.items():
        flat[stack[-1]] += ir * n
        for f in set(stack):
            cum[f] += ir * n
    assert rows == {f: (flat[f], cum[f]) for f in cum if cum[f]}
    # -peek step: its callers, each with the Ir of the stacks where it calls step
    callers = collections.Counter()
    for (_t, stack, _calls, ir), n in want.items():
        if stack[-1] == 'step' and ir:
            callers[stack[-2]] += ir * n
    peek = go_pprof(path, '-peek', '^step$')
    got = {m[2]: int(m[1]) for m in re.finditer(r'^\s+(\d+) +\S+% \|   (\S+)$', peek, re.M)}
    assert got == dict(callers) and set(got) == {'fixed', 'even', 'odd'}
    if k == 'inf':
        assert all(s[0] == '__root__' for (_t, s, _c, _i) in want)
    else:
        assert any(s[0] == truncated(k) for (_t, s, _c, _i) in want)


# ---------------------------------------------------------------------------
# speedscope.

SPEEDSCOPE_SCHEMA = pathlib.Path(__file__).parent / 'data' / 'speedscope' / 'file-format-schema.json'


def check_speedscope_equals_json(annotate, *args):
    """The speedscope file's stacks and weights are the JSON's contexts with
    Ir; whole calling context trees (k = inf) are evented profiles."""
    import jsonschema
    d = annotate('--format=json', *args).json()
    s = annotate('--format=speedscope', *args).json()
    jsonschema.validate(s, json.loads(SPEEDSCOPE_SCHEMA.read_text()))
    assert len(s['profiles']) == len(d['threads'])
    frames = [f['name'] for f in s['shared']['frames']]
    assert len(frames) == len(set(frames))
    want = expected_stacks(d)
    for p, t in zip(s['profiles'], d['threads']):
        assert p['type'] == ('evented' if d['k'] == 'inf' else 'sampled') and p['name'].startswith(f'thread {t["tid"]} ')
        got = [(stack, w) for stack, w in speedscope_file.samples(p, frames) if w]
        assert sum(w for _s, w in got) == t['Ir'] == p['endValue'] and p['startValue'] == 0
        assert collections.Counter(stack for stack, _w in got) == collections.Counter(
            stack for (tid, stack, _c, ir), n in want.items() for _ in range(n) if tid == str(t['tid']) and ir)
        by_stack = dict(got)
        assert all(by_stack[stack] == ir for (tid, stack, _c, ir) in want if tid == str(t['tid']) and ir)
    assert sum(p['endValue'] for p in s['profiles']) == d['total']['Ir']
    return d, s


@pytest.mark.parametrize('k', [1, 3, M.INF])
def test_speedscope_model_profiles(annotate, tmp_path, k):
    prof = model_profile(tmp_path, k, seed=21 + (k or 5))
    check_speedscope_equals_json(annotate, prof)
    check_speedscope_equals_json(annotate, '--k=0', prof)
    check_speedscope_equals_json(annotate, '--join-threads', prof)


def test_speedscope_real_program(annotate, twice_profile):
    _d, s = check_speedscope_equals_json(annotate, twice_profile('inf'))
    step = next(f for f in s['shared']['frames'] if f['name'] == 'step')
    assert step['file'].endswith('tests/progs/twice.c') and step['line'] > 0


def speedscope_page(tmp_path, profile_json):
    """The speedscope app's page (npm package) loading profile_json as its
    command line does (bin/cli.mjs: a script calling loadFileFromBase64)."""
    import base64
    app = testdeps.npm_package('speedscope', pathlib.Path.home() / '.cache' / 'kgrind-tests' / 'npm')
    loader = tmp_path / 'load.js'
    loader.write_text('speedscope.loadFileFromBase64(%s, %s)' % (
        json.dumps(profile_json.name), json.dumps(base64.b64encode(profile_json.read_bytes()).decode())))
    return f'file://{app}/dist/release/index.html#localProfilePath={loader}'


def chromium_page(url, **size):
    """A headless chromium showing url (tests/chromium_devtools.py)."""
    import chromium_devtools
    return chromium_devtools.Page(testdeps.debian_tool('chromium', 'chromium'), url, **size)


def test_speedscope_opens_in_chromium(tmp_path, twice_profile):
    """speedscope itself imports the file: its page shows the thread's
    profile name only once the import succeeded (an import error leaves it
    empty, with an alert), and draws it."""
    path = tmp_path / 'twice.speedscope.json'
    path.write_bytes(run_bytes('--format=speedscope', twice_profile(2)))
    with chromium_page(speedscope_page(tmp_path, path)) as page:
        page.wait_for("document.documentElement.outerHTML.includes('thread 1 (k=2, Ir)')", "the thread's profile name")
        assert 'Time Order' in page.evaluate('document.documentElement.outerHTML')
        png = page.screenshot()
    (tmp_path / 'speedscope.png').write_bytes(png)
    assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 10000


# The Sandwich view's rows as [total, self, name]: the text of the first
# two cells up to the " (" of their percentage, and the function's name.
SANDWICH_ROWS = """Array.from(document.querySelectorAll('tr')).filter(tr => tr.querySelectorAll('td').length == 3).map(tr =>
    [tr.cells[0].textContent.split(' (')[0], tr.cells[1].textContent.split(' (')[0], tr.cells[2].textContent])"""


def test_speedscope_viewer_numbers_equal_kgrinds(tmp_path, annotate, twice_profile):
    """speedscope reads a whole CCT's evented profile into the numbers
    kgrind_annotate computes: its Sandwich view's total and self of every
    function (its import's sums over the call tree, recursion counted once)
    are the --k=0 contexts' inclusive_outermost and exclusive Ir."""
    prof = twice_profile('inf')
    want = {c['path'][0]: (c['inclusive_outermost'], c['Ir'])
            for c in annotate('--format=json', '--k=0', prof).json()['threads'][0]['contexts'] if c['inclusive_outermost']}
    path = tmp_path / 'twice-inf.speedscope.json'
    path.write_bytes(run_bytes('--format=speedscope', prof))
    assert json.loads(path.read_bytes())['profiles'][0]['type'] == 'evented'
    # a window tall enough for every row of the (virtualised) table; the
    # rows are read once the table is drawn (some rows, the same twice)
    with chromium_page(speedscope_page(tmp_path, path) + '&view=sandwich', height=40 * len(want) + 400) as page:
        rows = page.wait_for(SANDWICH_ROWS, "the Sandwich view's table rows")
    got = {name: (int(total.replace(',', '')), int(own.replace(',', ''))) for total, own, name in rows}
    assert len(rows) == len(got) and got == want, rows


def test_exports_refuse_block_modes(annotate, tools):
    from test_annotate import bad
    exe = tools.compile('twice.c')
    run = tools.kgrind(exe, opts=['--mode=intra'], out='intra.out')
    assert run.returncode == 0, run.stderr
    for fmt in ('pprof', 'speedscope'):
        bad(annotate(f'--format={fmt}', run.profile_path), f'--format={fmt}: function-mode profiles only')
    bad(annotate('--diff', run.profile_path, run.profile_path), '--diff: function-mode profiles only')
