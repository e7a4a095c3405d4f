#!/usr/bin/python3
"""The pictures of docs/manual.md's "Inlined functions": examples/lookups.cpp
built with g++ -g -O2 (std::map's find, its comparisons and std::string's
operators inlined) under kgrind --k=inf --inline-frames=yes.

    docs/img/make_inline_pictures.py [workdir]   (from the source tree, after ./setup.sh --build)

  pprof-traces-inline.png      go tool pprof -traces: two stacks through Scope::lookup,
                               the inlined levels marked (inline), as text in chromium
  speedscope-inline.png        kgrind_annotate --format=speedscope, speedscope's
                               Left Heavy view (identical stacks together)
The KCachegrind picture (kcachegrind-inline.png) is make_kcachegrind_pictures.sh's.
Needs go, npm, chromium; npm packages go into workdir
(default /tmp/kgrind-inline-pictures)."""
import html
import pathlib
import subprocess
import sys

from make_pictures import IMG, ROOT, annotate, sh, speedscope_page, screenshot


def traces_picture(work, profile):
    pb = work / 'lookups.pb.gz'
    pb.write_bytes(annotate(work, '--format=pprof', profile))
    text = sh('go', 'tool', 'pprof', '-traces', pb, capture_output=True, text=True).stdout
    head, *blocks = text.split('-----------+-------------------------------------------------------\n')
    # the two heaviest stacks that reach std::map's inlined _M_lower_bound
    # from Scope::lookup
    keep = sorted((b for b in blocks if 'Scope::lookup' in b and '_M_lower_bound' in b),
                  key=lambda b: -int(b.split()[0]))[:2]
    rule = '-----------+-------------------------------------------------------\n'
    text = '$ go tool pprof -traces lookups.pb.gz\n' + head + rule + rule.join(keep) + rule + '...'
    page = work / 'traces.html'
    page.write_text('<!doctype html><html><body style="margin: 12px; background: #fff">'
                    '<pre style="font: 14px DejaVu Sans Mono, monospace; margin: 0">%s</pre></body></html>'
                    % html.escape(text))
    screenshot(f'file://{page}', IMG / 'pprof-traces-inline.png', height=17 * text.count('\n') + 40)


def speedscope_picture(work, profile):
    url = speedscope_page(work, profile, 'lookups', 'left-heavy')
    screenshot(url, IMG / 'speedscope-inline.png')


def main():
    work = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else '/tmp/kgrind-inline-pictures')
    work.mkdir(parents=True, exist_ok=True)
    sh('g++', '-g', '-O2', ROOT / 'examples' / 'lookups.cpp', '-o', work / 'lookups')
    profile = 'lookups.kg'
    sh(ROOT / 'build' / 'kgrind' / 'vg-in-place', '--tool=kgrind', '-q', '--k=inf', '--inline-frames=yes',
       f'--kgrind-out-file={profile}', './lookups', capture_output=True, cwd=work)
    traces_picture(work, profile)
    speedscope_picture(work, profile)


if __name__ == '__main__':
    main()
