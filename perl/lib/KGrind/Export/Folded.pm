package KGrind::Export::Folded;
# --format=folded: flame-graph stacks, "a;b;c <exclusive Ir>" (or, with
# --event, the exclusive count of that event of the k-SF records), summed
# over the threads and sorted; with --callers the k-CCF as caller stacks.
# At finite k a stack that does not reach __root__ starts with
# "[truncated k=N]", as pprof's and speedscope's do.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec on packed columns
use Exporter 'import';
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Forest qw(children_of ctx_ids ctx_labels);
use KGrind::Model qw(cval select_contexts context_value truncation_marker is_truncated);
use KGrind::Names qw(display_name);
use KGrind::Output;
use KGrind::Sites qw(site_index sited_names);

# The stacks of the contexts, outermost function first; with --callers the
# k-CCF as folded stacks, the activated function first, then its callers,
# innermost first: an icicle per function (who calls it, up to k levels).
# Each stack weighs the exclusive Ir (or --event) of its context.
sub show {
    my ($o, $S) = @_;
    my $e = $o->{event} // 'Ir';
    my $weight = sub { my ($C, $cid) = @_; context_value($C, $e, $cid) };
    # names as they are (--names=short if asked), but ';', the separator
    my @frame = map { (my $x = display_name($o, $_)) =~ s/;/%3B/g; $x } @LNAME;
    return cct_folded(\@frame, $S->{threads}, $e eq 'Ir' ? undef : $weight)
        if !$o->{callers} && !$o->{limited} && !$o->{sites} && !grep { !$_->{C}{cct} } @{$S->{threads}};
    # --sites: each frame but the last with the line it called the next one from
    my $I = $o->{sites} ? site_index($S) : undef;
    # at finite k a context that does not reach __root__ starts with the
    # truncation marker (outermost: last in a --callers stack), as in pprof
    my $k = kstr($S->{kk});
    my $cut = $S->{blockmode} ? undef : truncation_marker($k);
    my %sum;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        for my $cid (@{$o->{limited} ? select_contexts($o, $C) : ctx_ids($C)}) {
            my $x = $weight->($C, $cid) or next;
            my $labels = ctx_labels($C, $cid);
            my @stack = @frame[@$labels];
            @stack = @{sited_names($I, [@LNAME[@$labels]], \@stack)} if $I;
            unshift @stack, $cut if defined $cut && is_truncated($k, $LNAME[$labels->[0]]);
            $sum{join(';', $o->{callers} ? reverse @stack : @stack)} += $x;
        }
    }
    out("$_ $sum{$_}\n") for sort keys %sum;
}

# The folded stacks of calling context trees (each node's stack is its root
# path), summed over the trees, in the order of the stacks (byte order, as
# the sorted stacks of show), written as produced: memory linear in
# the trees, not in the output (the sum of the depths).
sub cct_folded {
    my ($frame, $threads, $weight) = @_;    # $weight: an event's, else Ir
    my (@fn, @excl, @kids, @roots);    # per node of all trees, numbered one tree after the other
    my $base = 0;
    for my $t (@$threads) {
        my $C = $t->{C};
        my ($r, $k) = children_of(col($C->{F}, 'par'));
        push @roots, map { $_ + $base } @$r;
        $kids[$_ + $base] = [map { $_ + $base } @{$k->[$_]}] for grep { $k->[$_] } 0 .. $#$k;
        push @fn, @{col($C->{F}, 'fn')};
        $excl[$base + $_] = $weight ? $weight->($C, $_) : vec($C->{xexcl}, $_, 64) for 0 .. $C->{nctx} - 1;
        $base += $C->{nctx};
    }
    walk_stacks($frame, \@fn, \@kids, \@roots, ';', sub {
        my ($path, $nodes) = @_;
        my $x = 0;
        $x += $excl[$_] for @$nodes;
        out(join(';', @$path) . " $x\n") if $x;
    });
}

# Calls $each->([frames of the stack], [its nodes]) for every stack of the
# trees $kids below $roots (a node's frame: $frame->[$fn->[node]]), in the
# byte order of the stacks joined by $sep (a byte no frame has), by a
# depth-first walk: nodes with the same stack (--names=short can give
# siblings one frame) are taken together, and among siblings a node's own
# stack is keyed by its frame, its callees' by its frame and $sep: with
# ';', "f" and "f const" order as "f", "f const", "f const;...", "f;...".
sub walk_stacks {
    my ($frame, $fn, $kids, $roots, $sep, $each) = @_;
    my @path;
    my @todo = ([stack_items($frame, $fn, $kids, $roots, $sep), 0, 0]);    # [items, next, depth]
    while (@todo) {
        my $top = $todo[-1];
        my ($items, $i, $depth) = @$top;
        if ($i == @$items) { pop @todo; next }
        $top->[1]++;
        my ($f, $callees, $nodes) = @{$items->[$i]};
        $#path = $depth - 1;
        push @path, $f;
        if ($callees) {
            push @todo, [stack_items($frame, $fn, $kids, [map { @{$kids->[$_] // []} } @$nodes], $sep), 0, $depth + 1];
        } else {
            $each->(\@path, $nodes);
        }
    }
}

# The nodes $nodes joined by frame, as [frame, callees?, [nodes], key] in
# the order of their stacks: a frame's own (key: the frame), its callees'
# (key: the frame and $sep, only for nodes with callees).
sub stack_items {
    my ($frame, $fn, $kids, $nodes, $sep) = @_;
    my %by;
    push @{$by{$frame->[$fn->[$_]]}}, $_ for @$nodes;
    my @items;
    for my $f (keys %by) {
        push @items, [$f, 0, $by{$f}, $f];
        push @items, [$f, 1, $by{$f}, "$f$sep"] if grep { $kids->[$_] } @{$by{$f}};
    }
    return [sort { $a->[3] cmp $b->[3] } @items];
}

1;
