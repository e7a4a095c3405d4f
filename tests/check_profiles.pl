#!/usr/bin/perl
# Reads the kgrind profiles named on stdin (one path a line) as
# kgrind_annotate does by default (header, k-SF records, the forests'
# checks, the model), in one process, and answers each path with one line:
# empty when it was read, else kgrind_annotate's message.
use strict;
use warnings;
use FindBin ();
use lib "$FindBin::RealBin/../perl/lib";
require "$FindBin::RealBin/../perl/kgrind_annotate.pl";
use KGrind::Model qw(build_model);

$| = 1;
while (my $file = <STDIN>) {
    chomp $file;
    my $ok = eval { build_model(main::parse_options('--', $file)); 1 };
    my $m = '';
    unless ($ok) {
        my $e = $@;
        $m = ref $e eq 'KG::Error' ? $e->{msg} : "internal error: $e";
        $m =~ s/\s+\z//;
        $m =~ s/\n/ /g;
    }
    print "$m\n";
}
