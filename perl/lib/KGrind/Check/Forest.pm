package KGrind::Check::Forest;
# The checks of a forest read from a profile's node records: labels known
# (mapped from the file's ids to global label ids), the trees' shape, and
# the counters the file states twice (docs/output-format.md, section 3).
# $bad->(v, message) reports an error at node v.
use strict;
use warnings;
no warnings "portable";    # 64-bit vec
use Exporter 'import';
use List::Util ();
use KGrind::Error;
use KGrind::Labels;
use KGrind::Columns;

our @EXPORT = qw(check_forest check_counters);

# Checks a forest read from node records (pre-order, parents before their
# children, parent -1 for a root): known labels, which it maps from the
# file's ids to global label ids, one tree per root label, __root__ only at
# the first tree's root (intra forests: nowhere), distinct labels among
# siblings; sets the nodes' depths. $blocks: labels are block labels.
# $bad->(v, message) reports an error at node v. With $slabs, returns the
# index of the children (by "parent label") and of the R trees' roots (by
# label) that check_counters uses; without, siblings are checked by sorting
# (parent, label) pairs, which takes less memory than a hash. $labstate:
# the reader's record of its label map (one_to_one).
sub check_forest {
    my ($F, $labmap, $intra, $blocks, $bad, $slabs, $labstate) = @_;
    my $repeat = delete $F->{repeat};
    return check_read_forest($F, $labmap, $intra, $blocks, $bad, $slabs, $repeat)
        if defined $F->{depth} && !$slabs && one_to_one($labmap, $labstate);
    my ($depth, $fnout, $roots, %child, %rootlab, @pairs) = ('', '', 0);
    push @KEEP, \%child;
    chunks($F, [qw(par fn)], sub {
        my ($s, $par, $fn) = @_;
        my @g = map_labels($labmap, $fn, $s, $blocks, $bad);
        my @d;
        for my $i (0 .. $#$par) {
            my ($v, $p, $g) = ($s + $i, $par->[$i] - 1, $g[$i]);
            if ($p < 0) {
                check_root($v, $g, $intra, \%rootlab, $bad);
                $d[$i] = 0;
                $roots++;
            } else {
                $bad->($v, " must be a root") if $v == 0;
                if ($slabs) {
                    $bad->($v, ": '$LNAME[$g]' appears twice among the children of node $p") if defined $child{"$p $g"};
                    $child{"$p $g"} = $v;
                } else {
                    push @pairs, $p * 4294967296 + $g;
                }
                $d[$i] = $p >= $s ? $d[$p - $s] + 1 : vec($depth, $p, 32) + 1;
            }
        }
        $depth .= pack('N*', @d);
        $fnout .= pack('N*', @g);
    });
    if (@pairs) {
        @pairs = sort { $a <=> $b } @pairs;
        my %twice;
        for my $i (1 .. $#pairs) { $twice{$pairs[$i]} = 1 if $pairs[$i] == $pairs[$i - 1] }
        undef @pairs;
        if (%twice) {    # the first node whose (parent, label) an earlier sibling has
            my %seen;
            chunks($F, [qw(par)], sub {
                my ($s, $par) = @_;
                for my $i (0 .. $#$par) {
                    my ($v, $p) = ($s + $i, $par->[$i] - 1);
                    next if $p < 0;
                    my $g = vec($fnout, $v, 32);
                    my $key = $p * 4294967296 + $g;
                    next unless $twice{$key};
                    $bad->($v, ": '$LNAME[$g]' appears twice among the children of node $p") if $seen{$key}++;
                }
            });
        }
    }
    $F->{fn} = $fnout;
    $F->{depth} = $depth;
    $F->{roots} = $roots;
    return (\%child, \%rootlab);
}

# The global labels of nodes s, s + 1, ... labelled @$fn in the file; an
# id the table does not have is an error.
sub map_labels {
    my ($labmap, $fn, $s, $blocks, $bad) = @_;
    my @g = @$labmap[@$fn];
    return @g if List::Util::max(@$fn) < @$labmap;    # every id below the table's size has a label
    for my $i (grep { !defined $g[$_] } 0 .. $#g) {
        $bad->($s + $i, $blocks ? ": block label $fn->[$i] has no ksf-block record" : ": unknown function id $fn->[$i]");
    }
    return @g;
}

# The checks of a tree's root v labelled g: __root__ at the first tree's
# root only (intra forests: nowhere), each other root label once
# ($rootlab: label -> root).
sub check_root {
    my ($v, $g, $intra, $rootlab, $bad) = @_;
    if ($v == 0 && $intra) {
        # intra forests: the first tree is rooted at the function's first block
        $bad->($v, ": an intra-mode forest cannot be rooted at $ROOT_NAME") if $g == $ROOT;
        return;
    }
    $bad->($v, " must be the root of the first tree, labelled $ROOT_NAME") if $v == 0 && $g != $ROOT;
    $bad->($v, ": only the first tree may be rooted at $ROOT_NAME") if $v != 0 && $g == $ROOT;
    $bad->($v, ": a second tree rooted at '$LNAME[$g]'") if defined $rootlab->{$g};
    $rootlab->{$g} = $v if $v != 0;
}

# check_forest for a forest whose reader set the depths and found the
# first node with a sibling's label ($repeat: version 3, where
# siblings come in increasing order of label, so that a repeated label
# follows its twin): the same checks in the same order, per node only the
# labels' mapping; the roots one by one.
sub check_read_forest {
    my ($F, $labmap, $intra, $blocks, $bad, $slabs, $repeat) = @_;
    my ($fnout, $roots, %rootlab) = ('', 0);
    chunks($F, [qw(fn depth)], sub {
        my ($s, $fn, $depth) = @_;
        my @g = map_labels($labmap, $fn, $s, $blocks, $bad);
        for my $i (grep { !$depth->[$_] } 0 .. $#$depth) {
            check_root($s + $i, $g[$i], $intra, \%rootlab, $bad);
            $roots++;
        }
        $fnout .= pack('N*', @g);
    });
    if (defined $repeat) {
        my $g = vec($fnout, $repeat, 32);
        $bad->($repeat, ": '$LNAME[$g]' appears twice among the children of node " . (vec($F->{par}, $repeat, 32) - 1));
    }
    $F->{fn} = $fnout;
    $F->{roots} = $roots;
    return ({}, \%rootlab);
}

# Whether no two of a label map's ids are the same label. A map only grows
# (its ids come in order), so $state (the reader's, one per map) keeps what
# was looked at, and each id is looked at once however many forests
# (threads) use the map: a profile of 18 threads and 40,000 block labels
# spent 2.6 of its 3.3 s here, looking at every id per thread.
sub one_to_one {
    my ($labmap, $state) = @_;
    my $seen = $state->{seen} //= {};
    for my $i (($state->{looked} // 0) .. $#$labmap) {
        my $g = $labmap->[$i];
        $state->{twice} = 1 if defined $g && $seen->{$g}++;
    }
    $state->{looked} = @$labmap;
    return !$state->{twice};
}

# The numbers a forest states twice must agree (docs/output-format.md,
# section 3): a node's inclusive Ir is at least its exclusive Ir (its calls
# may be 0: in a forked child, the frames active at the fork); the exclusive Ir of the nodes sums to the
# thread's ir=, which is the inclusive Ir of __root__ in function mode; with a finite k > 0 the top region (depth < k) of the trees
# in R holds no cost, and each of its nodes counts exactly the activations
# of the slab nodes (depth >= k, in any tree) whose path from depth k is its
# root path (Listing 3.2 increments both).
sub check_counters {
    my ($F, $K, $blocks, $child, $rootlab, $bad, $file) = @_;
    my $sum = 0;
    chunks($F, [qw(excl incl)], sub {
        my ($s, $exc, $inc) = @_;
        for my $i (grep { $inc->[$_] < $exc->[$_] } 0 .. $#$exc) {
            $bad->($s + $i, ": inclusive Ir $inc->[$i] is below its exclusive Ir $exc->[$i]");
        }
        $sum += List::Util::sum0(@$exc);
    });
    my $thread = "ksf-thread $F->{tid}" . (defined $F->{fname} ? " fn $F->{fname}" : '');
    ferr($file, $F->{line}, "$thread: ir=$F->{ir}, but its nodes' exclusive Ir sums to $sum") if $sum != $F->{ir};
    # function mode: the root activation includes the whole thread
    my $inc0 = vec($F->{incl}, 0, 64);
    ferr($file, $F->{line}, "$thread: ir=$F->{ir}, but the inclusive Ir of its $ROOT_NAME node is $inc0")
        if !$blocks && $inc0 != $F->{ir};
    return if $K == $INF || $K == 0;
    my ($par, $fn, $cal, $exc, $inc, $depth) = map { col($F, $_) } qw(par fn calls excl incl depth);
    my (@twin, @slab_calls, @in_first);    # a slab node's top-region copy; the calls of a copy's slab nodes
    for my $v (0 .. $#$par) {
        my ($p, $d) = ($par->[$v], $depth->[$v]);
        $in_first[$v] = $p < 0 ? $v == 0 : $in_first[$p];
        next if $d < $K;
        my $t = $d == $K ? $rootlab->{$fn->[$v]} : $child->{"$twin[$p] $fn->[$v]"};
        $bad->($v, ": no copy of its slab in the top region of the tree rooted at '$LNAME[slab_label($F, $v, $K)]'")
            unless defined $t;
        $twin[$v] = $t;
        $slab_calls[$t] += $cal->[$v];
    }
    for my $v (0 .. $#$par) {
        next if $depth->[$v] >= $K || $in_first[$v];
        $bad->($v, ": a top-region copy holds cost (Ir $exc->[$v], incl $inc->[$v])") if $exc->[$v] || $inc->[$v];
        my $want = $slab_calls[$v] // 0;
        $bad->($v, ": calls=$cal->[$v], but the slab nodes it copies count $want activations") if $cal->[$v] != $want;
    }
}

# The label of the depth-k ancestor of node v (the root label of its slab's copy).
sub slab_label {
    my ($F, $v, $K) = @_;
    $v = vec($F->{par}, $v, 32) - 1 while vec($F->{depth}, $v, 32) > $K;
    return vec($F->{fn}, $v, 32);
}

1;
