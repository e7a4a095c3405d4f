"""docs/manual.md is checked against the tools it documents:

- every option that `valgrind --tool=kgrind --help`, `kgrind_annotate --help`
  and `kgrind_control --help` print is in the manual's option reference and
  in at least one example command;
- the manual's runnable blocks (```sh) run, in order, in one scratch
  directory holding a copy of examples/ and include/, with a `valgrind` on
  PATH that runs the uninstalled tool and build/perl on PATH; each exits
  with status 0 (or the status an `<!-- exit: N -->` line just above it
  gives), and each line of the output excerpt that follows it (a ```text
  block) appears in its output (whitespace runs compared as one space,
  percentages and pids not compared; a `...` line stands for lines left out).

A block may use what the blocks before it made (programs, profiles), so
the blocks run as one sequence: select none of them alone (`-k`).
`python3 tests/test_manual.py` runs the blocks and prints each one's output:
what the manual's excerpts are taken from.
"""
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
BUILD = pathlib.Path(os.environ.get('KGRIND_BUILD', ROOT / 'build'))
MANUAL = ROOT / 'docs' / 'manual.md'
REFERENCE_HEADING = '## Option reference'
BLOCK_TIMEOUT = 120

FENCE = re.compile(r'^```(\w*)\n(.*?)^```\n', re.M | re.S)
EXIT_MARK = re.compile(r'<!-- exit: (\d+) -->\s*$')


def manual_blocks(text=None):
    """The runnable blocks: (line, commands, expected status, excerpt lines)."""
    text = MANUAL.read_text() if text is None else text
    fences = list(FENCE.finditer(text))
    blocks = []
    for i, m in enumerate(fences):
        if m.group(1) != 'sh':
            continue
        before = text[:m.start()].rstrip('\n').rsplit('\n', 1)[-1]
        mark = EXIT_MARK.search(before)
        status = int(mark.group(1)) if mark else 0
        excerpt = []
        if i + 1 < len(fences):
            nxt = fences[i + 1]
            if nxt.group(1) == 'text' and not text[m.end():nxt.start()].strip():
                excerpt = [l for l in nxt.group(2).splitlines() if l.strip() and l.strip() != '...']
        line = text.count('\n', 0, m.start()) + 1
        blocks.append((line, m.group(2), status, excerpt))
    return blocks


def normalized(line):
    # Shares and the number of a thread's contexts count the dynamic
    # linker's start-up, which depends on the launcher: Debian's
    # /usr/bin/valgrind exports LD_LIBRARY_PATH=/usr/lib/debug, which ld.so
    # parses (calls.c: 365 2-contexts; 348 under a Valgrind built from
    # source). The program's own rows are compared whole.
    line = re.sub(r'-?\d[\d,]*(\.\d+)?%', 'N%', line)
    line = re.sub(r'\b(\d+) of [\d,]+ shown', r'\1 of N shown', line)
    line = re.sub(r'==\d+==', '==PID==', line)
    return ' '.join(line.split())


def scratch_dir():
    """A directory like the source tree's top for the blocks: examples/,
    include/, and bin/valgrind running the uninstalled tool."""
    work = pathlib.Path(tempfile.mkdtemp(prefix='kgrind-manual-'))
    shutil.copytree(ROOT / 'examples', work / 'examples')
    shutil.copytree(ROOT / 'include', work / 'include')
    (work / 'bin').mkdir()
    wrapper = work / 'bin' / 'valgrind'
    wrapper.write_text(f'#!/bin/sh\nexec "{BUILD}/kgrind/vg-in-place" "$@"\n')
    wrapper.chmod(0o755)
    return work


def block_env(work):
    # A small fixed environment: the C library's start-up, and so the
    # profiles' totals, depend on it.
    return {'PATH': f'{work}/bin:{BUILD}/perl:/usr/bin:/bin', 'HOME': str(work),
            'LC_ALL': 'C', 'TERM': 'dumb'}


def run_block(work, commands):
    return subprocess.run(['bash', '-e', '-c', commands], cwd=work, env=block_env(work),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=BLOCK_TIMEOUT)


