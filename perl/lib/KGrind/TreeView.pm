package KGrind::TreeView;
# The trees that --ksf, --kccf and JSON print: a thread's k-SF or k-CCF,
# whole or cut to the contexts selected (ccf_tree, ksf_tree), and the
# view of a tree that the printers walk (tree_view), siblings in the
# order --tree-order and --sort ask.  A tree's nodes carry the events
# beyond Ir that the printers need (tree_events), exclusive and
# inclusive, as its Ir: a k-SF node the records' counts, a k-CCF node
# the sums over the k-SF nodes whose chains pass through it (inv_k's
# counters); node_reader reads them, derived events (CEst, ...) too.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec on packed columns
use Exporter 'import';
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Forest;
use KGrind::Events qw(forest_event_names derived_terms is_derived);
use KGrind::Model qw(key_arrays select_contexts is_ir_key);

our @EXPORT = qw(tree_view ccf_tree ksf_tree tree_columns);

# The events beyond Ir (recorded ones) that the trees of forest F must
# carry: JSON's, all of them; the text's, those --show (with --costs)
# and a --sort of sorted trees name, derived events' terms included.
sub tree_events {
    my ($o, $F) = @_;
    my $names = forest_event_names($F);
    return $names if $o->{format} eq 'json';
    my %have = map { $_ => 1 } @$names;
    my %want;
    for my $e ($o->{costs} eq 'yes' ? @{$o->{show} // []} : (), $o->{'tree-order'} eq 'sorted' ? $o->{sort} : ()) {
        (my $x = $e) =~ s/^incl://;
        $want{$x} = 1;
        $want{$_->[1]} = 1 for is_derived($x) ? @{derived_terms($x, \%have)} : ();
    }
    return [grep { $want{$_} } @$names];
}

# Adds to tree T the columns of events $names (forest F's): ev_names, ev
# and evi (per event a column: an array, or packed), from $cols, the
# columns in the order of $names, exclusive ones then inclusive ones.
sub set_tree_events {
    my ($T, $F, $names, $cols) = @_;
    $T->{ev_names} = $names;
    $T->{ev} = [@$cols[0 .. $#$names]];
    $T->{evi} = [@$cols[@$names .. $#$cols]] if $F->{evi};
    $T->{have_events} = forest_event_names($F);
    return $T;
}

# Forest F's packed columns of events $names: exclusive ones, then
# inclusive ones where the records have them.
sub forest_columns {
    my ($F, $names) = @_;
    my $all = forest_event_names($F);
    my %at = map { ($all->[$_] => $_) } 0 .. $#$all;
    return [(map { $F->{ev}[$at{$_}] } @$names), ($F->{evi} ? map { $F->{evi}[$at{$_}] } @$names : ())];
}

# A k-CCF's (inv_k's: vctx maps each k-SF node to its chain's end) node
# columns of events $names: each chain end's sums over its k-SF nodes,
# summed into the ancestors as ccf_counters does Ir's.
sub ccf_events {
    my ($C, $names) = @_;
    my $F = $C->{F_of};
    my ($n, $cpar, $vctx) = @$C{qw(n par vctx)};
    my @out;
    for my $col (@{forest_columns($F, $names)}) {
        my @s = (0) x $n;
        my @x = unpack('Q>*', $col);
        for my $v (0 .. $#x) { my $c = vec($vctx, $v, 32) or next; $s[$c - 1] += $x[$v] }
        for (my $c = $n - 1; $c > 0; $c--) { my $p = $cpar->[$c]; $s[$p] += $s[$c] if $p >= 0 }
        push @out, pack('Q>*', @s);
    }
    return set_tree_events($C, $F, $names, \@out);
}

# A reader of tree T's node counts: sub(i) giving node i's counts of
# @$names, each Ir, a recorded event or a derived one, incl:<e> its
# inclusive count (the tree's incl column for Ir's).  Each name is
# compiled once into the columns it sums, [[weight, column]...].
sub node_reader {
    my ($T, $names) = @_;
    my %at = map { ($T->{ev_names}[$_] => $_) } 0 .. $#{$T->{ev_names} // []};
    my %have = map { $_ => 1 } @{$T->{have_events} // $T->{ev_names} // []};
    my @plan = map {
        my $incl = s/^incl://r ne $_;
        my $e = s/^incl://r;
        my $column = sub {
            my ($x) = @_;
            my $c = $x eq 'Ir' ? $T->{$incl ? 'incl' : 'excl'} : defined $at{$x} ? $T->{$incl ? 'evi' : 'ev'}[$at{$x}] : undef;
            defined $c ? $c : die "internal: no " . ($incl ? 'incl:' : '') . "$x in the tree\n";
        };
        is_derived($e) ? [map { [$_->[0], $column->($_->[1])] } @{derived_terms($e, \%have)}] : [[1, $column->($e)]];
    } @$names;
    return sub {
        my ($i) = @_;
        map { my $v = 0; $v += $_->[0] * (ref $_->[1] ? $_->[1][$i] : vec($_->[1], $i, 64)) for @$_; $v } @plan;
    };
}

# What a tree node prints after its name: [[label, event]...], exclusive
# counts of --show's events, then inclusive ones ("incl" Ir's, as ever,
# "incl:<e>" another's; none of an event without inclusive counts, with
# a note saying so: $note).
sub tree_columns {
    my ($o, $F) = @_;
    my @show = @{$o->{show} // ['Ir']};
    my @cols = map { [$_, $_] } grep { !/^incl:/ } @show;
    my (@incl, %seen, $note);
    for my $e (map { s/^incl://r } @show) {
        next if $seen{$e}++;
        if ($e ne 'Ir' && !$F->{evi}) { $note = 1; next }
        push @incl, [$e eq 'Ir' ? 'incl' : "incl:$e", "incl:$e"];
    }
    return ([@cols, @incl], $note ? 'the k-SF records have no inclusive events (a profile of an older kgrind): '
                                    . 'inclusive counts are Ir\'s only' : undef);
}

# Children (or roots) in display order.
sub tree_kids {
    my ($o, $T) = @_;
    my ($roots, $kids) = children_of(col($T, 'par'));
    if ($o->{'tree-order'} eq 'natural' && (my $first = $T->{first})) {
        my $srt = sub { [sort { $first->[$a] <=> $first->[$b] } @{$_[0]}] };
        $roots = $srt->($roots);
        for my $k (@$kids) { $k = $srt->($k) if $k && @$k > 1 }
    } elsif ($o->{'tree-order'} eq 'sorted') {
        # an event's (incl:<e>: its inclusive count; a derived one's) per node
        my $key = is_ir_key($o->{sort}) ? key_arrays($o->{sort}, $T, 0)
                : do { my $r = node_reader($T, [$o->{sort}]); [map { $r->($_) } 0 .. $T->{n} - 1] };
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
             node => sub { ($fn->[$_[0]], $cal->[$_[0]], $exc->[$_[0]], $inc->[$_[0]]) },
             reader => sub { node_reader($T, $_[0]) } };
}

sub automaton_view {
    my ($o, $T) = @_;
    my ($F, $len, $link, $start, $first) = @$T{qw(F len link start first)};
    my ($fn, $par) = @$F{qw(fn par)};    # packed: par is the parent + 1
    my $key = $o->{sort} eq 'calls' ? 'calls' : $o->{sort} eq 'inclusive' ? 'incl' : $o->{sort} eq 'Ir' ? 'excl' : undef;
    my $kv = defined $key ? do { my $c = $T->{$key}; sub { vec($c, $_[0], 64) } } : node_reader($T, [$o->{sort}]);
    my $chain = sub { vec($len, $_[0], 32) - vec($len, vec($link, $_[0], 32) - 1, 32) };
    my $below = sub {    # the chains below state s, in display order
        my @s = KGrind::Forest::automaton_kids($T, $_[0]);
        if ($o->{'tree-order'} eq 'natural') { @s = sort { vec($first, $a, 32) <=> vec($first, $b, 32) } @s }
        else {
            my %k = map { ($_ => $kv->($_)) } @s;
            @s = sort { $k{$b} <=> $k{$a}
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
             },
             # a chain's nodes have its state's counts
             reader => sub { my $r = node_reader($T, $_[0]); sub { $r->($_[0][0]) } } };
}

# The k-CCF that --kccf and JSON print: whole, or with --top or --threshold
# given, only the chains of the contexts selected (each node with its
# counters over the whole k-CCF).  A CCT's inf-CCF is then never built:
# pruned_ccf.
sub ccf_tree {
    my ($o, $t) = @_;
    my $C = $t->{C};
    my $F = $C->{F_of};
    my $names = tree_events($o, $F);
    if ($C->{cct}) {    # the tree's columns, summed as its Ir
        my $T = $o->{limited} ? KGrind::Forest::pruned_ccf($t->{F}, select_contexts($o, $C), forest_columns($F, $names))
                              : KGrind::Forest::automaton_ccf($C, forest_columns($F, $names));
        return set_tree_events($T, $F, $names, delete $T->{cols});
    }
    my $T = ccf_counters($C);
    ccf_events($T, $names) if @$names && !($T->{ev_names} && "@{$T->{ev_names}}" eq "@$names");
    return $T unless $o->{limited};
    my $ids = select_contexts($o, $C);
    return keep_nodes($T, [map { my @c; for (my $u = $_; $u >= 0; $u = $T->{par}[$u]) { push @c, $u } @c } @$ids]);
}

# The k-SF that --ksf and JSON print: whole, or at k = inf with --top or
# --threshold given, only the root paths of the contexts selected (a CCT's
# nodes are its contexts).  Its nodes' events are the records'.
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
    # the events' columns (KGrind::Events), kept the same way
    for my $c (grep { $T->{$_} } qw(ev evi)) {
        $K{$c} = [map { my $col = $_; ref $col ? [@$col[@keep]] : [map { vec($col, $_, 64) } @keep] } @{$T->{$c}}];
    }
    @K{qw(ev_names have_events)} = @$T{qw(ev_names have_events)} if $T->{ev_names};
    return \%K;
}

1;
