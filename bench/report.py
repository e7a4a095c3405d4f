"""The benchmark suite's report: report.md (Markdown tables, targets), charts and
docs/results.md, from a results folder's results.json."""
import json
import math
import pathlib
import statistics

import churn
import events_exact
import events_phase
from configs import (ANNOTATE_TARGET, BASE, BLOCK_CONFIGS, CALLGRIND_REF, CONFIG_LABELS,
    GROWTH_CONFIGS, GROWTH_FACTORS, LARGE_DESC, LARGE_GROWTH_TARGETS, LARGE_KS, LARGE_TIME_TARGETS,
    RATIO_REFS, WORKLOAD_DESC)


# ---------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------
def gmean(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def fmt(x, nd=2):
    if x is None:
        return '–'
    if isinstance(x, str):
        return x
    return f'{x:.{nd}f}'


def target_row(what, measured, ok):
    """A row of a targets table; ok None: not measured."""
    verdict = 'not measured' if ok is None else ('**met**' if ok else '**not met**')
    return f'| {what} | {measured or "–"} | {verdict} |'


def tiers_table(ws, cs, table):
    """The translations per tier of the tiered configurations (--stats=yes)."""
    rows = []
    for w in ws:
        for c in cs:
            t = table.get((w, c), {}).get('tiers')
            if t:
                rows.append(f'| {w} | {CONFIG_LABELS.get(c, c)} | {t["threshold"]} | {fmt_int(t["tier_one"])} | '
                            f'{fmt_int(t["tier_two"])} | {fmt_int(t["promoted"])} |')
    if not rows:
        return []
    return ['', 'Tiers (round 1): superblocks translated at tier 1 (helper calls) and at tier 2 (inline), '
            'and the tier-1 blocks retranslated at tier 2 after --tier-threshold runs.', '',
            '| workload | config | threshold | tier 1 | tier 2 | retranslated |', '|---|---|--:|--:|--:|--:|'] + rows


def fmt_int(x):
    return '–' if x is None else f'{x:,}'


def fmt_mb(kb):
    return '–' if not kb else f'{kb / 1024:.1f}'


def fmt_kb(b):
    if b is None:
        return '–'
    return f'{b / 1024:,.0f}' if b >= 10240 else f'{b / 1024:,.1f}'


def titled_table(title, header, align, rows):
    """A section of the report: a Markdown table of rows under a heading, or nothing without rows."""
    if not rows:
        return []
    return [f'## {title}', '', header, align] + ['| ' + ' | '.join(row) + ' |' for row in rows] + ['']


class Report:
    def __init__(self, outdir, merge=()):
        """merge: other results folders whose growth, k-sweep and large-program runs replace
        this folder's (e.g. a later `--workloads= ` run of those phases only)."""
        self.out = outdir
        self.data = json.loads((outdir / 'results.json').read_text())
        self.meta = self.data['meta']
        self.runs = self.data['runs']
        if 'rss_source' not in self.meta:
            # Older runs took ru_maxrss from wait4: Linux carries the forking
            # Python's RSS into the child, so peaks below it are not real.
            floor = min((r['rss_kb'] for r in self.runs if r['config'] == 'native'), default=0)
            for r in self.runs:
                if r['rss_kb'] <= floor * 1.02:
                    r['rss_kb'] = None
            self.meta['rss_source'] = 'wait4 (values at the forking Python\'s RSS dropped)'
        self.merged = []
        for other in merge:
            od = json.loads((pathlib.Path(other) / 'results.json').read_text())
            phases = {r['phase'] for r in od['runs']} - {'main'}
            self.runs = [r for r in self.runs if r['phase'] not in phases] + \
                        [r for r in od['runs'] if r['phase'] in phases]
            for key, val in od['annotate'].items():
                if key.split('-', 1)[0] in phases:
                    self.data['annotate'][key] = val
            if 'large' in phases:   # the large programs' setup and annotate timings come along
                self.meta.update({k: v for k, v in od['meta'].items() if k.startswith('large')
                                  or k == 'cc1plus_input_lines'})
                self.data['annotate_default'] = od.get('annotate_default', {})
            if od.get('churn'):
                self.data['churn'] = od['churn']
                phases.add('churn')
            self.merged.append((other, sorted(phases), od['meta']))

    def recs(self, phase, w=None, c=None, scale=None):
        return [r for r in self.runs if r['phase'] == phase and (w is None or r['workload'] == w)
                and (c is None or r['config'] == c) and (scale is None or r['scale'] == scale)]

    def main_table(self, phase='main'):
        """{(w, c): summary} from the timing rounds of phase (main or large)."""
        names, configs = ('workloads', 'configs') if phase == 'main' else ('large', 'large_configs')
        ws = [w for w in self.meta.get(names, []) if self.recs(phase, w)]
        cs = [c for c in self.meta.get(configs, []) if self.recs(phase, c=c)]
        by = {}
        for r in self.recs(phase):
            by.setdefault((r['workload'], r['config']), {})[r['round']] = r
        table = {}
        for w in ws:
            for c in cs:
                rr = by.get((w, c), {})
                if not rr:
                    continue   # not run (block modes outside BLOCK_WORKLOADS)
                ok = [r for r in rr.values() if r['rc'] == 0]
                s = {'n': len(ok), 'failed': [r['rc'] for r in rr.values() if r['rc'] != 0]}
                if ok:
                    s['wall'] = statistics.median(r['wall'] for r in ok)
                    cpus = [r['cpu'] for r in ok if r.get('cpu')]
                    s['cpu'] = statistics.median(cpus) if cpus else None
                    rss = [r['rss_kb'] for r in ok if r['rss_kb']]
                    s['rss_kb'] = max(rss) if rss else None
                    sizes = [r['out_bytes'] for r in ok if r['out_bytes'] is not None]
                    s['out_bytes'] = max(sizes) if sizes else None
                    nodes = [r['ksf_nodes'] for r in ok if r['ksf_nodes'] is not None]
                    s['ksf_nodes'] = max(nodes) if nodes else None
                    s['tiers'] = next((r['tiers'] for r in ok if r.get('tiers')), None)
                    for ref, key in RATIO_REFS.items():
                        ratios = [r['wall'] / by[(w, ref)][i]['wall'] for i, r in rr.items()
                                  if r['rc'] == 0 and (w, ref) in by and i in by[(w, ref)]
                                  and by[(w, ref)][i]['rc'] == 0]
                        s[key] = statistics.median(ratios) if ratios else None
                    # The same against none by CPU time (runs of older reports have none).
                    base = by.get((w, BASE), {})
                    cpu_ratios = [r['cpu'] / base[i]['cpu'] for i, r in rr.items()
                                  if r['rc'] == 0 and r.get('cpu') and i in base and base[i]['rc'] == 0
                                  and base[i].get('cpu')]
                    s['x_none_cpu'] = statistics.median(cpu_ratios) if cpu_ratios else None
                    ann = self.data['annotate'].get(f'{phase}-{w}-{ok[0]["scale"]:g}-{c}', {})
                    s['kccf_nodes'] = ann.get('kccf_nodes')
                    s['annotate_s'] = ann.get('seconds') if 'kccf_nodes' in ann else None
                    s['annotate_err'] = ann.get('error')
                table[(w, c)] = s
        return ws, cs, table

    def targets(self, ws, table):
        lines = []
        k2 = 'kgrind-k2'
        if not any((w, k2) in table and 'wall' in table[(w, k2)] for w in ws):
            return ['(kgrind --k=2 was not measured)']

        def verdict(ok):
            return '**met**' if ok else '**not met**'
        xn = {w: table[(w, k2)].get('x_none') for w in ws if (w, k2) in table}
        xc = {w: table[(w, k2)].get('x_cg') for w in ws if (w, k2) in table}
        g_n, g_c = gmean(xn.values()), gmean(xc.values())
        lines.append('| target | measured | verdict |')
        lines.append('|---|---|---|')
        if g_n is not None:
            lines.append(f'| k=2 geometric mean ≤ 1.6× none | {g_n:.2f}× | {verdict(g_n <= 1.6)} |')
        if g_c is not None:
            lines.append(f'| k=2 geometric mean ≤ 0.5× callgrind --separate-callers=2 | {g_c:.2f}× | '
                         f'{verdict(g_c <= 0.5)} |')
        if all(v is not None for v in xn.values()):
            worst = max(xn, key=xn.get)
            lines.append(f'| k=2: no workload worse than 2.5× none | worst {worst} {xn[worst]:.2f}× | '
                         f'{verdict(xn[worst] <= 2.5)} |')
        # k=2 as run by default (inlined levels), and in physical frames as callgrind's
        for mine, frames in ((k2, ''), ('kgrind-k2-noinline', ', --inline-frames=no')):
            for what, key, fmtf in ((f'peak memory ≤ callgrind\'s (k=2{frames})', 'rss_kb',
                                     lambda v: f'{v / 1024:.1f} MB'),
                                    (f'output ≤ callgrind\'s size (k=2{frames})', 'out_bytes',
                                     lambda v: f'{v / 1024:.0f} KB')):
                for ref in ('callgrind', CALLGRIND_REF):
                    bad = []
                    pairs = 0
                    for w in ws:
                        a, b = table.get((w, mine), {}).get(key), table.get((w, ref), {}).get(key)
                        if a is not None and b is not None:
                            pairs += 1
                            if a > b:
                                bad.append(f'{w} {fmtf(a)} > {fmtf(b)} (+{100 * (a / b - 1):.0f} %)')
                    if pairs:
                        lines.append(f'| {what} vs {CONFIG_LABELS[ref]} | '
                                     f'{"; ".join(bad) if bad else f"all {pairs} workloads"} | {verdict(not bad)} |')
        for mode, target in (('intra', 4.0), ('inter', 3.0)):
            for c in (f'kgrind-{mode}-k2', f'kgrind-{mode}-roll'):
                xs = [table[(w, c)].get('x_none') for w in ws if (w, c) in table]
                g = gmean(xs) if xs and None not in xs else None
                if g is not None:
                    lines.append(f'| {CONFIG_LABELS[c]}: geometric mean ≤ {target:g}× none '
                                 f'({", ".join(w for w in ws if (w, c) in table)}) | {g:.2f}× | '
                                 f'{verdict(g <= target)} |')
        if any((w, 'kgrind-kinf') in table for w in ws):
            failed = [f'{w} ({table[(w, "kgrind-kinf")]["failed"]})' for w in ws
                      if (w, 'kgrind-kinf') in table and (table[(w, 'kgrind-kinf')]['failed']
                                                          or 'wall' not in table[(w, 'kgrind-kinf')])]
            lines.append(f'| k=inf completes on every workload | '
                         f'{"failed: " + ", ".join(failed) if failed else "all completed"} | '
                         f'{verdict(not failed)} |')
        return lines

    def main_section(self, ws, cs, table):
        """Workloads, results, geometric means and targets of the main timing rounds."""
        m = self.meta
        L = ['', '## Workloads']
        L.append('')
        for w in ws:
            native = table.get((w, 'native'), {}).get('wall')
            L.append(f'- **{w}**: {m.get("workload_desc", WORKLOAD_DESC).get(w, "")}; `{m.get("argv", {}).get(w, "")}`'
                     + (f'; native {native:.2f} s' if native else ''))
        L.append('')
        L.append('## Results')
        L.append('')
        L.append('Median wall time; × none and × cg-sc2 (callgrind --separate-callers=2) are medians of '
                 'per-round ratios; RSS is the largest peak RSS over the rounds; output is the profile '
                 'file; k-SF nodes summed over threads (`# ksf-thread` records); k-CCF nodes from '
                 '`kgrind_annotate --format=json`.')
        L.append('')
        L.append('| workload | config | median s | × none | × cg-sc2 | peak RSS MB | output KB | k-SF nodes | k-CCF nodes |')
        L.append('|---|---|--:|--:|--:|--:|--:|--:|--:|')
        for w in ws:
            for c in cs:
                s = table.get((w, c))
                if not s:
                    continue
                if 'wall' not in s:
                    L.append(f'| {w} | {CONFIG_LABELS.get(c, c)} | failed: {s["failed"]} | | | | | | |')
                    continue
                kccf = fmt_int(s.get('kccf_nodes')) if not s.get('annotate_err') else 'annotate failed'
                if c.startswith('kgrind') is False:
                    kccf = ''
                L.append(f'| {w} | {CONFIG_LABELS.get(c, c)} | {s["wall"]:.2f} | {fmt(s.get("x_none"))} | '
                         f'{fmt(s.get("x_cg"))} | {fmt_mb(s["rss_kb"])} | {fmt_kb(s.get("out_bytes"))} | '
                         f'{fmt_int(s.get("ksf_nodes"))} | {kccf} |')
        L += tiers_table(ws, cs, table)
        L.append('')
        L.append('### Geometric means over the workloads')
        L.append('')
        L.append('Wall-time ratios are the targets\' measure; the CPU-time ratio (user +')
        L.append('system, median of the per-round ratios) is steadier on a shared machine.')
        L.append('')
        L.append('| config | × none | × cg-sc2 | × none, CPU time |')
        L.append('|---|--:|--:|--:|')
        for c in cs:
            xn = [table[(w, c)].get('x_none') for w in ws if (w, c) in table]
            xc = [table[(w, c)].get('x_cg') for w in ws if (w, c) in table]
            xu = [table[(w, c)].get('x_none_cpu') for w in ws if (w, c) in table]
            L.append(f'| {CONFIG_LABELS.get(c, c)} | {fmt(gmean(xn))} | {fmt(gmean(xc))} | {fmt(gmean(xu))} |')
        L.append('')
        L.append('## Targets')
        L.append('')
        L += self.targets(ws, table)
        pending = [n for n, _, _ in BLOCK_CONFIGS if n not in m.get('configs', [])]
        if pending:
            L.append('')
            L.append('Not measured in this run: ' + ', '.join(pending) + ' (--configs).')
        return L

    def render(self):
        m = self.meta
        ws, cs, table = self.main_table()
        L = [f'# kgrind benchmark suite — {m.get("date", "")}', '']
        L.append(f'Command: `{m.get("command")}`  ')
        L.append(f'Machine: {m.get("nproc")} CPUs, {m.get("cpu")}, {m.get("mem")} RAM, Linux {m.get("kernel")}; '
                 f'{m.get("valgrind")}; {m.get("gcc")}; {m.get("bzip2")}; sqlite3 {m.get("sqlite3")}  ')
        L.append(f'kgrind: git {m.get("git")}, tool binary sha256 {m.get("tool_sha256")}  ')
        L.append(f'Runs: {m.get("runs")} interleaved rounds at scale {m.get("scale")}; load average '
                 f'{" ".join(m.get("loadavg_start", []))} at start, {" ".join(m.get("loadavg_end", []) or ["?"])} '
                 f'at end; {m.get("minutes", 0):.0f} min in all.')
        L.append(f'Peak RSS from {m.get("rss_source")}.')
        for other, phases, om in self.merged:
            L.append('')
            L.append(f'Merged: the {" and ".join(phases)} runs come from `{om.get("command")}` '
                     f'({om.get("date")}, git {om.get("git")}, tool sha256 {om.get("tool_sha256")}, '
                     f'peak RSS from {om.get("rss_source", "wait4")}).')
        if ws:
            L += self.main_section(ws, cs, table)
        L.append('')
        L += titled_table('Growth: run time against input length',
                          '| workload | input | config | median s | × none | peak RSS MB | k-SF nodes |',
                          '|---|--:|---|--:|--:|--:|--:|', self.growth_table())
        L += titled_table('Forest size and memory against k',
                          '| workload | k | wall s | peak RSS MB | output KB | k-SF nodes | k-CCF nodes |',
                          '|---|--:|--:|--:|--:|--:|--:|', self.ksweep_table())
        L += self.large_section()
        L += churn.section(self.data, fmt_mb, target_row)
        L += events_phase.section(self.runs, fmt_mb, target_row)
        L += events_exact.section(self.data.get('events_exact', {}))
        fails = [r for r in self.runs if r['rc'] != 0]
        if fails:
            L.append('## Failed runs')
            L.append('')
            for r in fails:
                L.append(f'- {r["phase"]} {r["workload"]} ×{r["scale"]:g} {r["config"]} round {r["round"]}: '
                         f'exit {r["rc"]} after {r["wall"]:.1f} s, peak RSS {fmt_mb(r["rss_kb"])} MB')
            L.append('')
        charts = sorted(p.name for p in (self.out / 'charts').glob('*.png')) if (self.out / 'charts').exists() else []
        if charts:
            L.append('## Charts')
            L.append('')
            for c in charts:
                L.append(f'![{c}](charts/{c})')
            L.append('')
        return '\n'.join(L)

    def large_section(self):
        """Per large program: its costs under every configuration and the large programs' targets."""
        ws, cs, table = self.main_table('large')
        if not ws:
            return []
        m = self.meta
        L = ['## Large programs', '',
             f'{m.get("large_runs")} interleaved round(s) at scale {m.get("large_scale")}; '
             f'{", ".join(f"{k} {v}" for k, v in m.get("large_versions", {}).items() if k in ws)}'
             + (f'; the preprocessed cc1plus input has {fmt_int(m["cc1plus_input_lines"])} lines'
                if m.get('cc1plus_input_lines') else '')
             + '. Median wall time and CPU time (user + system: steadier on a shared machine; the targets '
               'are on wall time); × none and × k=2 are medians of the per-round wall-time ratios; the k-SF '
               'nodes are summed over threads.', '']
        for w in ws:
            native = table.get((w, 'native'), {}).get('wall')
            L.append(f'- **{w}**: {m.get("large_desc", LARGE_DESC).get(w, "")}; '
                     f'`{m.get("large_argv", {}).get(w, "")}`' + (f'; native {native:.2f} s' if native else ''))
        L.append('')
        for w in ws:
            L += [f'### {w}', '',
                  '| config | median s | CPU s | × none | × k=2 | peak RSS MB | profile MB | k-SF nodes |',
                  '|---|--:|--:|--:|--:|--:|--:|--:|']
            for c in cs:
                s = table.get((w, c))
                if s is None:
                    continue
                if 'wall' not in s:
                    L.append(f'| {CONFIG_LABELS.get(c, c)} | failed: {s["failed"]} | | | | | | |')
                    continue
                size = fmt(s['out_bytes'] / 2 ** 20) if s.get('out_bytes') else '–'
                L.append(f'| {CONFIG_LABELS.get(c, c)} | {s["wall"]:.2f} | {fmt(s.get("cpu"))} | '
                         f'{fmt(s.get("x_none"))} | '
                         f'{fmt(s.get("x_k2"))} | {fmt_mb(s.get("rss_kb"))} | {size} | '
                         f'{fmt_int(s.get("ksf_nodes"))} |')
            L += tiers_table([w], cs, table)
            L += ['', '| target | measured | verdict |', '|---|---|---|']
            L += self.large_targets(w, table)
            L.append('')
        ann = self.annotate_default_table()
        if ann:
            L += ['### kgrind_annotate, default report', '',
                  'Wall time and peak RSS (`/usr/bin/time -f %M`) of `kgrind_annotate <profile>`, output discarded.',
                  '', '| profile | profile MB | s | CPU s | peak RSS MB | exit |', '|---|--:|--:|--:|--:|--:|']
            L += ann + ['']
        return L

    def large_targets(self, w, table):
        rows = []
        for c, ref, limit in LARGE_TIME_TARGETS:
            x = table.get((w, c), {}).get(RATIO_REFS[ref])
            rows.append(target_row(f'time {CONFIG_LABELS[c]} ≤ {limit:g}× {CONFIG_LABELS[ref]}',
                                   None if x is None else f'{x:.2f}×', None if x is None else x <= limit))
        k2, kinf, cg = (table.get((w, c), {}) for c in ('kgrind-k2', 'kgrind-kinf', 'callgrind'))
        for mine, frames in ((k2, ''), (table.get((w, 'kgrind-k2-noinline'), {}), ', --inline-frames=no')):
            a, b = mine.get('rss_kb'), cg.get('rss_kb')
            if frames and not a:
                continue
            rows.append(target_row(f'peak RSS k=2{frames} ≤ callgrind\'s',
                                   a and b and f'{fmt_mb(a)} MB vs {fmt_mb(b)} MB', a and b and a <= b))
        nodes = kinf.get('ksf_nodes')
        for what, field, unit, per_node in LARGE_GROWTH_TARGETS:
            a, b = kinf.get(field), k2.get(field)
            ok = measured = None
            if a and b and nodes:
                over = (a - b) * unit / nodes
                measured = (f'{a * unit / 2 ** 20:.1f} MB = k=2\'s {b * unit / 2 ** 20:.1f} MB '
                            f'+ {over:.0f} B × {fmt_int(nodes)} nodes')
                ok = over <= per_node
            rows.append(target_row(f'{what} k=inf ≤ k=2\'s + {per_node} B per k-SF node', measured, ok))
        prog, c, seconds, rss_kb = ANNOTATE_TARGET
        if w == prog:
            ann = self.data.get('annotate_default', {}).get(f'large-{w}-{self.meta.get("large_scale", 1):g}-{c}')
            ok = measured = None
            if ann:
                measured = f'{ann["seconds"]:.1f} s, {fmt_mb(ann["rss_kb"])} MB' + \
                           ('' if ann['rc'] == 0 else f' (exit {ann["rc"]})')
                ok = ann['rc'] == 0 and ann['seconds'] < seconds and ann['rss_kb'] < rss_kb
            rows.append(target_row(f'kgrind_annotate default report on {CONFIG_LABELS[c]} < {seconds:g} s '
                                   f'and {rss_kb / 2 ** 20:g} GB', measured, ok))
        return rows

    def annotate_default_table(self):
        rows = []
        for stem, a in sorted(self.data.get('annotate_default', {}).items()):
            rows.append(f'| {stem} | {fmt(a["profile_bytes"] / 2 ** 20)} | {a["seconds"]:.1f} | {a["cpu"]:.1f} | '
                        f'{fmt_mb(a["rss_kb"])} | {a["rc"]} |')
        return rows

    def growth_table(self):
        rows = []
        recs = self.recs('growth')
        ws = list(dict.fromkeys(r['workload'] for r in recs))
        base = self.meta.get('scale', 1)
        for w in ws:
            scales = sorted({r['scale'] for r in recs if r['workload'] == w})
            for sc in scales:
                none = {r['round']: r['wall'] for r in self.recs('growth', w, 'none', sc) if r['rc'] == 0}
                for c in GROWTH_CONFIGS:
                    rr = [r for r in self.recs('growth', w, c, sc) if r['rc'] == 0]
                    if not rr:
                        continue
                    ratios = [r['wall'] / none[r['round']] for r in rr if r['round'] in none]
                    nodes = [r['ksf_nodes'] for r in rr if r['ksf_nodes'] is not None]
                    rows.append([w, f'{sc / base:g}×', CONFIG_LABELS.get(c, c),
                                 f'{statistics.median(r["wall"] for r in rr):.2f}',
                                 fmt(statistics.median(ratios)) if ratios else '–',
                                 fmt_mb(max((r['rss_kb'] or 0) for r in rr) or None),
                                 fmt_int(max(nodes)) if nodes else ''])
        return rows

    def ksweep_table(self):
        rows = []
        recs = self.recs('ksweep')
        for r in recs:
            ann = self.data['annotate'].get(f'ksweep-{r["workload"]}-{r["scale"]:g}-{r["config"]}', {})
            kccf = fmt_int(ann.get('kccf_nodes')) if 'kccf_nodes' in ann else ann.get('error', '–')
            if r['rc'] != 0:
                rows.append([r['workload'], r['k'], f'failed ({r["rc"]})', fmt_mb(r['rss_kb']), '', '', ''])
                continue
            rows.append([r['workload'], r['k'], f'{r["wall"]:.2f}', fmt_mb(r['rss_kb']),
                         fmt_kb(r['out_bytes']), fmt_int(r['ksf_nodes']), kccf])
        return rows

    # -- charts -------------------------------------------------------------
    def charts(self):
        try:
            import matplotlib
            matplotlib.use('Agg')
            import matplotlib.pyplot as plt
            from matplotlib import ticker
        except ImportError:
            print('charts skipped: no matplotlib (apt-get install -y python3-matplotlib; use /usr/bin/python3)')
            return
        cdir = self.out / 'charts'
        cdir.mkdir(exist_ok=True)
        ws, cs, table = self.main_table()
        vg = [c for c in cs if c not in ('native', BASE)]

        def grouped(metric, fname, title, ylabel, log, configs, scale=1.0, refline=None, labels=None):
            fig, ax = plt.subplots(figsize=(max(8, 1.6 * len(ws) + 3), 5.2))
            width = 0.8 / max(1, len(configs))
            for i, c in enumerate(configs):
                vals = [(table.get((w, c), {}).get(metric) or 0) * scale for w in ws]
                ax.bar([x + i * width for x in range(len(ws))], vals, width, label=CONFIG_LABELS.get(c, c))
            ax.set_xticks([x + width * (len(configs) - 1) / 2 for x in range(len(ws))])
            ax.set_xticklabels(ws)
            if log:
                ax.set_yscale('log')
                plain = ticker.FuncFormatter(lambda v, _: f'{v:g}')
                ax.yaxis.set_major_formatter(plain)
                ax.yaxis.set_minor_formatter(plain)
                ax.tick_params(axis='y', which='minor', labelsize=7)
            else:
                ax.set_ylim(bottom=0)
            if labels:
                for cont in ax.containers:
                    ax.bar_label(cont, fmt=labels, fontsize=6, rotation=90, padding=2)
                ax.margins(y=0.12)
            if refline:
                ax.axhline(refline[0], color='black', linestyle='--', linewidth=1, label=refline[1])
            ax.set_ylabel(ylabel)
            ax.set_title(title)
            ax.grid(axis='y', alpha=0.3, which='both')
            ax.legend(fontsize=8, ncol=2)
            fig.tight_layout()
            fig.savefig(cdir / fname, dpi=110)
            plt.close(fig)

        if ws and vg:
            grouped('x_none', 'slowdown_vs_none.png', 'Slowdown relative to valgrind --tool=none (median of rounds)',
                    '× none (log scale)', True, vg, refline=(1.6, 'target k=2: 1.6× none'), labels='%.1f')
            grouped('rss_kb', 'peak_rss.png', 'Peak RSS', 'MB', False, [c for c in cs if c != 'native'],
                    scale=1 / 1024, labels='%.0f')
            grouped('out_bytes', 'output_size.png', 'Output file size', 'KB (log scale)', True,
                    [c for c in cs if self.configs_with_output(c, ws, table)], scale=1 / 1024)
        g = self.recs('growth')
        if g:
            gws = list(dict.fromkeys(r['workload'] for r in g))
            fig, axes = plt.subplots(1, len(gws), figsize=(6 * len(gws), 4.6), squeeze=False)
            base = self.meta.get('scale', 1)
            for ax, w in zip(axes[0], gws):
                for c in GROWTH_CONFIGS:
                    pts = {}
                    for r in g:
                        if r['workload'] == w and r['config'] == c and r['rc'] == 0:
                            pts.setdefault(r['scale'] / base, []).append(r['wall'])
                    if pts:
                        xs = sorted(pts)
                        ax.plot(xs, [statistics.median(pts[x]) for x in xs], marker='o',
                                label=CONFIG_LABELS.get(c, c))
                ax.set_xlabel('input length (× scale-1 input)')
                ax.set_ylabel('wall time, s')
                ax.set_xticks(GROWTH_FACTORS)
                ax.set_title(f'{w}: run time against input length')
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(cdir / 'growth.png', dpi=110)
            plt.close(fig)
        k = [r for r in self.recs('ksweep') if r['rc'] == 0]
        if k:
            kws = list(dict.fromkeys(r['workload'] for r in k))
            fig, axes = plt.subplots(1, 3, figsize=(16, 4.8))
            for w in kws:
                rr = [r for r in k if r['workload'] == w]
                labels = [r['k'] for r in rr]
                xs = range(len(rr))
                kccf = [self.data['annotate'].get(f'ksweep-{w}-{r["scale"]:g}-{r["config"]}', {}).get('kccf_nodes')
                        for r in rr]
                axes[0].plot(xs, [r['ksf_nodes'] for r in rr], marker='o', label=f'{w} k-SF')
                if any(v is not None for v in kccf):
                    axes[0].plot(xs, [v if v is not None else float('nan') for v in kccf], marker='s',
                                 linestyle='--', label=f'{w} k-CCF')
                axes[1].plot(xs, [(r['rss_kb'] or float('nan')) / 1024 for r in rr], marker='o', label=w)
                axes[2].plot(xs, [r['wall'] for r in rr], marker='o', label=w)
                for ax in axes:
                    ax.set_xticks(list(xs))
                    ax.set_xticklabels(labels)
            axes[0].set_yscale('log')
            axes[0].set_title('forest size against k')
            axes[0].set_ylabel('nodes (log scale)')
            axes[1].set_ylim(bottom=0)
            axes[2].set_ylim(bottom=0)
            axes[1].set_title('peak RSS against k')
            axes[1].set_ylabel('MB')
            axes[2].set_title('wall time against k')
            axes[2].set_ylabel('s')
            for ax in axes:
                ax.set_xlabel('k')
                ax.grid(alpha=0.3)
                ax.legend(fontsize=8)
            fig.tight_layout()
            fig.savefig(cdir / 'ksweep.png', dpi=110)
            plt.close(fig)

        self.large_chart(plt, ticker, cdir)

    def large_chart(self, plt, ticker, cdir):
        """Cost against k on the large programs: time (× none), peak RSS,
        profile size; dotted, in the program's colour: callgrind's value."""
        ws, cs, table = self.main_table('large')
        ks = [c for c in LARGE_KS if c in cs]
        if not ws or not ks:
            return
        k2_limit = next(limit for c, ref, limit in LARGE_TIME_TARGETS if (c, ref) == ('kgrind-k2', BASE))
        panels = [('x_none', 1, 'wall time, × none', False), ('rss_kb', 1 / 1024, 'peak RSS, MB (log scale)', True),
                  ('out_bytes', 1 / 2 ** 20, 'profile size, MB (log scale)', True)]
        fig, axes = plt.subplots(1, len(panels), figsize=(16, 4.8))
        xs = range(len(ks))
        plain = ticker.FuncFormatter(lambda v, _: f'{v:g}')
        for ax, (field, scale, title, log) in zip(axes, panels):
            for w in ws:
                vals = [table.get((w, c), {}).get(field) for c in ks]
                line, = ax.plot(xs, [v * scale if v else float('nan') for v in vals], marker='o', label=w)
                ref = table.get((w, 'callgrind'), {}).get(field)
                if ref:
                    ax.axhline(ref * scale, color=line.get_color(), linestyle=':', linewidth=1,
                               label=f'{w}: callgrind')
            if field == 'x_none':
                ax.axhline(k2_limit, color='black', linestyle='--', linewidth=1,
                           label=f'target k=2: {k2_limit:g}× none')
            ax.set_xticks(list(xs))
            ax.set_xticklabels([self.k_of(c) for c in ks])
            ax.set_xlabel('k')
            ax.set_title(title)
            if log:
                ax.set_yscale('log')
                ax.yaxis.set_major_formatter(plain)
                ax.yaxis.set_minor_formatter(plain)
                ax.tick_params(axis='y', which='minor', labelsize=7)
            else:
                ax.set_ylim(bottom=0)
            ax.grid(alpha=0.3, which='both')
            ax.legend(fontsize=7)
        fig.suptitle('Large programs: cost of kgrind against k')
        fig.tight_layout()
        fig.savefig(cdir / 'large_cost_vs_k.png', dpi=110)
        plt.close(fig)

    @staticmethod
    def k_of(c):
        return c.rsplit('-k', 1)[1]

    @staticmethod
    def configs_with_output(c, ws, table):
        return any(table.get((w, c), {}).get('out_bytes') for w in ws)

    def update_docs(self, path):
        """Replaces the part of path between the suite markers by this report
        (without the charts, which stay in the results folder)."""
        begin, end = '<!-- suite:begin -->', '<!-- suite:end -->'
        text = path.read_text() if path.exists() else f'# Benchmark results\n\n{begin}\n{end}\n'
        if begin not in text or end not in text:
            text = text.rstrip('\n') + f'\n\n{begin}\n{end}\n'
        body = self.render().split('\n## Charts')[0].rstrip('\n')
        body = body.replace('# kgrind benchmark suite', '## Latest run', 1)
        body = '\n'.join(('#' + l) if l.startswith('##') and not l.startswith('## Latest run') else l
                          for l in body.split('\n'))
        head, rest = text.split(begin, 1)
        tail = rest.split(end, 1)[1]
        path.write_text(f'{head}{begin}\n{body}\n{end}{tail}')
        return path

    def write(self, charts=True):
        if charts:
            self.charts()
        text = self.render()
        (self.out / 'report.md').write_text(text + '\n')
        return self.out / 'report.md'
