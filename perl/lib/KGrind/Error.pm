package KGrind::Error;
# Errors: fail() dies with a KG::Error that kgrind_annotate prints as one
# line (exit status 2); ferr() names the file and line; printable() makes a
# piece of bad input safe to quote in a message.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';

our @EXPORT = qw(fail ferr printable);

sub fail { die bless { msg => join('', @_) }, 'KG::Error' }
sub ferr { my ($file, $line, @m) = @_; fail("$file:$line: ", @m) }

sub printable {
    my $s = shift;
    $s =~ s/[^\x20-\x7e]/?/g;
    $s = substr($s, 0, 60) . '...' if length $s > 63;
    return $s;
}

1;
