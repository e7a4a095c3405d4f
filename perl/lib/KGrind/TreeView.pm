package KGrind::TreeView;
# The trees that --ksf, --kccf and JSON print: a thread's k-SF or k-CCF,
# whole or cut to the contexts selected (ccf_tree, ksf_tree), and the
# view of a tree that the printers walk (tree_view), siblings in the
# order --tree-order and --sort ask.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec on packed columns
use Exporter 'import';
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Forest;
use KGrind::Model qw(key_arrays select_contexts is_ir_key);

our @EXPORT = qw(tree_view ccf_tree ksf_tree);

# Children (or roots) in display order.
sub tree_kids {
    my ($o, $T) = @_;
    my ($roots, $kids) = children_of(col($T, 'par'));
    if ($o->{'tree-order'} eq 'natural' && (my $first = $T->{first})) {
        my $srt = sub { [sort { $first->[$a] <=> $first->[$b] } @{$_[0]}] };
        $roots = $srt->($roots);
        for my $k (@$kids) { $k = $srt->($k) if $k && @$k > 1 }
    } elsif ($o->{'tree-order'} eq 'sorted') {
        # trees have no events: an event's sort orders the contexts only
        my $key = key_arrays(is_ir_key($o->{sort}) ? $o->{sort} : 'Ir', $T, 0);
        my $fn = col($T, 'fn');
        my $srt = sub { [sort { $key->[$b] <=> $key->[$a] || $LNAME[$fn->[$a]] cmp $LNAME[$fn->[$b]] } @{$_[0]}] };
        $roots = $srt->($roots);
        for my $k (@$kids) { $k = $srt->($k) if $k && @$k > 1 }
    }
    return ($roots, $kids);
}

sub has_costs {
    my ($T) = @_;
    return $T->{excl} =~ /[^\0]/ || $T->{incl} =~ /[^\0]/ ? 1 : 0 if !ref $T->{excl};    # packed columns
    my ($exc, $inc) = (col($T, 'excl'), col($T, 'incl'));
    for my $v (0 .. $T->{n} - 1) { return 1 if $exc->[$v] || $inc->[$v] }
    return 0;
}

# What the tree printers walk: the roots in display order, and per node (a
# handle) its children in display order (kids) and its label and counters
# (node).  A forest of arrays (tree_kids), or a CCT's inf-CCF as its
# automaton's chains (KGrind::Forest::automaton_ccf; a handle is [state,
# position in its chain, tree node of its label]), whose nodes are made as
# they are printed.
sub tree_view {
    my ($o, $T) = @_;
    return automaton_view($o, $T) if $T->{automaton};
    my ($roots, $kids) = tree_kids($o, $T);
    my ($fn, $cal, $exc, $inc) = map { col($T, $_) } qw(fn calls excl incl);
    return { roots => $roots, kids => sub { $kids->[$_[0]] }, costs => has_costs($T),
             node => sub { ($fn->[$_[0]], $cal->[$_[0]], $exc->[$_[0]], $inc->[$_[0]]) } };
}

sub automaton_view {
    my ($o, $T) = @_;
    my ($F, $len, $link, $start, $first) = @$T{qw(F len link start first)};
    my ($fn, $par) = @$F{qw(fn par)};    # packed: par is the parent + 1
    my $key = $T->{$o->{sort} eq 'calls' ? 'calls' : $o->{sort} eq 'inclusive' ? 'incl' : 'excl'};
    my $chain = sub { vec($len, $_[0], 32) - vec($len, vec($link, $_[0], 32) - 1, 32) };
    my $below = sub {    # the chains below state s, in display order
        my @s = KGrind::Forest::automaton_kids($T, $_[0]);
        if ($o->{'tree-order'} eq 'natural') { @s = sort { vec($first, $a, 32) <=> vec($first, $b, 32) } @s }
        else {
            @s = sort { vec($key, $b, 64) <=> vec($key, $a, 64)
                        || $LNAME[vec($fn, vec($start, $a, 32), 32)] cmp $LNAME[vec($fn, vec($start, $b, 32), 32)] } @s;
        }
        return [map { [$_, 0, vec($start, $_, 32)] } @s];
    };
    return { roots => $below->(0), costs => has_costs($T),
             kids => sub {
                 my ($s, $i, $u) = @{$_[0]};
                 return $i + 1 < $chain->($s) ? [[$s, $i + 1, vec($par, $u, 32) - 1]] : $below->($s);
             },
             node => sub {
                 my ($s, $i, $u) = @{$_[0]};
                 (vec($fn, $u, 32), vec($T->{calls}, $s, 64), vec($T->{excl}, $s, 64), vec($T->{incl}, $s, 64));
             } };
}

# The k-CCF that --kccf and JSON print: whole, or with --top or --threshold
# given, only the chains of the contexts selected (each node with its
# counters over the whole k-CCF).  A CCT's inf-CCF is then never built:
# pruned_ccf.
sub ccf_tree {
    my ($o, $t) = @_;
    my $C = $t->{C};
    return KGrind::Forest::automaton_ccf($C) if $C->{cct} && !$o->{limited};
    return ccf_counters($C) unless $o->{limited};
    my $ids = select_contexts($o, $C);
    return KGrind::Forest::pruned_ccf($t->{F}, $ids) if $C->{cct};
    my $T = ccf_counters($C);
    return keep_nodes($T, [map { my @c; for (my $u = $_; $u >= 0; $u = $T->{par}[$u]) { push @c, $u } @c } @$ids]);
}

# The k-SF that --ksf and JSON print: whole, or at k = inf with --top or
# --threshold given, only the root paths of the contexts selected (a CCT's
# nodes are its contexts).
sub ksf_tree {
    my ($o, $t) = @_;
    return $t->{F} unless $o->{limited} && $t->{C}{cct};
    my $par = $t->{F}{par};
    return keep_nodes($t->{F}, [map { my @p; for (my $u = $_ + 1; $u; $u = vec($par, $u - 1, 32)) { push @p, $u - 1 } @p }
                                @{select_contexts($o, $t->{C})}]);
}

# The tree of the nodes $ids of T (each with its parent), renumbered in
# T's order (parents before children); T's counters.
sub keep_nodes {
    my ($T, $ids) = @_;
    my %new;
    my @keep = grep { !$new{$_}++ } @$ids;
    @keep = sort { $a <=> $b } @keep;
    @new{@keep} = 0 .. $#keep;
    my %K = (n => scalar(@keep), shown => 1);
    for my $c (grep { defined $T->{$_} } qw(par fn calls excl incl first)) {
        my $col = $T->{$c};    # an array, or a packed column (read where kept)
        my $bits = $c eq 'par' || $c eq 'fn' ? 32 : 64;
        my @v = ref $col ? @$col[@keep] : map { vec($col, $_, $bits) } @keep;
        @v = map { $_ - 1 } @v if $c eq 'par' && !ref $col;
        $K{$c} = $c eq 'par' ? [map { $_ < 0 ? -1 : $new{$_} } @v] : \@v;
    }
    return \%K;
}

1;
