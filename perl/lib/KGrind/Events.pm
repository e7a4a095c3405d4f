package KGrind::Events;
# Events beyond Ir per k'-context (--show, --sort=<event>): the k-SF
# records' exclusive events of each node (KGrind::Read::Events: a forest's
# ev columns, named by ev_names) summed per k'-context as inv_k sums the
# exclusive Ir: every node counts for the context of its innermost k' + 1
# labels (a first tree's node with fewer: its whole path), but the cleared
# top regions of the trees other than the first (Fig. 3.8).
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec
use Exporter 'import';
use KGrind::Error;
use KGrind::Labels;
use KGrind::Columns ();
use KGrind::Forest qw(first_root preorder ctx_labels);

our @EXPORT = qw(forest_event_names context_event event_column check_event_names);

# The events (beyond Ir) that forest F's nodes carry, or [].
sub forest_event_names { my ($F) = @_; $F->{ev_names} // [] }

# Fails unless every name is Ir or an event of the forests.
sub check_event_names {
    my ($what, $names, @F) = @_;
    for my $e (@$names) {
        next if $e eq 'Ir';
        for my $F (@F) {
            my @have = @{forest_event_names($F)};
            next if grep { $_ eq $e } @have;
            fail("$what: unknown event '$e': "
                 . (@have ? 'the k-SF records have Ir ' . join(' ', @have)
                    : 'the k-SF records have Ir only (profile with an event option such as --cache-sim=yes, '
                      . 'and without a --view-k below --k)'));
        }
    }
}

# Context key (innermost label first, packed) -> [event counts in the
# order of forest_event_names], for contexts of $kk + 1 labels of forest F
# recorded with k = $K (-1: inf).
sub context_events {
    my ($F, $kk, $K) = @_;
    my @ev = map { [unpack('Q>*', $_)] } @{$F->{ev} // []};
    my ($par, $fn, $depth) = map { KGrind::Columns::col($F, $_) } qw(par fn depth);
    my $clear = $K < 0 ? 0 : $K;
    my $bytes = $kk < 0 ? 1e18 : 4 * ($kk + 1);
    my (@chain, @first, %sum);
    for my $v (@{preorder($F)}) {
        my $p = $par->[$v];
        $first[$v] = $p < 0 ? first_root($F, $v) : $first[$p];
        my $c = $chain[$v] = substr(pack('N', $fn->[$v]) . ($p < 0 ? '' : $chain[$p]), 0, $bytes);
        next unless $first[$v] || ($depth->[$v] >= $clear && length($c) == $bytes);
        my $s = $sum{$c} //= [(0) x @ev];
        $s->[$_] += $ev[$_][$v] for 0 .. $#ev;
    }
    return \%sum;
}

# Context cid's count of event $e (an event of the forest) in k'-CCF C,
# derived from forest $C->{F_of} (k' = $C->{kk}, k = $C->{K}).
sub context_event {
    my ($C, $e, $cid) = @_;
    my ($F, $kk, $K) = @$C{qw(F_of kk K)};
    my $i = event_index($F, $e);
    # a calling context tree's contexts are its nodes (KGrind::Forest::cct_contexts)
    return vec($F->{ev}[$i], $cid, 64) if $C->{cct} && $C->{F} == $F;
    my $sum = $C->{events} //= context_events($F, $kk == $INF ? -1 : $kk, $K == $INF ? -1 : $K);
    my $s = $sum->{pack('N*', reverse @{ctx_labels($C, $cid)})};
    return $s ? $s->[$i] : 0;
}

sub event_index {
    my ($F, $e) = @_;
    my $names = forest_event_names($F);
    for my $i (0 .. $#$names) { return $i if $names->[$i] eq $e }
    die "event $e not in the forest\n";
}

# Event $e of every context of C, an array by context id (a sort key), or
# for a calling context tree's contexts its packed column (as the tree's
# Ir: KGrind::Model::each_key).
sub event_column {
    my ($C, $e) = @_;
    my $F = $C->{F_of};
    return $F->{ev}[event_index($F, $e)] if $C->{cct} && $C->{F} == $F;
    return $C->{"event $e"} //= do {
        my @x;
        $x[$_] = context_event($C, $e, $_) for @{KGrind::Forest::ctx_ids($C)};
        \@x;
    };
}

1;
