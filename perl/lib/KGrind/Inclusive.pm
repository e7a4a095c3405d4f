package KGrind::Inclusive;
# Inclusive Ir of a k-context that counts every instruction once: the
# inclusive Ir of its outermost activations only.  A context's plain
# inclusive Ir (the k-CCF's counter) adds up all its activations, so an
# activation nested in another of the same context (recursion through the
# context) is counted twice and the share can pass 100 %.
#
# A k-SF node's inclusive Ir already counts its outermost activations only
# (kgrind adds it when the last activation of the node on the stack ends).
# A node whose tree path shows an ancestor of the same k'-context runs
# inside an activation of that context, which some counted node holds: it
# is left out.  At k = inf (the tree is the calling context tree) this is
# exact.  At finite k a nesting that spans more than a tree's path cannot be
# seen, so the sum is an upper bound of the exact value; it is capped at the
# thread's Ir, which the exact value never exceeds.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)

use KGrind::Columns ();
use KGrind::Forest qw(first_root preorder shape_key);

# Forest F recorded with k = $K (-1: inf), contexts of $kk + 1 labels:
# context key (key_of) -> inclusive Ir of its outermost activations (or of
# another inclusive count, $inc: the nodes' values of an event beyond Ir,
# which the nodes count as they count Ir).  Undef for $kk = inf: a context
# is then a whole path, never nested in itself.
# Forests of the same shape (KGrind::Forest::shape_key) count the same
# nodes into the same contexts: the first one's (context, node) pairs are
# kept, a node of an activation nested in its own context's as node $NESTED.
my %SHAPE;
my $NESTED = 0xFFFFFFFF;
sub outermost {
    my ($F, $kk, $K, $inc) = @_;
    return undef if $kk < 0;
    $inc //= KGrind::Columns::col($F, 'incl');
    my $shape = shape_key($F, $kk, $K);
    if (defined $shape && (my $known = $SHAPE{$shape})) {
        my ($keys, $to) = @$known;
        my %sum;
        my @to = unpack('N*', $to);
        for (my $i = 0; $i < @to; $i += 2) { $sum{$keys->[$to[$i]]} += $to[$i + 1] == $NESTED ? 0 : $inc->[$to[$i + 1]] }
        return \%sum;
    }
    my ($par, $fn, $depth) = map { KGrind::Columns::col($F, $_) } qw(par fn depth);
    my $clear = $K < 0 ? 0 : $K;
    my $bytes = 4 * ($kk + 1);
    my (@chain, @first, @key, @stack, %open, %sum, @keys, %keyid, @to);
    for my $v (@{preorder($F)}) {
        my $p = $par->[$v];
        # leave the subtrees the pre-order is done with
        while (@stack && $stack[-1] != $p) { my $u = pop @stack; $open{$key[$u]}-- if defined $key[$u] }
        $first[$v] = $p < 0 ? first_root($F, $v) : $first[$p];
        # the labels, innermost first, packed: kk + 1 of them at most
        my $c = $chain[$v] = substr(pack('N', $fn->[$v]) . ($p < 0 ? '' : $chain[$p]), 0, $bytes);
        # the context is known when kk + 1 labels show, or the whole path of a first tree
        my $k = $key[$v] = length($c) == $bytes || $first[$v] ? $c : undef;
        unless (defined $k) { push @stack, $v; next }
        if ($first[$v] || $depth->[$v] >= $clear) {    # counted: not a cleared top region
            $sum{$k} += $open{$k} ? 0 : $inc->[$v];
            if (defined $shape) {
                push @keys, $k unless defined $keyid{$k};
                push @to, $keyid{$k} //= $#keys, $open{$k} ? $NESTED : $v;
            }
        }
        push @stack, $v;
        $open{$k}++;
    }
    $SHAPE{$shape} = [\@keys, pack('N*', @to)] if defined $shape;
    return \%sum;
}

# The key of a context given as label ids, outermost first.
sub key_of { pack('N*', reverse @{$_[0]}) }

1;
