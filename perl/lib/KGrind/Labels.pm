package KGrind::Labels;
# Labels (function or block names), interned across all profiles in
# @LNAME; label 0 is __root__.  Also k as the profiles write it ($INF:
# k = inf) and a body context's activated function.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';

our @EXPORT = qw(label_id @LNAME $ROOT_NAME $ROOT $INF kstr base_name);

our $ROOT_NAME = '__root__';
our $INF = -1;    # k = inf

our @LNAME;     # label id -> name
my %LID;        # name -> label id
sub label_id {
    my $n = $_[0];
    my $id = $LID{$n};
    return $id if defined $id;
    push @LNAME, $n;
    return $LID{$n} = $#LNAME;
}
label_id($ROOT_NAME);    # global id 0
our $ROOT = 0;

sub kstr { $_[0] == $INF ? 'inf' : $_[0] }

# The activated function of a body context name "c'a'e".
sub base_name { my $n = shift; my $i = index($n, "'"); $i < 0 ? $n : substr($n, 0, $i) }

1;
