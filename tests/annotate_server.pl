#!/usr/bin/perl
# kgrind_annotate's runs for the tests without Perl's start-up in each
# (compiling the modules): this process loads the
# script named by its argument and every module of perl/lib once, then
# forks a child per run, which is the script's run from there: its
# working directory, arguments, standard output and error files as asked,
# its exit status (tests/test_annotate.py, annotate_runner).
#
# The child leaves by POSIX::_exit once its output is closed: the script
# has no END block or destructor to run, and global destruction in a
# forked child writes to every shared page (it doubled the child's CPU).
#
# A request is one line of JSON: {"cwd", "args", "out", "err", "timeout"},
# the strings' characters their bytes;
# the answer one line: the child's exit status, or "signal N" (SIGALRM:
# the run took longer than timeout seconds). Nothing is printed before
# "ready" but what loading printed (warnings: the caller refuses them).
use strict;
use warnings;
use FindBin ();
use lib "$FindBin::RealBin/../perl/lib";
use File::Find ();
use JSON::PP ();
use POSIX ();

my ($script) = @ARGV;
die "usage: $0 KGRIND_ANNOTATE_SCRIPT\n" unless defined $script;
# Every module first (the ones the script loads when asked too: the
# exporters, --diff's), from this tree's perl/lib, then the script
# (whose `use lib` puts the installed modules' directory first).
File::Find::find({ no_chdir => 1, wanted => sub {
    return unless s{\A\Q$FindBin::RealBin\E/../perl/lib/}{}r =~ /\A(.*)\.pm\z/;
    require "$1.pm";
} }, "$FindBin::RealBin/../perl/lib");
require $script;

$| = 1;
print "ready\n";
while (my $line = <STDIN>) {
    my $r = JSON::PP::decode_json($line);
    # each character a byte of the argument or path (annotate_runner._wire)
    utf8::downgrade($_) for $r->{cwd}, $r->{out}, $r->{err}, @{$r->{args}};
    my $pid = fork // die "fork: $!";
    if (!$pid) {
        chdir $r->{cwd} or die "$r->{cwd}: $!";
        open STDIN, '<', '/dev/null' or die;
        open STDOUT, '>', $r->{out} or die "$r->{out}: $!";
        open STDERR, '>', $r->{err} or die "$r->{err}: $!";
        alarm $r->{timeout};
        my $rc = main::run(@{$r->{args}});
        close STDOUT; close STDERR;
        POSIX::_exit($rc);
    }
    waitpid $pid, 0;
    print $? & 127 ? 'signal ' . ($? & 127) . "\n" : ($? >> 8) . "\n";
}
