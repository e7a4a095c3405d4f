"""kgrind_annotate installed (its module layout): `make install`
puts the script in $(bindir) and perl/lib/KGrind in $(pkgdatadir)/perl5,
where the installed script finds its modules, away from the source tree.
Only the Perl part is installed, into a temporary prefix."""
import shutil
import subprocess

import pytest

from test_annotate import ROOT, THESIS


def test_installed_script_finds_its_modules(tmp_path):
    if not (ROOT / 'configure').exists():
        pytest.skip('no configure script (run ./setup.sh --build first)')
    build, prefix = tmp_path / 'build', tmp_path / 'prefix'
    build.mkdir()
    subprocess.run([str(ROOT / 'configure'), '-q', f'--prefix={prefix}'], cwd=build, check=True,
                   capture_output=True)
    subprocess.run(['make', '-s', 'install-binSCRIPTS', 'install-dist_perlmodDATA',
                    'install-dist_perlexportDATA'], cwd=build, check=True, capture_output=True)
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
