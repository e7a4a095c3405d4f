#!/usr/bin/perl
# Reads every kgrind profile named on stdin (one path a line) as
# kgrind_annotate does (header, body with source lines, k-SF records, the
# forests' checks, the model) in one process, and prints "path\tmessage"
# for each it refuses. Exit 0 when all were read.
use strict;
use warnings;
use FindBin ();
use lib "$FindBin::RealBin/../perl/lib";
require "$FindBin::RealBin/../perl/kgrind_annotate.pl";
use KGrind::Model qw(build_model);

my $refused = 0;
while (my $file = <STDIN>) {
    chomp $file;
    next unless length $file;
    my $ok = eval { build_model(main::parse_options('--', $file)); 1 };
    next if $ok;
    my $e = $@;
    my $m = ref $e eq 'KG::Error' ? $e->{msg} : "internal error: $e";
    $m =~ s/\s+\z//;
    $m =~ s/\n/ /g;
    print "$file\t$m\n";
    $refused++;
}
exit($refused ? 1 : 0);
