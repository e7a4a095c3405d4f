"""Smoke run of the benchmark suite (bench/suite.py) on one tiny
workload and two configurations, so that the suite cannot rot: the report
must be produced and hold real, sane measurements."""
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SUITE = ROOT / 'bench' / 'suite.py'


def test_bench_suite_smoke(tmp_path):
    out = tmp_path / 'results'
    proc = subprocess.run(
        [sys.executable, str(SUITE), '--runs', '1', '--scale', '0.02', '--workloads', 'callheavy',
         '--configs', 'none,kgrind-k2', '--no-growth', '--no-ksweep', '--no-large', '--no-churn', '--no-events', '--no-charts', '--out', str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    data = json.loads((out / 'results.json').read_text())
    runs = {r['config']: r for r in data['runs']}
    assert set(runs) == {'none', 'kgrind-k2'}
    for r in runs.values():
        assert r['rc'] == 0 and r['workload'] == 'callheavy'
        assert 0 < r['wall'] < 60
        assert 0 < r['cpu'] < 120             # user + system of the valgrind process
        assert r['rss_kb'] > 1000            # a Valgrind process: tens of MB
    kg = runs['kgrind-k2']
    assert kg['out_bytes'] > 0 and kg['ksf_nodes'] > 10 and kg['threads'] == 1
    ann = data['annotate']['main-callheavy-0.02-kgrind-k2']
    assert ann.get('kccf_nodes', 0) > 10, ann
    assert data['meta']['nproc'] >= 1 and data['meta']['valgrind'].startswith('valgrind-')

    report = (out / 'report.md').read_text()
    assert 'Command: `bench/suite.py --runs 1' in report
    rows = {}
    for line in report.splitlines():
        cells = [c.strip() for c in line.strip('|').split('|')]
        if len(cells) == 9 and cells[0] == 'callheavy':
            rows[cells[1]] = cells
    assert set(rows) == {'none', 'kgrind --k=2'}, report
    none, k2 = rows['none'], rows['kgrind --k=2']
    assert float(none[2]) == round(runs['none']['wall'], 2) and none[3] == '1.00'
    ratio = float(k2[3])
    assert abs(ratio - kg['wall'] / runs['none']['wall']) < 0.011
    assert float(k2[5]) > 1                   # peak RSS, MB
    assert int(k2[7].replace(',', '')) == kg['ksf_nodes']
    assert int(k2[8].replace(',', '')) == ann['kccf_nodes']
    gm = re.search(r'^\| kgrind --k=2 \| ([0-9.]+) \| [^|]+ \| ([0-9.]+) \|$', report, re.M)
    assert gm, report
    assert float(gm.group(1)) == float(k2[3])   # one workload: the geometric mean is its ratio
    assert abs(float(gm.group(2)) - kg['cpu'] / runs['none']['cpu']) < 0.011
    assert re.search(r'\| k=2 geometric mean ≤ 1\.6× none \| [0-9.]+× \| \*\*(met|not met)\*\* \|', report)


def test_bench_ab_smoke(tmp_path):
    """bench/ab.py (A/B of frozen builds by CPU time) on the suite's work folder."""
    out = tmp_path / 'results'
    subprocess.run([sys.executable, str(SUITE), '--runs', '1', '--scale', '0.02', '--workloads', 'callheavy',
                    '--configs', 'native', '--no-growth', '--no-ksweep', '--no-large', '--no-churn', '--no-events', '--no-charts', '--out', str(out),
                    '--keep-work'], check=True, capture_output=True, timeout=120, cwd=tmp_path)
    env = dict(os.environ, KGRIND_AB_DIR=str(tmp_path / 'ab'))
    ab = [sys.executable, str(ROOT / 'bench' / 'ab.py')]
    snap = subprocess.run(ab + ['snapshot', 'cur'], env=env, capture_output=True, text=True, timeout=60)
    assert snap.returncode == 0, snap.stderr
    assert (tmp_path / 'ab' / 'cur' / 'kgrind-amd64-linux').is_file()
    bad = subprocess.run(ab + ['snapshot', 'none'], env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and 'bad build name' in bad.stderr
    run = subprocess.run(ab + ['run', '--work', str(out / 'work'), '--runs', '2', '--scale', '0.02',
                               '--workloads', 'callheavy', '--configs', 'k1,k2', 'cur'],
                         env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    rows = {}
    for line in run.stdout.splitlines():
        m = re.match(r'callheavy +(\S+) +min +([0-9.]+) +median +([0-9.]+) +x none +([0-9.]+) +peak RSS +([0-9.]+) MB$',
                     line)
        assert m, line
        rows[m.group(1)] = tuple(float(g) for g in m.group(2, 3, 4, 5))
    assert set(rows) == {'none', 'cur:k1', 'cur:k2'}, run.stdout
    base = rows['none'][0]
    for label, (lo, med, ratio, rss) in rows.items():
        assert 0 < lo <= med < 60
        assert abs(ratio - round(lo / base, 2)) <= 0.011, (label, lo, base, ratio)
        # Valgrind's own text and heap alone are tens of MB
        assert 10 < rss < 4096, (label, rss)


def test_bench_large_smoke(tmp_path):
    """The large-program phase on one round of perl, four configurations."""
    out = tmp_path / 'results'
    proc = subprocess.run(
        [sys.executable, str(SUITE), '--runs', '1', '--workloads=', '--no-growth', '--no-ksweep',
         '--large', 'perl', '--large-runs', '1', '--large-scale', '0.01', '--no-events', '--no-churn',
         '--large-configs', 'none,callgrind,kgrind-k2,kgrind-kinf',
         '--out', str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

    data = json.loads((out / 'results.json').read_text())
    runs = {r['config']: r for r in data['runs']}
    assert set(runs) == {'none', 'callgrind', 'kgrind-k2', 'kgrind-kinf'}
    assert all(r['phase'] == 'large' and r['workload'] == 'perl' and r['rc'] == 0 for r in runs.values())
    assert runs['kgrind-kinf']['ksf_nodes'] > 100 and runs['kgrind-kinf']['out_bytes'] > 0
    ann = data['annotate_default']
    assert set(ann) == {'large-perl-0.01-kgrind-k2', 'large-perl-0.01-kgrind-kinf'}
    assert all(a['rc'] == 0 and 0 < a['seconds'] < 60 and a['rss_kb'] > 1000 for a in ann.values())
    assert not data['annotate']               # no --format=json on large profiles

    report = (out / 'report.md').read_text()
    assert '## Large programs' in report and '### perl' in report and '## Results' not in report
    k2 = re.search(r'^\| kgrind --k=2 \| ([0-9.]+) \| ([0-9.]+) \| ([0-9.]+) \| 1\.00 \|', report, re.M)
    assert k2, report
    assert float(k2.group(1)) == round(runs['kgrind-k2']['wall'], 2)
    assert float(k2.group(2)) == round(runs['kgrind-k2']['cpu'], 2)
    assert abs(float(k2.group(3)) - runs['kgrind-k2']['wall'] / runs['none']['wall']) < 0.011
    for target in (r'time kgrind --k=2 ≤ 1\.8× none \| [0-9.]+×', r'peak RSS k=2 ≤ callgrind\'s \| [0-9.]+ MB vs',
                   r'profile size k=inf ≤ k=2\'s \+ 60 B per k-SF node \| [0-9.]+ MB = k=2\'s'):
        assert re.search(r'\| ' + target + r'[^|]* \| \*\*(met|not met)\*\* \|', report), (target, report)
    assert re.search(r'time kgrind --k=4 ≤ 1\.25× kgrind --k=2 \| – \| not measured', report)
    if (out / 'charts').exists():
        assert (out / 'charts' / 'large_cost_vs_k.png').stat().st_size > 1000


def test_bench_churn_smoke(tmp_path):
    """The thread-churn phase alone, at small thread counts: both variants'
    runs and kgrind_annotate measured, the report's table and targets from
    them."""
    out = tmp_path / 'results'
    proc = subprocess.run(
        [sys.executable, str(SUITE), '--workloads=', '--no-growth', '--no-ksweep', '--no-large', '--no-events',
         '--no-charts', '--churn', '20,60', '--out', str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    churn = json.loads((out / 'results.json').read_text())['churn']
    assert churn['counts'] == [20, 60]
    report = (out / 'report.md').read_text()
    for label, variant in (('same work', churn), ('distinct (256 paths)', churn['distinct'])):
        runs = variant['runs']
        for n in ('20', '60'):
            assert runs[n]['rc'] == 0 and runs[n]['rss_kb'] > 1000 and runs[n]['profile_bytes'] > 0
        assert runs['60']['profile_bytes'] > runs['20']['profile_bytes']
        assert variant['annotate']['rc'] == 0 and variant['annotate']['seconds'] > 0
        rows = {}
        for line in report.splitlines():
            cells = [c.strip() for c in line.strip('|').split('|')]
            if len(cells) == 7 and cells[0] == label and cells[1] in ('20', '60'):
                rows[cells[1]] = cells
        assert set(rows) == {'20', '60'}, report
        assert float(rows['60'][4]) == round(runs['60']['rss_kb'] / 1024, 1)
        ratio = runs['60']['rss_kb'] / runs['20']['rss_kb']
        of = '' if label == 'same work' else ', ' + re.escape(label)
        assert re.search(rf'\| peak RSS at 60 threads ≤ 1\.2× at 20{of} \| [0-9.]+ MB / [0-9.]+ MB = {ratio:.2f}× \| '
                         rf'\*\*{"met" if ratio <= 1.2 else "not met"}\*\* \|', report), report
        assert re.search(rf'\| kgrind_annotate on the 60-thread profile < 5 s{of} \| [0-9.]+ s \| \*\*(met|not met)\*\* \|',
                         report), report


def test_bench_churn_counts_refused(tmp_path):
    proc = subprocess.run([sys.executable, str(SUITE), '--churn', '100,10', '--out', str(tmp_path / 'r')],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert proc.returncode == 2 and '--churn: two or more thread counts, smaller first' in proc.stderr


def test_bench_events_smoke(tmp_path):
    """The events phase (bench/events_phase.py) on one round of callheavy:
    kgrind, cachegrind and callgrind with the same simulation side by side,
    the ratios in the report computed from the runs."""
    out = tmp_path / 'results'
    proc = subprocess.run(
        [sys.executable, str(SUITE), '--runs', '1', '--scale', '0.02', '--workloads=', '--no-growth', '--no-ksweep',
         '--no-large', '--no-churn', '--no-charts', '--events', 'callheavy', '--events-runs', '1', '--out', str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    runs = {r['config']: r for r in json.loads((out / 'results.json').read_text())['runs'] if r['phase'] == 'events'}
    assert set(runs) == {'none', 'kgrind-k2', 'kgrind-data', 'kgrind-cache', 'cachegrind-cache', 'callgrind-cache',
                         'kgrind-branch', 'cachegrind-branch', 'callgrind-branch'}
    for r in runs.values():
        assert r['rc'] == 0 and r['workload'] == 'callheavy' and r['wall'] > 0 and r['rss_kb'] > 1000
    report = (out / 'report.md').read_text()
    for label, mine, ref in (('kgrind / cachegrind, cache', 'kgrind-cache', 'cachegrind-cache'),
                             ('kgrind / callgrind, branch', 'kgrind-branch', 'callgrind-branch')):
        m = re.search(rf'^\| {re.escape(label)} \| ([0-9.]+) \|$', report, re.M)
        assert m, report
        assert abs(float(m.group(1)) - runs[mine]['wall'] / runs[ref]['wall']) < 0.011
    assert re.search(r'\| --cache-sim: kgrind no slower than cachegrind \| worst [0-9.]+x \(callheavy\) \| '
                     r'\*\*(met|not met)\*\* \|', report), report


def test_bench_events_exact_smoke(tmp_path):
    """The events-exact phase (bench/events_exact.py) on a small gzip run:
    cachegrind's and kgrind's events equal in total and on every line, in
    the report and the results."""
    out = tmp_path / 'results'
    proc = subprocess.run(
        [sys.executable, str(SUITE), '--scale', '0.002', '--workloads=', '--no-growth', '--no-ksweep', '--no-large',
         '--no-churn', '--no-events', '--no-charts', '--events-exact', 'gzip', '--out', str(out)],
        capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    res = json.loads((out / 'results.json').read_text())['events_exact']['gzip']
    assert res['exact'] and not res['line_diffs'] and res['lines'] > 100
    assert all(a == b > 0 for e, (a, b) in res['totals'].items() if e in ('Ir', 'Dr', 'Dw', 'I1mr', 'Bc'))
    report = (out / 'report.md').read_text()
    assert re.search(r'^\| gzip \| [\d,]+ \|.* \| exact in total and per line; \d+ function\(s\) differ \|$', report,
                     re.M), report
