"""kgrind_annotate installed: `make install` puts the script in $(bindir),
perl/lib/KGrind in $(pkgdatadir)/perl5, where the installed script finds
its modules, away from the source tree, and the scripts' manual pages in
$(mandir)/man1.  Only the Perl part is installed, into a temporary prefix."""
import os
import re
import shutil
import subprocess

import pytest

from conftest import VALGRIND
from test_annotate import ROOT, THESIS


def test_installed_script_finds_its_modules(tmp_path):
    if not (ROOT / 'configure').exists():
        pytest.skip('no configure script (run ./setup.sh --build first)')
    build, prefix = tmp_path / 'build', tmp_path / 'prefix'
    build.mkdir()
    subprocess.run([str(ROOT / 'configure'), '-q', f'--prefix={prefix}', *VALGRIND.configure_args()], cwd=build,
                   check=True, capture_output=True)
    subprocess.run(['make', '-s', 'install-binSCRIPTS', 'install-dist_perlmodDATA', 'install-dist_perlreadDATA',
                    'install-dist_perlcheckDATA', 'install-dist_perlexportDATA'], cwd=build, check=True,
                   capture_output=True)
    script = prefix / 'bin' / 'kgrind_annotate'
    modules = sorted(p.relative_to(ROOT / 'perl' / 'lib') for p in (ROOT / 'perl' / 'lib').rglob('*.pm'))
    installed = prefix / 'share' / 'kgrind' / 'perl5'
    assert sorted(p.relative_to(installed) for p in installed.rglob('*.pm')) == modules
    # moved away from the build tree (no lib/ next to it): the installed modules
    alone = tmp_path / 'elsewhere'
    alone.mkdir()
    shutil.copy(script, alone / 'kgrind_annotate')
    shutil.rmtree(build)
    for fmt in ('text', 'pprof', 'speedscope', 'dot'):
        r = subprocess.run([str(alone / 'kgrind_annotate'), f'--format={fmt}', str(THESIS)], capture_output=True)
        assert r.returncode == 0 and r.stderr == b'' and r.stdout, (fmt, r.stderr)
    shutil.rmtree(installed)
    r = subprocess.run([str(alone / 'kgrind_annotate'), str(THESIS)], capture_output=True, text=True)
    assert r.returncode != 0 and 'KGrind' in r.stderr


def installed_man_pages(tmp_path):
    """The man pages installed into a temporary prefix (`make install-man`)."""
    if not (ROOT / 'configure').exists():
        pytest.skip('no configure script (run ./setup.sh --build first)')
    if not shutil.which('man') or not shutil.which('pod2man'):
        pytest.skip('no man or pod2man')
    build, prefix = tmp_path / 'build', tmp_path / 'prefix'
    build.mkdir()
    subprocess.run([str(ROOT / 'configure'), '-q', f'--prefix={prefix}', *VALGRIND.configure_args()], cwd=build,
                   check=True, capture_output=True)
    subprocess.run(['make', '-s', 'install-man'], cwd=build, check=True, capture_output=True)
    return prefix / 'share' / 'man'


def rendered(manpath, page):
    """The page as `man` shows it: plain ASCII text, one long line a paragraph."""
    env = dict(os.environ, MANPATH=str(manpath), MANWIDTH='1000', LC_ALL='C', MAN_KEEP_FORMATTING='',
               MANPAGER='cat', PAGER='cat')
    r = subprocess.run(['man', page], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return re.sub(r'.\x08', '', r.stdout)    # no overstriking


@pytest.mark.parametrize('script', ['kgrind_annotate', 'kgrind_control'])
def test_man_page_lists_every_option_of_help(tmp_path, script):
    manpath = installed_man_pages(tmp_path)
    assert (manpath / 'man1' / f'{script}.1').is_file()
    page = rendered(manpath, script)
    for section in ('NAME', 'SYNOPSIS', 'DESCRIPTION', 'OPTIONS', 'EXAMPLES', 'EXIT STATUS', 'FILES', 'SEE ALSO'):
        assert re.search(rf'^{section}$', page, re.M), (script, section)
    assert re.search(rf'^\s+{script} - ', page, re.M)
    usage = subprocess.run(['perl', str(ROOT / 'perl' / f'{script}.pl'), '--help'], capture_output=True,
                           text=True, check=True).stdout
    options = set(re.findall(r'(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b', usage))
    assert len(options) > 8
    missing = [o for o in sorted(options) if not re.search(rf'(?<![\w-]){re.escape(o)}(?![\w-])', page)]
    assert not missing, (script, missing)
