# Perl workload for the suite's large-program phase (Debian perl): regular
# expressions, hashes, sort with comparators, string building, closures,
# recursion, method calls on blessed objects.  Deterministic (its own LCG).
#    perl plwork.pl [rounds]      one round: about 0.45 G instructions
use strict;
use warnings;

my $state;
sub rnd { my ($bound) = @_; $state = ($state * 1103515245 + 12345) % 2147483648; return int($state / 65536) % $bound; }

package Account {
    sub new { my ($class, %a) = @_; return bless { %a, history => [] }, $class; }
    sub deposit { my ($self, $n) = @_; $self->{balance} += $n; push @{ $self->{history} }, $n; return $self; }
    sub score { my ($self) = @_; my $s = 0; $s += $_ for @{ $self->{history} }; return $s % 997; }
}
package Savings {
    our @ISA = ('Account');
    sub score { my ($self) = @_; return $self->SUPER::score() * 2 + 1; }
}
package main;

sub words {
    my ($n) = @_;
    my @letters = split //, 'etaoinshrdlucmfwyp';
    return map { join '', map { $letters[rnd(scalar @letters)] } 1 .. 2 + rnd(7) } 1 .. $n;
}

sub text_work {
    my @w = words(5000);
    my $text = join ' ', @w;
    my %count;
    $count{$_}++ for $text =~ /\b(\w{3,})\b/g;
    (my $copy = $text) =~ s/([aeiou])(\w)/$2$1/g;
    my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 19];
    my $fields = 0;
    for my $line (map { join(',', @w[$_ .. $_ + 7]) } grep { $_ % 8 == 0 } 0 .. $#w - 8) {
        my @f = split /,/, $line;
        $fields += grep { /^[a-h]/ } @f;
    }
    return length($copy) + $fields + $count{ $top[0] };
}

sub make_counter { my $n = shift; return sub { $n += shift; return $n; }; }

sub tree_depth {
    my ($node) = @_;
    return 0 unless $node;
    my ($l, $r) = (tree_depth($node->{l}), tree_depth($node->{r}));
    return 1 + ($l > $r ? $l : $r);
}

sub tree_insert {
    my ($node, $key) = @_;
    return { key => $key } unless $node;
    my $side = $key < $node->{key} ? 'l' : 'r';
    $node->{$side} = tree_insert($node->{$side}, $key);
    return $node;
}

sub object_work {
    my @accounts = map { ($_ % 3 ? 'Account' : 'Savings')->new(id => $_, balance => 0) } 1 .. 200;
    $accounts[ rnd(200) ]->deposit(rnd(1000)) for 1 .. 6000;
    my $sum = 0;
    $sum += $_->score for @accounts;
    my $counter = make_counter(0);
    $counter->($_) for 1 .. 3000;
    my $root;
    $root = tree_insert($root, rnd(100000)) for 1 .. 3000;
    return $sum + $counter->(0) + tree_depth($root);
}

my $rounds = shift // 1;
my $total = 0;
for my $r (0 .. $rounds - 1) {
    $state = $r + 1;
    $total = ($total + text_work() + object_work()) % 1000000007;
}
print "$total\n";