def help_text(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    return r.stdout + r.stderr


def help_options():
    """The options of the three --help outputs, as groups of names of one
    option (`-l, --list`), plus each --format value as `--format=<value>`."""
    tool = help_text([str(BUILD / 'kgrind' / 'vg-in-place'), '--tool=kgrind', '--help'])
    tool = tool.split('user options for kgrind:', 1)[1].split('\n\n', 1)[0]
    annotate = help_text([str(BUILD / 'perl' / 'kgrind_annotate'), '--help'])
    control = help_text([str(BUILD / 'perl' / 'kgrind_control'), '--help'])
    groups = []
    for text in (tool, annotate, control):
        for line in text.splitlines():
            m = re.match(r'\s+(-\S.*?)(\s{2,}|$)', line)
            if m:
                names = re.findall(r'(?<![\w-])(--?[A-Za-z][\w-]*)', m.group(1))
                if names:
                    groups.append(tuple(names))
    formats = re.search(r'--format=FORMAT.*?\n((?:\s{6}\w+\s.*\n|\s{18,}.*\n)+)', annotate)
    for value in re.findall(r'^\s{6}(\w+)\s', formats.group(1), re.M):
        groups.append((f'--format={value}',))
    return groups


def mentions(text, name):
    if '=' in name:
        return re.search(re.escape(name) + r'(?![\w-])', text) is not None
    return re.search(r'(?<![\w-])' + re.escape(name) + r'(?![\w-])', text) is not None


def test_every_option_is_documented_and_exemplified():
    text = MANUAL.read_text()
    reference = text.split(REFERENCE_HEADING, 1)[1].split('\n## ', 1)[0]
    examples = '\n'.join(b[1] for b in manual_blocks(text))
    groups = help_options()
    assert len(groups) > 50, groups
    undocumented = [n for g in groups for n in g if not mentions(reference, n)]
    unused = [' '.join(g) for g in groups if not any(mentions(examples, n) for n in g)]
    assert not undocumented, f'not in the option reference: {undocumented}'
    assert not unused, f'in no example command: {unused}'


def heading_anchor(heading):
    # GitHub's: lower case, punctuation but '-' and '_' dropped, spaces to '-'.
    return re.sub(r'[^\w\- ]', '', heading.strip().lower()).replace(' ', '-')


def test_links_lead_somewhere():
    text = MANUAL.read_text()
    prose = FENCE.sub('', text)
    anchors = {heading_anchor(h) for h in re.findall(r'^#+ (.*)$', prose, re.M)}
    broken = []
    for target in re.findall(r'\]\(([^)\s]+)\)', prose):
        if target.startswith(('http://', 'https://')):
            continue
        path, _, anchor = target.partition('#')
        if path and not (MANUAL.parent / path).exists():
            broken.append(target)
        elif not path and anchor not in anchors:
            broken.append(target)
    assert not broken, f'links to nothing: {broken}'


BLOCKS = manual_blocks()


@pytest.fixture(scope='module')
def work():
    d = scratch_dir()
    yield d
    shutil.rmtree(d, ignore_errors=True)


# The blocks run in order in one directory (a block uses what the ones
# before it made): one pytest-xdist worker runs them all (tests/run's
# --dist loadgroup).
@pytest.mark.xdist_group('manual_blocks')
@pytest.mark.parametrize('line,commands,status,excerpt', BLOCKS,
                         ids=[f'line{b[0]}' for b in BLOCKS])
def test_block_runs(work, line, commands, status, excerpt):
    r = run_block(work, commands)
    assert r.returncode == status, f'manual.md:{line}: exit status {r.returncode}\n{r.stdout}'
    out = [normalized(l) for l in r.stdout.splitlines()]
    missing = [l for l in excerpt if not any(normalized(l) in o for o in out)]
    assert not missing, f'manual.md:{line}: not in the output: {missing}\n{r.stdout}'


if __name__ == '__main__':
    work = scratch_dir()
    for line, commands, status, _ in manual_blocks():
        r = run_block(work, commands)
        print(f'===== manual.md:{line} (exit {r.returncode}, expected {status})')
        print(commands.rstrip())
        print('-----')
        print(r.stdout.rstrip())
    if '--keep' in sys.argv:
        print('kept', work)
    else:
        shutil.rmtree(work, ignore_errors=True)
