#!/usr/bin/python3
"""The pictures of docs/manual.md, made from a real program's profile:
Debian's perl running bench/workloads/plwork.pl under kgrind at k = inf.

    docs/img/make_pictures.py [--reuse] [workdir]   (from the source tree, after ./setup.sh --build)

  flamegraph.png  kgrind_annotate --format=folded, drawn by d3-flame-graph (npm)
  speedscope.png  kgrind_annotate --format=speedscope, opened by speedscope (npm)
  callgraph.png   kgrind_annotate --format=dot --k=2 --top=14, drawn by Graphviz dot
Both pages are screenshot by Debian's chromium, headless.  Needs npm, chromium,
graphviz, fonts-noto-color-emoji (speedscope's buttons); the npm packages go
into workdir (default /tmp/kgrind-pictures).  --reuse draws workdir's profile
again instead of running perl anew (the numbers in docs/manual.md are that
run's)."""
import base64
import json
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
IMG = ROOT / 'docs' / 'img'
ANNOTATE = ROOT / 'build' / 'perl' / 'kgrind_annotate'
WIDTH, HEIGHT = 1400, 760


def sh(*cmd, **kw):
    print('+', ' '.join(map(str, cmd)), file=sys.stderr)
    return subprocess.run(list(map(str, cmd)), check=True, **kw)


def annotate(work, *args):
    return sh(ANNOTATE, *args, capture_output=True, cwd=work).stdout


def npm(work, *packages):
    if not all((work / 'node_modules' / p.split('@')[0] / 'package.json').exists() for p in packages):
        sh('npm', 'install', '--no-audit', '--no-fund', '--prefix', work, *packages)
    return work / 'node_modules'


def screenshot(url, png, height=HEIGHT):
    sh('chromium', '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
       '--virtual-time-budget=10000', f'--window-size={WIDTH},{height}', f'--screenshot={png}', url,
       capture_output=True)


def folded_tree(folded):
    """Folded stacks ("a;b;c 12") as d3-flame-graph's tree of self values."""
    root = {'name': 'all', 'value': 0, 'children': {}}
    for line in folded.splitlines():
        stack, n = line.rsplit(' ', 1)
        node = root
        for frame in stack.split(';'):
            node = node['children'].setdefault(frame, {'name': frame, 'value': 0, 'children': {}})
        node['value'] += int(n)

    def listed(node):
        return {**node, 'children': [listed(c) for c in node['children'].values()]}
    return listed(root)


FLAME_PAGE = """<!doctype html><html><head><meta charset="utf-8">
<link rel="stylesheet" href="{mods}/d3-flame-graph/dist/d3-flamegraph.css">
<style>body {{ font-family: Helvetica, sans-serif; margin: 8px; }} h3 {{ margin: 4px 0 8px; font-weight: normal; }}</style>
</head><body><h3>{title}</h3><div id="chart"></div>
<script src="{mods}/d3/dist/d3.min.js"></script>
<script src="{mods}/d3-flame-graph/dist/d3-flamegraph.umd.min.js"></script>
<script>
var chart = flamegraph.default().width({width}).cellHeight(17).selfValue(true)
    .transitionDuration(0).minFrameSize(2).sort(true).title('');
d3.select('#chart').datum({data}).call(chart);
</script></body></html>
"""


def flame_graph(work, profile):
    mods = npm(work, 'd3@7', 'd3-flame-graph@5')
    tree = folded_tree(annotate(work, '--format=folded', profile).decode())
    total = json.loads(annotate(work, '--format=json', '--k=0', profile))['total']['Ir']
    page = work / 'flamegraph.html'
    page.write_text(FLAME_PAGE.format(
        mods=mods, width=WIDTH - 16, data=json.dumps(tree),
        title=f'perl plwork.pl, kgrind --k=inf ({total:,} Ir): kgrind_annotate --format=folded, '
              'drawn by d3-flame-graph'))
    screenshot(f'file://{page}', IMG / 'flamegraph.png', height=440)


def speedscope_page(work, profile, stem, view='sandwich'):
    """The speedscope app's page (npm) loading profile's speedscope export."""
    app = npm(work, 'speedscope') / 'speedscope'
    data = work / f'{stem}.speedscope.json'
    data.write_bytes(annotate(work, '--format=speedscope', profile))
    loader = work / 'load.js'
    loader.write_text('speedscope.loadFileFromBase64(%s, %s)' % (
        json.dumps(data.name), json.dumps(base64.b64encode(data.read_bytes()).decode())))
    return f'file://{app}/dist/release/index.html#localProfilePath={loader}&view={view}'


def speedscope(work, profile):
    screenshot(speedscope_page(work, profile, 'perl'), IMG / 'speedscope.png')


def call_graph(work, profile):
    dot = annotate(work, '--format=dot', '--k=2', '--top=14', profile)
    sh('dot', '-Tpng', '-Gdpi=72', '-o', IMG / 'callgraph.png', input=dot)


def main():
    args = sys.argv[1:]
    reuse = '--reuse' in args
    args = [a for a in args if a != '--reuse']
    work = pathlib.Path(args[0] if args else '/tmp/kgrind-pictures')
    work.mkdir(parents=True, exist_ok=True)
    profile = 'perl.kgrind.out'
    if not (reuse and (work / profile).exists()):
        sh(ROOT / 'build' / 'kgrind' / 'vg-in-place', '--tool=kgrind', '--k=inf', f'--kgrind-out-file={profile}',
           '/usr/bin/perl', ROOT / 'bench' / 'workloads' / 'plwork.pl', '1', capture_output=True, cwd=work)
    flame_graph(work, profile)
    speedscope(work, profile)
    call_graph(work, profile)


if __name__ == '__main__':
    main()
