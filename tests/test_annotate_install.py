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


# One configure and install for the module's tests: configure is the slow part.
pytestmark = pytest.mark.xdist_group('annotate_install')


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
    """A temporary prefix with the Perl part and the man pages installed, the
    build tree that installed them already removed."""
    if not (ROOT / 'configure').exists():
        pytest.skip('no configure script (run ./setup.sh --build first)')
    top = tmp_path_factory.mktemp('install')
    build, prefix = top / 'build', top / 'prefix'
    build.mkdir()
    subprocess.run([str(ROOT / 'configure'), '-q', f'--prefix={prefix}', *VALGRIND.configure_args()], cwd=build,
                   check=True, capture_output=True)
    subprocess.run(['make', '-s', 'install-binSCRIPTS', 'install-dist_perlmodDATA', 'install-dist_perlreadDATA',
                    'install-dist_perlcheckDATA', 'install-dist_perlexportDATA',
                    *(['install-man'] if shutil.which('pod2man') else [])], cwd=build, check=True, capture_output=True)
    shutil.rmtree(build)
    return prefix


def test_installed_script_finds_its_modules(installed, tmp_path):
    script = installed / 'bin' / 'kgrind_annotate'
    modules = sorted(p.relative_to(ROOT / 'perl' / 'lib') for p in (ROOT / 'perl' / 'lib').rglob('*.pm'))
    perl5 = installed / 'share' / 'kgrind' / 'perl5'
    assert sorted(p.relative_to(perl5) for p in perl5.rglob('*.pm')) == modules
    # moved away from the build tree (no lib/ next to it): the installed modules
    alone = tmp_path / 'elsewhere'
    alone.mkdir()
    shutil.copy(script, alone / 'kgrind_annotate')
    for fmt in ('text', 'pprof', 'speedscope', 'dot'):
        r = subprocess.run([str(alone / 'kgrind_annotate'), f'--format={fmt}', str(THESIS)], capture_output=True)
        assert r.returncode == 0 and r.stderr == b'' and r.stdout, (fmt, r.stderr)
    # without them it stops, naming the missing module (a copy: the prefix is shared)
    shutil.copytree(perl5, tmp_path / 'perl5-kept')
    shutil.rmtree(perl5)
    try:
        r = subprocess.run([str(alone / 'kgrind_annotate'), str(THESIS)], capture_output=True, text=True)
    finally:
        shutil.copytree(tmp_path / 'perl5-kept', perl5)
    assert r.returncode != 0 and 'KGrind' in r.stderr


def installed_man_pages(installed):
    """The man pages installed into the temporary prefix (`make install-man`)."""
    if not shutil.which('man') or not shutil.which('pod2man'):
        pytest.skip('no man or pod2man')
    return installed / 'share' / 'man'


def rendered(manpath, page):
    """The page as `man` shows it: plain ASCII text, one long line a paragraph."""
    env = dict(os.environ, MANPATH=str(manpath), MANWIDTH='1000', LC_ALL='C', MAN_KEEP_FORMATTING='',
               MANPAGER='cat', PAGER='cat')
    r = subprocess.run(['man', page], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    return re.sub(r'.\x08', '', r.stdout)    # no overstriking


@pytest.mark.parametrize('script', ['kgrind_annotate', 'kgrind_control'])
def test_man_page_lists_every_option_of_help(installed, script):
    manpath = installed_man_pages(installed)
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
