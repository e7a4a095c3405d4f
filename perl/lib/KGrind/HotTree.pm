package KGrind::HotTree;
# --tree: a thread's hot contexts as one tree, outermost caller first (as
# perf's call graph and pprof's tree read deep stacks): a node is a chain
# of functions from a root, its inclusive share the Ir of the contexts at
# or below it, its exclusive share its own context's (at k = inf the
# calling context tree: a node is a context, its inclusive share its
# inclusive Ir; at finite k the contexts grouped by their outermost
# callers, as a flame graph of the folded stacks draws them).  Nodes
# below --tree-min % of the thread's Ir are left out.  With --event (or a
# --sort by an event), the shares are of that event (incl:<event>: the
# same, a node's inclusive share being the one pruned and sorted by).  A chain of single
# callees stays in one column; a node's callees, when it has several, are
# drawn "+ " each, with "| " down to the next one.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec on packed columns
use Exporter 'import';
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Forest qw(ctx_ids ctx_labels);
use KGrind::Model qw(cval context_value thread_event_total is_ir_key);
use KGrind::Names qw(display_name);
use KGrind::Format qw(commify);
use KGrind::Sites qw(site_index level_lines);

our @EXPORT_OK = qw(hot_tree_lines tree_event);

# The event the tree weighs: --event, else --sort's when an event, else Ir
# (incl:<event> as <event>: a node shows both its shares).
sub tree_event {
    my ($o) = @_;
    my $e = $o->{event} // (is_ir_key($o->{sort}) ? 'Ir' : $o->{sort});
    return $e =~ s/^incl://r;
}

# the widest guide ("| | + ") before a name: deeper ones keep their last
# columns after "..."
my $MAX_GUIDE = 48;

# The tree's nodes: {par, fn, self, calls (undef: not a context), incl}.
# A calling context tree's are its own; else the contexts' paths merged
# from their outermost callers.
sub tree_nodes {
    my ($C, $e) = @_;
    my $self_of = $e eq 'Ir' ? sub { cval($C, 'xexcl', $_[0]) } : sub { context_value($C, $e, $_[0]) };
    my (@par, @fn, @self, @calls);
    if ($C->{cct}) {
        @par = @{col($C->{F}, 'par')};
        @fn = @{col($C->{F}, 'fn')};
        for my $v (0 .. $#par) { $self[$v] = $self_of->($v); $calls[$v] = cval($C, 'xcalls', $v) }
    } else {
        my %id;
        for my $cid (@{ctx_ids($C)}) {
            my $x = $self_of->($cid) or next;
            my $u = -1;
            for my $l (@{ctx_labels($C, $cid)}) {
                $u = $id{"$u\0$l"} //= do { push @par, $u; push @fn, $l; push @self, 0; $#par };
            }
            $self[$u] += $x;
            $calls[$u] = ($calls[$u] // 0) + cval($C, 'xcalls', $cid);
        }
    }
    # children after their parents: the inclusive sums from the last node up
    my @incl = @self;
    for (my $v = $#par; $v >= 0; $v--) { $incl[$par[$v]] += $incl[$v] if $par[$v] >= 0 }
    return { par => \@par, fn => \@fn, self => \@self, calls => \@calls, incl => \@incl };
}

# The lines of thread $t's tree (header included).
sub hot_tree_lines {
    my ($o, $S, $t) = @_;
    my $e = tree_event($o);
    my $N = tree_nodes($t->{C}, $e);
    my ($par, $fn, $self, $calls, $incl) = @$N{qw(par fn self calls incl)};
    my $ir = ($e eq 'Ir' ? $t->{ir} : thread_event_total($t->{C}, $e)) || 1;
    my $min = $o->{'tree-min'} * $ir / 100;
    my (@kids, @roots);
    for my $v (0 .. $#$par) {
        next unless $incl->[$v] && $incl->[$v] >= $min;
        if ($par->[$v] >= 0) { push @{$kids[$par->[$v]]}, $v } else { push @roots, $v }
    }
    my @name = map { display_name($o, $LNAME[$_]) } @$fn;
    # --sites: a node's name with the line its caller called it from
    my $I = $o->{sites} ? ($S->{site_index} //= site_index($S)) : undef;
    my $from = sub {
        my ($v) = @_;
        return '' if !$I || $par->[$v] < 0;
        my @chain;
        for (my $u = $v; $u >= 0; $u = $par->[$u]) { unshift @chain, $LNAME[$fn->[$u]] }
        my $lines = level_lines($I, \@chain)->[-1];
        return @$lines ? " (from $name[$par->[$v]]:" . join('|', @$lines) . ')' : '';
    };
    my $order = sub { [sort { $incl->[$b] <=> $incl->[$a] || $name[$a] cmp $name[$b] || $a <=> $b } @{$_[0] // []}] };
    my $pc = sub { sprintf('%.2f%%', 100 * $_[0] / $ir) };
    my @out = (sprintf('%8s %8s %12s  %s', 'incl', 'self', 'calls', 'context (outermost caller first)'));
    # [node, guide of its line, guide of the lines below it]
    my $first = $order->(\@roots);
    my @todo = reverse(@$first == 1 ? [$first->[0], '', ''] : branch($first, ''));
    while (my $e = pop @todo) {
        my ($v, $guide, $below) = @$e;
        $guide = '...' . substr($guide, -($MAX_GUIDE - 3)) if length $guide > $MAX_GUIDE;
        push @out, sprintf('%8s %8s %12s  %s%s', $pc->($incl->[$v]), $pc->($self->[$v]),
                           defined $calls->[$v] ? commify($calls->[$v]) : '', $guide, $name[$v] . $from->($v));
        my $k = $order->($kids[$v]);
        push @todo, reverse(@$k == 1 ? [$k->[0], $below, $below] : branch($k, $below));
    }
    return @out;
}

# Siblings drawn below the guide $below: "+ " before each, "| " below
# each but the last.
sub branch {
    my ($nodes, $below) = @_;
    return map { [$nodes->[$_], "$below+ ", $below . ($_ < $#$nodes ? '| ' : '  ')] } 0 .. $#$nodes;
}

1;
