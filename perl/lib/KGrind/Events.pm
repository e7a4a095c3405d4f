package KGrind::Events;
# Events beyond Ir per k'-context (--show, --sort=<event>): the k-SF
# records' exclusive events of each node (KGrind::Read::Events: a forest's
# ev columns, named by ev_names) summed per k'-context as inv_k sums the
# exclusive Ir: every node counts for the context of its innermost k' + 1
# labels (a first tree's node with fewer: its whole path), but the cleared
# top regions of the trees other than the first (Fig. 3.8).  Inclusive
# events ("incl:<event>"; the nodes' evi columns) as inclusive Ir: of the
# context's outermost activations (KGrind::Inclusive), at k' = inf summed
# as the exclusive ones.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec
use Exporter 'import';
use KGrind::Error;
use KGrind::Labels;
use KGrind::Columns ();
use KGrind::Inclusive ();
use List::Util ();
use KGrind::Forest qw(first_root preorder ctx_labels);

our @EXPORT = qw(forest_event_names context_event context_event_incl event_column check_event_names derived_names
                 derived_value derived_terms is_derived is_incl_event miss_rates);

# An inclusive event's name: incl:<event> (Ir, an event or a derived one).
sub is_incl_event { $_[0] =~ /^incl:/ }

# Derived events, KCachegrind's formulas (its "Cycle Estimation"; the
# manual): each a sum of weighted events, an event the profile lacks
# counting 0 (KCachegrind's L2m, of old profiles, is never in kgrind's).
my @DERIVED = (
    [L1m  => [1, 'I1mr'], [1, 'D1mr'], [1, 'D1mw']],
    [LLm  => [1, 'ILmr'], [1, 'DLmr'], [1, 'DLmw']],
    [Bm   => [1, 'Bcm'], [1, 'Bim']],
    # Ir + 10 Bm + 10 L1m + 20 Ge + 100 LLm
    [CEst => [1, 'Ir'], [10, 'Bcm'], [10, 'Bim'], [10, 'I1mr'], [10, 'D1mr'], [10, 'D1mw'], [20, 'Ge'],
             [100, 'ILmr'], [100, 'DLmr'], [100, 'DLmw']],
);
my %DERIVED = map { $_->[0] => [@$_[1 .. $#$_]] } @DERIVED;

sub is_derived { exists $DERIVED{$_[0]} }

# The derived events forest F has: those with a term among its events.
sub derived_names {
    my ($F) = @_;
    my %have = map { $_ => 1 } @{forest_event_names($F)};
    return [map { $_->[0] } grep { my $d = $_; grep { $have{$_->[1]} } @$d[1 .. $#$d] } @DERIVED];
}

# Derived event $e's terms that count for events $have (a hash; Ir
# always): [[weight, event]...].
sub derived_terms {
    my ($e, $have) = @_;
    return [map { [@$_] } grep { $_->[1] eq 'Ir' || $have->{$_->[1]} } @{$DERIVED{$e}}];
}

# Derived event $e's value, $get->($event) giving an event's (Ir's too),
# $have a hash of the events there are.
sub derived_value {
    my ($e, $get, $have) = @_;
    my $v = 0;
    for my $t (@{$DERIVED{$e}}) { $v += $t->[0] * $get->($t->[1]) if $t->[1] eq 'Ir' || $have->{$t->[1]} }
    return $v;
}

# Cachegrind's summary rates, as [name, numerator, denominator] for those
# whose events there are ($have, Ir counting as there), from the counts
# $get->($event) gives.
sub miss_rates {
    my ($get, $have) = @_;
    my $n = sub { my $s = 0; for (@_) { return undef unless $_ eq 'Ir' || $have->{$_}; $s += $get->($_) } $s };
    my @rates = (['I1', [qw(I1mr)], [qw(Ir)]], ['LLi', [qw(ILmr)], [qw(Ir)]],
                 ['D1', [qw(D1mr D1mw)], [qw(Dr Dw)]], ['LLd', [qw(DLmr DLmw)], [qw(Dr Dw)]],
                 ['LL', [qw(ILmr DLmr DLmw)], [qw(Ir Dr Dw)]], ['Bc', [qw(Bcm)], [qw(Bc)]], ['Bi', [qw(Bim)], [qw(Bi)]]);
    my @out;
    for my $r (@rates) {
        my ($num, $den) = ($n->(@{$r->[1]}), $n->(@{$r->[2]}));
        push @out, [$r->[0], $num, $den] if defined $num && defined $den;
    }
    return \@out;
}

# The events (beyond Ir) that forest F's nodes carry, or [].
sub forest_event_names { my ($F) = @_; $F->{ev_names} // [] }

# Fails unless every name is Ir or an event of the forests, or incl: and
# one of those whose inclusive counts the forests have.
sub check_event_names {
    my ($what, $names, @F) = @_;
    for my $name (@$names) {
        (my $e = $name) =~ s/^incl://;
        next if $e eq 'Ir';
        for my $F (@F) {
            fail("$what: '$name': the k-SF records have no inclusive events (a profile of an older kgrind)")
                if $e ne $name && $F->{ev_names} && !$F->{evi};
            my @have = @{forest_event_names($F)};
            my @derived = @{derived_names($F)};
            next if grep { $_ eq $e } @have, @derived;
            fail("$what: unknown event '$e'" . ($what eq '--sort' ? ' (--sort takes Ir, calls, inclusive or an event)' : '')
                 . ': '
                 . (@have ? 'the k-SF records have Ir ' . join(' ', @have)
                            . (@derived ? ', derived ' . join(' ', @derived) : '')
                    : 'the k-SF records have Ir only (profile with an event option such as --cache-sim=yes, '
                      . 'and without a --view-k below --k)'));
        }
    }
}

# Context key (innermost label first, packed) -> [event counts in the
# order of forest_event_names], for contexts of $kk + 1 labels of forest F
# recorded with k = $K (-1: inf); of the nodes' inclusive counts with $col
# 'evi'.
sub context_events {
    my ($F, $kk, $K, $col) = @_;
    my @ev = map { [unpack('Q>*', $_)] } @{$F->{$col // 'ev'} // []};
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

# Context cid's inclusive count of event $e (of the forest) in k'-CCF C:
# as KGrind::Model::outer_incl's Ir, that of its outermost activations, at
# most the thread's count of the event; at k' = inf the nodes' sum.
sub context_event_incl {
    my ($C, $e, $cid) = @_;
    my ($F, $kk, $K) = @$C{qw(F_of kk K)};
    my $i = event_index($F, $e);
    return vec($F->{evi}[$i], $cid, 64) if $C->{cct} && $C->{F} == $F;
    my $key = pack('N*', reverse @{ctx_labels($C, $cid)});
    if ($kk == $INF) {
        my $sum = $C->{events_incl} //= context_events($F, -1, $K == $INF ? -1 : $K, 'evi');
        my $s = $sum->{$key};
        return $s ? $s->[$i] : 0;
    }
    my $outer = $C->{"outer $e"} //= KGrind::Inclusive::outermost($F, $kk, $K == $INF ? -1 : $K,
                                                                  [unpack('Q>*', $F->{evi}[$i])]);
    my $total = $C->{"total $e"} //= List::Util::sum0(unpack('Q>*', $F->{ev}[$i]));
    my $v = $outer->{$key} // 0;
    return $v < $total ? $v : $total;
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
