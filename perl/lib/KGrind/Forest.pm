package KGrind::Forest;
# Forest operations on the forests KGrind::Profile reads (parallel arrays
# par/fn/calls/excl/incl/depth, parents before children): join (Def. 4*),
# inv_k (Def. 6) into a k-CCF or only its contexts, and context paths.
# Core Perl modules only.
use strict;
use warnings;
no warnings "portable";    # 64-bit vec and pack
no warnings 'recursion';
use Exporter 'import';
use KGrind::Labels;
use KGrind::Columns;

our @EXPORT = qw(join_forests first_root children_of preorder inv_k shape_key ccf_counters ctx_labels ctx_path ccf_nodes
                 ctx_ids ctx_count path_order);

# ---------------------------------------------------------------------------
# Forests: join (Def. 4*, Listing 5.7) and inv_k (Def. 6, Fig. 3.8, Listing 5.8).
# ---------------------------------------------------------------------------
sub join_forests {
    my ($tid, @F) = @_;
    return $F[0] if @F == 1;
    my (@par, @fn, @cal, @exc, @inc, @depth, %root, %child, %first);
    my $ir = 0;
    # events beyond Ir: only those every forest has (KGrind::Read::Events)
    my @evn = @{$F[0]{ev_names} // []};
    for my $F (@F[1 .. $#F]) { my %has = map { $_ => 1 } @{$F->{ev_names} // []}; @evn = grep { $has{$_} } @evn }
    my @ev = map { [] } @evn;
    # and their inclusive counts, where every forest has them
    my $incl = !grep { !$_->{evi} } @F;
    my @evi = map { [] } @evn;
    for my $F (@F) {
        my %at = map { ($F->{ev_names}[$_] => $_) } 0 .. $#{$F->{ev_names} // []};
        my @fev = map { [unpack('Q>*', $F->{ev}[$at{$_}])] } @evn;
        my @fevi = $incl ? map { [unpack('Q>*', $F->{evi}[$at{$_}])] } @evn : ();
        $ir += $F->{ir};
        my ($p, $f, $c, $x, $i) = map { col($F, $_) } qw(par fn calls excl incl);
        my @map;
        for my $v (0 .. $F->{n} - 1) {
            my $lab = $f->[$v];
            my ($key, $u);
            # the first trees (node 0: __root__, or an intra forest's first
            # block) are joined with each other, not with the R trees
            if ($p->[$v] < 0) { $u = $root{($v == 0 ? 'F' : 'R') . $lab} }
            else { $key = "$map[$p->[$v]] $lab"; $u = $child{$key} }
            unless (defined $u) {
                push @fn, $lab; push @cal, 0; push @exc, 0; push @inc, 0;
                $u = $#fn;
                if (defined $key) { push @par, $map[$p->[$v]]; push @depth, $depth[$map[$p->[$v]]] + 1; $child{$key} = $u }
                else { push @par, -1; push @depth, 0; $root{($v == 0 ? 'F' : 'R') . $lab} = $u; $first{$u} = 1 if $v == 0 }
            }
            $cal[$u] += $c->[$v]; $exc[$u] += $x->[$v]; $inc[$u] += $i->[$v];
            ($ev[$_][$u] //= 0) += $fev[$_][$v] for 0 .. $#evn;
            ($evi[$_][$u] //= 0) += $fevi[$_][$v] for $incl ? 0 .. $#evn : ();
            $map[$v] = $u;
        }
    }
    return pack_columns({ tid => $tid, ir => $ir, n => scalar(@fn), preorder => 0, firstroots => \%first,
                          (@evn ? (ev_names => \@evn, ev => [map { pack('Q>*', map { $_ // 0 } @$_) } @ev]) : ()),
                          (@evn && $incl ? (evi => [map { pack('Q>*', map { $_ // 0 } @$_) } @evi]) : ()) },
                        par => \@par, fn => \@fn, calls => \@cal, excl => \@exc, incl => \@inc, depth => \@depth);
}

# Whether root v of forest F is the root of a first tree (never cleared).
sub first_root { my ($F, $v) = @_; $F->{firstroots} ? $F->{firstroots}{$v} : $v == 0 }

# Children lists in creation order (natural order).
sub children_of {
    my ($par) = @_;
    my (@kids, @roots);
    for my $v (0 .. $#$par) {
        my $p = $par->[$v];
        if ($p < 0) { push @roots, $v } else { push @{$kids[$p]}, $v }
    }
    return (\@roots, \@kids);
}

sub preorder {
    my ($F) = @_;
    return [0 .. $F->{n} - 1] if $F->{preorder};
    my ($roots, $kids) = children_of(col($F, 'par'));
    my @out;
    my @stack = reverse @$roots;
    while (@stack) {
        my $v = pop @stack;
        push @out, $v;
        push @stack, reverse @{$kids->[$v]} if $kids->[$v];
    }
    return \@out;
}

# inv_kk of forest F recorded with k = K (Def. 6, Fig. 3.8, Listing 5.8).
# Every node v contributes the reversed suffix of at most kk+1 labels of its
# root path; every node of that chain carries v's counters, except that the
# top region (depth < K) of every tree not rooted at __root__ contributes
# zero counters (its path only).  The chains are joined by label.
#
# Implementation: each chain is packed into a big-endian string (labels + 1,
# a 0 terminator, the node's pre-order position); one C-level sort groups
# equal prefixes, and a linear scan creates each k-CCF node once (a trie of
# sorted strings: no hash lookups).  cfirst[] keeps, per k-CCF node, the
# first pre-order position whose chain passes through it: the order in
# which the thesis's join creates the nodes (--tree-order=natural).
# Counters are summed at the chain ends, then into the ancestors.
sub inv_k {
    my ($F, $kk, $K, $natural, $tree) = @_;
    if ($K == $INF && $kk == $INF && single_tree($F)) {
        return $tree || $natural ? cct_ccf($F) : cct_contexts($F);
    }
    return inv_k_contexts($F, $kk, $K) unless $tree || $natural;
    my ($par, $fn, $cal, $exc, $inc, $depth) = map { col($F, $_) } qw(par fn calls excl incl depth);
    my $ord = preorder($F);
    my $maxbytes = $kk == $INF ? 1e18 : 4 * $kk;
    my $clear = $K == $INF ? 0 : $K;
    my $n0 = $F->{n};
    my @roottree;    # per node: its tree is rooted at __root__ (never cleared)
    my @chain;       # per node: its packed reversed chain (labels + 1)
    for my $v (0 .. $n0 - 1) {    # parents have smaller ids
        my $p = $par->[$v];
        if ($p < 0) {
            $roottree[$v] = first_root($F, $v);
            $chain[$v] = pack('N', $fn->[$v] + 1);
        } else {
            $roottree[$v] = $roottree[$p];
            $chain[$v] = pack('N', $fn->[$v] + 1) . substr($chain[$p], 0, $maxbytes);
        }
    }
    my @keys;
    $#keys = $n0 - 1;
    my $i = 0;
    for my $v (@$ord) {
        $keys[$i] = $chain[$v] . pack('NN', 0, $i);
        $i++;
    }
    undef @chain;
    @keys = sort @keys;
    my (@cpar, @cfn, @cfirst, @xcal, @xexc, @xinc, @prev);
    my $vctx = '';    # per k-SF node: its chain's end + 1 (0: cleared), for the trees' events
    vec($vctx, $n0 - 1, 32) = 0 if $n0;
    my $prevkey = '';
    for my $key (@keys) {
        my $len = (length($key) >> 2) - 2;     # labels in this chain
        # common prefix (in labels) with the previous chain, at C speed
        my $j = 0;
        if (($prevkey ^ $key) =~ /\A(?:\0\0\0\0)*/) { $j = $+[0] >> 2 }
        my $plen = $prevkey eq '' ? 0 : (length($prevkey) >> 2) - 2;
        $j = $plen if $j > $plen;
        $j = $len if $j > $len;
        my $pos = unpack('N', substr($key, -4));
        if ($natural) { for my $t (0 .. $j - 1) { $cfirst[$prev[$t]] = $pos if $pos < $cfirst[$prev[$t]] } }
        $#prev = $j - 1;
        for my $t ($j .. $len - 1) {
            push @cfn, unpack('N', substr($key, 4 * $t, 4)) - 1;
            push @cpar, $t ? $prev[$t - 1] : -1;
            push @cfirst, $pos;
            push @prev, $#cfn;
        }
        $prevkey = $key;
        my $v = $ord->[$pos];
        next if !$roottree[$v] && $depth->[$v] < $clear;    # Fig. 3.8: cleared top region
        my $cid = $prev[-1];
        $xcal[$cid] += $cal->[$v]; $xexc[$cid] += $exc->[$v]; $xinc[$cid] += $inc->[$v];
        vec($vctx, $v, 32) = $cid + 1;
    }
    undef @keys;
    my $n = @cfn;
    $#xcal = $#xexc = $#xinc = $n - 1;
    my @ctx = grep { defined $xcal[$_] } 0 .. $n - 1;
    return { n => $n, par => \@cpar, fn => \@cfn, ($natural ? (first => \@cfirst) : ()), ctx => \@ctx,
             xcalls => \@xcal, xexcl => \@xexc, xincl => \@xinc, vctx => $vctx };
}

# inv_k without the k-CCF's trees, for the outputs that need only its node
# count and its contexts (the text table, source annotation, folded stacks):
# the same sorted chains, but each chain's labels are kept as its context's
# path and only the number of new prefixes is counted.  Context ids follow
# the sorted chains; every output sorts contexts by key and path anyway.
# Forests of the same shape (shape_key) have the same chains and contexts:
# the first one's are kept, with which node's counters go to which
# context, and the others only sum their counters.
my @PLAB;
my %SHAPE;
sub inv_k_contexts {
    my ($F, $kk, $K) = @_;
    my $shape = shape_key($F, $kk, $K);
    if (defined $shape && (my $known = $SHAPE{$shape})) {
        my ($n, $cchain, $to) = @$known;    # $to: (context, node) pairs
        my ($cal, $exc, $inc) = map { col($F, $_) } qw(calls excl incl);
        my (@xcal, @xexc, @xinc);
        my @to = unpack('N*', $to);
        for (my $i = 0; $i < @to; $i += 2) {
            my ($c, $v) = @to[$i, $i + 1];
            $xcal[$c] += $cal->[$v]; $xexc[$c] += $exc->[$v]; $xinc[$c] += $inc->[$v];
        }
        return { n => $n, chain => $cchain, ctx => [0 .. $#$cchain], xcalls => \@xcal, xexcl => \@xexc,
                 xincl => \@xinc };
    }
    my ($par, $fn, $cal, $exc, $inc, $depth) = map { col($F, $_) } qw(par fn calls excl incl depth);
    my $maxbytes = $kk == $INF ? 1e18 : 4 * $kk;
    my $clear = $K == $INF ? 0 : $K;
    my $n0 = $F->{n};
    my (@chain, %bucket, @roottree);
    $#chain = $n0 - 1;
    # each label's packed key, made once for all threads
    push @PLAB, pack('N', @PLAB + 1) while @PLAB < @LNAME;
    # key: chain, a 0 label, the node id (top bit set: cleared top region)
    for my $v (0 .. $n0 - 1) {    # parents have smaller ids
        my $p = $par->[$v];
        my $g = $fn->[$v];
        if ($p < 0) {
            my $rt = $roottree[$v] = first_root($F, $v);
            push @{$bucket{$g}}, ($chain[$v] = $PLAB[$g]) . pack('NN', 0, !$rt && 0 < $clear ? $v | 0x80000000 : $v);
        } elsif ($roottree[$v] = $roottree[$p]) {
            push @{$bucket{$g}}, ($chain[$v] = $PLAB[$g] . substr($chain[$p], 0, $maxbytes)) . pack('NN', 0, $v);
        } else {
            push @{$bucket{$g}}, ($chain[$v] = $PLAB[$g] . substr($chain[$p], 0, $maxbytes))
                . pack('NN', 0, $depth->[$v] < $clear ? $v | 0x80000000 : $v);
        }
    }
    undef @chain;
    undef @roottree;
    # the keys sorted: bucketed by their first label (the activated function),
    # then one C-level sort per bucket (fewer comparisons than one big sort)
    # cchain: a context's sort key (its chain is all but the last 8 bytes)
    my (@xcal, @xexc, @xinc, @cchain, @to);
    my ($n, $prev, $plen, $have) = (0, '', 0, 0);
    # (the labels this forest uses, not every label: a thread of a few nodes
    # costs a few keys however many functions the program has)
    for my $key (map { sort @{$bucket{$_}} } sort { $a <=> $b } keys %bucket) {
        my $len = length($key) - 8;            # bytes of this chain's labels
        ($prev ^ $key) =~ /\A(?:\0\0\0\0)*/;
        my $j = $+[0];                          # common prefix with the previous key
        if ($j < $len || $len != $plen) {       # a new chain: count its new k-CCF nodes
            $j = $plen if $j > $plen;
            $n += ($len - $j) >> 2;
            $plen = $len;
            $have = 0;
        }
        $prev = $key;
        my $v = vec($key, ($len >> 2) + 1, 32);    # the last word (big-endian)
        next if $v >= 0x80000000;              # Fig. 3.8: cleared top region
        push @to, $have ? $#cchain : scalar(@cchain), $v if defined $shape;
        if ($have) {
            $xcal[-1] += $cal->[$v]; $xexc[-1] += $exc->[$v]; $xinc[-1] += $inc->[$v];
        } else {
            push @cchain, $key; push @xcal, $cal->[$v]; push @xexc, $exc->[$v]; push @xinc, $inc->[$v];
            $have = 1;
        }
    }
    undef %bucket;
    $SHAPE{$shape} = [$n, \@cchain, pack('N*', @to)] if defined $shape;
    return { n => $n, chain => \@cchain, ctx => [0 .. $#cchain], xcalls => \@xcal, xexcl => \@xexc,
             xincl => \@xinc };
}

# The key of a forest's shape for contexts of $kk + 1 labels from a record
# of k = $K: the reader's digest of its par, fn and depth columns
# (KGrind::Read::Records; threads doing the same work with other counts
# share it), or undef for a joined forest or one of more than $SHAPE_NODES
# nodes (whose shape is not kept).
my $SHAPE_NODES = 1 << 16;
sub shape_key {
    my ($F, $kk, $K) = @_;
    return defined $F->{shape} && !$F->{firstroots} && $F->{n} <= $SHAPE_NODES ? "$kk $K $F->{shape}" : undef;
}

# Whether the forest is one tree (a k=inf forest: the CCT).
sub single_tree {
    my ($F) = @_;
    return $F->{roots} == 1 if defined $F->{roots};    # counted by the reader
    my $one = 1;
    chunks($F, ['par'], sub { my ($s, $par) = @_; $one &&= !grep { !$_ } $s ? @$par : @$par[1 .. $#$par] });
    return $one;
}

# inv_inf of a calling context tree without the inf-CCF's trees: every node
# is its own context (root paths are distinct), so the contexts are the
# tree's nodes with their own counters, kept as node ids; paths are walked
# only for the contexts printed.  Nothing here is per (node, depth): a
# recursion d deep costs O(d), not O(d^2).
# The contexts are F's packed columns (KGrind::Columns::col); the inf-CCF's
# node count (ccf_nodes) and the order of the paths (path_order) are
# computed when something prints them.
sub cct_contexts {
    my ($F) = @_;
    return { cct => 1, F => $F, nctx => $F->{n}, par => $F->{par}, fn => $F->{fn},
             xcalls => $F->{calls}, xexcl => $F->{excl}, xincl => $F->{incl} };
}

# The number of nodes of a k-CCF (of a CCT's inf-CCF: counted when asked).
# A CCT's automaton is kept only when its inf-CCF will be printed
# (keep_automaton): else its memory goes to the printing.
sub ccf_nodes {
    my ($C) = @_;
    return $C->{n} if defined $C->{n};
    $C->{n} = inf_ccf_size(automaton($C));
    delete $C->{automaton} unless $C->{keep_automaton};
    return $C->{n};
}

# The contexts' ids (a CCT's: all its nodes) and their number.
sub ctx_ids { my ($C) = @_; $C->{ctx} // [0 .. $C->{nctx} - 1] }
sub ctx_count { my ($C) = @_; $C->{ctx} ? scalar(@{$C->{ctx}}) : $C->{nctx} }

# A CCT's contexts in the order of their paths (name_order), computed once.
sub path_order { my ($C) = @_; $C->{order} //= name_order($C->{F}) }

my $CHAIN = 16;    # a power of two (sort_reversed_paths)

# The suffix automaton of a tree, in time and memory linear in the tree:
# the inf-CCF's nodes are the distinct prefixes of the reversed root paths
# R(v), i.e. the distinct label strings of the tree's vertical paths u -> v
# read upwards, which are the distinct substrings of the root paths read
# downwards: the automaton's states (a generalized one: each node's state
# is its parent's extended by its label).  A state s holds the strings of
# lengths len(link(s)) + 1 .. len(s) that end at the same tree nodes
# (endpos), each the one before with one more label in front: reversed,
# a chain of inf-CCF nodes, each the parent of the next, all with the same
# counters (the sums over endpos(s)), and the states whose link is s hang
# below the chain's last node (the link tree is the compacted inf-CCF).
# Returned: states, len and link (+ 1, 0 for none) per state, and state,
# each tree node's state (the one whose longest string is its root path).
# At most 2n states; len, link and each state's first transition are packed
# columns (most states have at most one), the others two packed strings per
# state (labels, targets; found with index), the empty string's a column by
# label: a hash of all transitions took twice the memory.
sub cct_automaton {
    my ($F) = @_;
    my ($par, $fn) = @$F{qw(par fn)};    # packed: par is the parent + 1
    my ($len, $link, $flab, $fto, $state) = ('') x 5;    # links, first labels + 1 (0: none)
    my (@mlab, @mto);    # per state: its other transitions' labels, targets (packed)
    my @plab;            # labels packed
    my $where = sub {    # the index of label c among p's others, or -1
        my ($p, $c) = @_;
        my $l = $mlab[$p] // return -1;
        my $key = $plab[$c] //= pack('N', $c);
        for (my $i = index($l, $key); $i >= 0; $i = index($l, $key, $i + 1)) { return $i >> 2 unless $i & 3 }
        return -1;
    };
    my $rto = '';        # the empty string's transitions, by label (targets + 1)
    my $get = sub {
        my ($p, $c) = @_;
        return vec($rto, $c, 32) - 1 if !$p && vec($rto, $c, 32);
        my $f = vec($flab, $p, 32);
        return vec($fto, $p, 32) if $f == $c + 1;
        return undef unless $f && $mlab[$p];
        my $i = $where->($p, $c);
        return $i < 0 ? undef : vec($mto[$p], $i, 32);
    };
    my $set = sub {    # an existing transition's target, or a new one
        my ($p, $c, $t) = @_;
        return vec($rto, $c, 32) = $t + 1 unless $p;
        my $f = vec($flab, $p, 32);
        if (!$f) { vec($flab, $p, 32) = $c + 1; vec($fto, $p, 32) = $t; return }
        if ($f == $c + 1) { vec($fto, $p, 32) = $t; return }
        my $i = $where->($p, $c);
        if ($i >= 0) { vec($mto[$p], $i, 32) = $t } else { $mlab[$p] .= pack('N', $c); $mto[$p] .= pack('N', $t) }
    };
    my $states = 1;                       # state 0: the empty string
    my $clone = sub {                     # q split: its strings up to len(p) + 1 long
        my ($p, $q, $c) = @_;
        my $k = $states++;
        vec($len, $k, 32) = vec($len, $p, 32) + 1;
        vec($link, $k, 32) = vec($link, $q, 32);
        vec($flab, $k, 32) = vec($flab, $q, 32);
        vec($fto, $k, 32) = vec($fto, $q, 32);
        ($mlab[$k], $mto[$k]) = ($mlab[$q], $mto[$q]) if defined $mlab[$q];
        for (; $p >= 0 && ($get->($p, $c) // -1) == $q; $p = vec($link, $p, 32) - 1) { $set->($p, $c, $k) }
        vec($link, $q, 32) = $k + 1;
        return $k;
    };
    for my $v (0 .. $F->{n} - 1) {        # parents come first
        my $pv = vec($par, $v, 32);
        my $p = $pv ? vec($state, $pv - 1, 32) : 0;
        my $c = vec($fn, $v, 32);
        my $plen = vec($len, $p, 32);
        if (defined(my $q = $get->($p, $c))) {    # the path is already a substring
            vec($state, $v, 32) = vec($len, $q, 32) == $plen + 1 ? $q : $clone->($p, $q, $c);
            next;
        }
        my $cur = $states++;
        vec($len, $cur, 32) = $plen + 1;
        for (; $p >= 0 && !defined $get->($p, $c); $p = vec($link, $p, 32) - 1) { $set->($p, $c, $cur) }
        if ($p < 0) { vec($link, $cur, 32) = 1 }
        else {
            my $q = $get->($p, $c);
            vec($link, $cur, 32) = 1 + (vec($len, $q, 32) == vec($len, $p, 32) + 1 ? $q : $clone->($p, $q, $c));
        }
        vec($state, $v, 32) = $cur;
    }
    return { states => $states, len => $len, link => $link, state => $state };
}

# The number of nodes of inv_inf of a tree: the sum of its automaton's
# chains (cct_automaton).
sub inf_ccf_size {
    my ($A) = @_;
    my ($len, $link) = @$A{qw(len link)};
    my $size = 0;
    $size += vec($len, $_, 32) - vec($len, vec($link, $_, 32) - 1, 32) for 1 .. $A->{states} - 1;
    return $size;
}

# A CCT's automaton, computed once.
sub automaton { my ($C) = @_; $C->{automaton} //= cct_automaton($C->{F}) }

# inv_inf of a calling context tree, never materialised: its automaton's
# link tree with, per state, the counters of its chain (the sums over
# endpos: each node's counters on its state, summed up the links), first
# (the least pre-order position in endpos: the natural order), the tree
# node whose label is the chain's first (the ancestor at distance
# len(link(s)) of a node of endpos) and the states below it (packed,
# grouped by link: below[s] .. below[s + 1]).  KGrind printers walk it with
# automaton_kids.  Memory linear in the tree; time linear plus the nodes printed.
# $extra: more packed 64-bit node columns of the tree (events), summed the
# same way into cols (packed, per state).
sub automaton_ccf {
    my ($C, $extra) = @_;
    my $F = $C->{F};
    my $A = automaton($C);
    my ($ns, $len, $link, $state) = @$A{qw(states len link state)};
    my ($cal, $exc, $inc, $first, $rep) = ('') x 5;
    my @xcol = map { '' } @{$extra // []};
    my $pos = $F->{preorder} ? undef : do { my @p; my $ord = preorder($F); @p[@$ord] = 0 .. $#$ord; \@p };
    vec($first, $ns - 1, 32) = 0;
    vec($_, $ns - 1, 64) = 0 for $cal, $exc, $inc, @xcol;
    for my $v (0 .. $F->{n} - 1) {
        my $s = vec($state, $v, 32);
        vec($cal, $s, 64) = vec($F->{calls}, $v, 64);    # each node has its own state
        vec($exc, $s, 64) = vec($F->{excl}, $v, 64);
        vec($inc, $s, 64) = vec($F->{incl}, $v, 64);
        if (@xcol) { vec($xcol[$_], $s, 64) = vec($extra->[$_], $v, 64) for 0 .. $#xcol }
        vec($first, $s, 32) = 1 + ($pos ? $pos->[$v] : $v);    # + 1: 0 for none yet
        vec($rep, $s, 32) = $v + 1;
    }
    # states by decreasing len (a counting sort): each before its link
    my @count;
    $count[vec($len, $_, 32)]++ for 1 .. $ns - 1;
    my @at;
    my $bylen = '';
    my $o = 0;
    for (my $l = $#count; $l > 0; $l--) { $at[$l] = $o; $o += $count[$l] // 0 }
    vec($bylen, $at[vec($len, $_, 32)]++, 32) = $_ for 1 .. $ns - 1;
    for my $i (0 .. $ns - 2) {
        my $s = vec($bylen, $i, 32);
        my $l = vec($link, $s, 32) - 1;
        next if $l <= 0;
        vec($cal, $l, 64) += vec($cal, $s, 64);
        vec($exc, $l, 64) += vec($exc, $s, 64);
        vec($inc, $l, 64) += vec($inc, $s, 64);
        if (@xcol) { vec($_, $l, 64) += vec($_, $s, 64) for @xcol }
        my $f = vec($first, $s, 32);
        vec($first, $l, 32) = $f if !vec($first, $l, 32) || $f < vec($first, $l, 32);
        vec($rep, $l, 32) ||= vec($rep, $s, 32);
    }
    undef $bylen;
    # each chain's first tree node: the ancestor at distance len(link(s)) of
    # rep(s), found in one pre-order pass with the current root path
    my (@qcount, $queries, $start) = ((), '', '');
    $qcount[vec($rep, $_, 32) - 1]++ for 1 .. $ns - 1;
    my @qat = (0);
    push @qat, $qat[-1] + ($qcount[@qat - 1] // 0) while @qat <= $F->{n};
    undef @qcount;
    my @qnext = @qat;
    for my $s (1 .. $ns - 1) { vec($queries, $qnext[vec($rep, $s, 32) - 1]++, 32) = $s }
    undef @qnext;
    my @path;
    for my $v (@{$F->{preorder} ? [0 .. $F->{n} - 1] : preorder($F)}) {
        my $d = vec($F->{depth}, $v, 32);
        $path[$d] = $v;
        for my $i ($qat[$v] .. $qat[$v + 1] - 1) {
            my $s = vec($queries, $i, 32);
            vec($start, $s, 32) = $path[$d - vec($len, vec($link, $s, 32) - 1, 32)];
        }
    }
    undef @qat;
    undef $queries;
    # the link tree's children, grouped by parent (a counting sort by link)
    my @kcount;
    $kcount[vec($link, $_, 32) - 1]++ for 1 .. $ns - 1;
    my ($below, $kids) = ('', '');
    my $sum = 0;
    for my $s (0 .. $ns - 1) { vec($below, $s, 32) = $sum; $sum += $kcount[$s] // 0 }
    vec($below, $ns, 32) = $sum;
    undef @kcount;
    my $next = $below;
    for my $s (1 .. $ns - 1) {
        my $l = vec($link, $s, 32) - 1;
        vec($kids, vec($next, $l, 32), 32) = $s;
        vec($next, $l, 32) = vec($next, $l, 32) + 1;
    }
    return { automaton => 1, F => $F, len => $len, link => $link, calls => $cal, excl => $exc, incl => $inc,
             first => $first, start => $start, below => $below, kids => $kids, cols => \@xcol };
}

# The states below state s in the automaton's link tree (automaton_ccf).
sub automaton_kids {
    my ($T, $s) = @_;
    return unpack('N*', substr($T->{kids}, 4 * vec($T->{below}, $s, 32),
                               4 * (vec($T->{below}, $s + 1, 32) - vec($T->{below}, $s, 32))));
}

# The nodes of a tree sorted by their reversed root paths R(v), the longest
# common prefix of each with the one before it (labels), and a function
# giving the ancestor t levels above a node.  The first $CHAIN labels of
# each R(v) are packed and sorted as strings; longer common prefixes
# (recursion) are sorted by prefix doubling (Manber-Myers, with
# Larsson-Sadakane's ranks): the first 2h labels are ordered by the pair
# (rank_h(v), rank_h(anc_h(v))).  O(n log depth).
sub sort_reversed_paths {
    my ($F) = @_;
    my ($par, $fn, $depth) = map { col($F, $_) } qw(par fn depth);
    my $n = $F->{n};
    my @chain;                            # the first $CHAIN labels (+ 1) of R(v)
    $#chain = $n - 1;
    for my $v (0 .. $n - 1) {             # parents come first
        my $p = $par->[$v];
        $chain[$v] = pack('N', $fn->[$v] + 1) . ($p < 0 ? '' : substr($chain[$p], 0, 4 * $CHAIN - 4));
    }
    # a chain that ends (at the root) sorts before its extensions
    my @sa = map { unpack('N', substr($_, -4)) } sort map { "$chain[$_]\0\0\0\0" . pack('N', $_) } 0 .. $n - 1;
    my (@rank, @active);
    for my $i (0 .. $n - 1) {
        my $v = $sa[$i];
        $rank[$v] = $i > 0 && $chain[$sa[$i - 1]] eq $chain[$v] ? $rank[$sa[$i - 1]] : $i;
    }
    for my $i (0 .. $n - 1) {             # in a group of two or more, with labels left to compare
        my $v = $sa[$i];
        push @active, $v if length($chain[$v]) == 4 * $CHAIN
            && (($i > 0 && $rank[$sa[$i - 1]] == $rank[$v]) || ($i < $n - 1 && $rank[$sa[$i + 1]] == $rank[$v]));
    }
    my @anc = @$par;                      # -1: past the root
    for (my $h = 1; $h < $CHAIN; $h *= 2) { @anc = map { $_ < 0 ? -1 : $anc[$_] } @anc }
    my (@R, @A);                          # per level from $CHAIN labels: ranks, ancestors + 1 (vec, 32 bits)
    while (1) {
        push @R, pack('N*', @rank);
        push @A, pack('N*', map { $_ + 1 } @anc);
        last unless @active;
        # rank 0 is "past the root": ranks are shifted by one in the keys
        my @key = sort map { pack('NNN', $rank[$_], $anc[$_] < 0 ? 0 : $rank[$anc[$_]] + 1, $_) } @active;
        my (@new, @still);
        my ($prev, $group, $base, $sub) = ('', -1, 0, 0);
        for my $i (0 .. $#key) {
            my $r = unpack('N', $key[$i]);
            if ($r != $group) { ($group, $base) = ($r, $i) }
            my $pair = substr($key[$i], 0, 8);
            if ($pair ne $prev) { $sub = $i; $prev = $pair }
            $new[$i] = $r + $sub - $base;
        }
        # a node stays active while its new group has another member with
        # labels left to compare (a group past the root is of equal strings)
        for my $i (0 .. $#key) {
            my $v = unpack('N', substr($key[$i], 8));
            $rank[$v] = $new[$i];
            push @still, $v if (($i > 0 && $new[$i - 1] == $new[$i]) || ($i < $#key && $new[$i + 1] == $new[$i]))
                               && substr($key[$i], 4, 4) ne "\0\0\0\0";
        }
        @active = @still;
        @anc = map { $_ < 0 ? -1 : $anc[$_] } @anc;
    }
    # the ranks are distinct (root paths are): each is its node's position
    @sa = ();
    @sa[@rank] = 0 .. $n - 1;
    @sa = sort { $rank[$a] <=> $rank[$b] } 0 .. $n - 1 if grep { !defined } @sa;
    my @lcp = (0);
    for my $i (1 .. $#sa) {
        my ($u, $w) = @sa[$i - 1, $i];
        my $lcp = 0;
        if ($chain[$u] eq $chain[$w] && length($chain[$u]) == 4 * $CHAIN) {
            # binary lifting over the levels, then the chains of where it stopped
            for (my $j = $#R; $j >= 0 && $u >= 0 && $w >= 0; $j--) {
                next if vec($R[$j], $u, 32) != vec($R[$j], $w, 32);
                $lcp += $CHAIN << $j;
                $u = vec($A[$j], $u, 32) - 1;
                $w = vec($A[$j], $w, 32) - 1;
            }
        }
        if ($u >= 0 && $w >= 0) {
            ($chain[$u] ^ $chain[$w]) =~ /\A(?:\0\0\0\0)*/;
            $lcp += $+[0] >> 2;
        }
        my ($d1, $d2) = ($depth->[$sa[$i - 1]], $depth->[$sa[$i]]);
        my $len = ($d1 < $d2 ? $d1 : $d2) + 1;
        push @lcp, $lcp < $len ? $lcp : $len;
    }
    my $ancestor = sub {
        my ($v, $t) = @_;
        for (my $j = $#A; $j >= 0; $j--) {
            next if $t < ($CHAIN << $j);
            $v = vec($A[$j], $v, 32) - 1;
            $t -= $CHAIN << $j;
        }
        $v = $par->[$v] while $t--;
        return $v;
    };
    return (\@sa, \@lcp, $ancestor);
}

# inv_inf of a calling context tree, with its trees: the trie of the
# reversed root paths, built from them sorted (each adds the labels after
# its common prefix with the one before), so in time linear in the nodes
# of the result plus the sort.  Node ids and the natural order (cfirst: the
# first pre-order position whose path passes through a node) are those of
# inv_k's.
sub cct_ccf {
    my ($F) = @_;
    my ($par, $fn, $cal, $exc, $inc) = map { col($F, $_) } qw(par fn calls excl incl);
    my ($sa, $lcp, $ancestor) = sort_reversed_paths($F);
    my $ord = preorder($F);
    my @pos;
    @pos[@$ord] = 0 .. $#$ord;
    my $names = name_order($F);
    my (@cpar, @cfn, @cfirst, @xcal, @xexc, @xinc, @prev, @ctx, @order);
    my $vctx = '';    # per tree node: its context + 1 (inv_k's)
    for my $i (0 .. $#$sa) {
        my $v = $sa->[$i];
        my $j = $lcp->[$i];
        $#prev = $j - 1;
        for (my $u = $ancestor->($v, $j); $u >= 0; $u = $par->[$u]) {
            push @cfn, $fn->[$u];
            push @cpar, @prev ? $prev[-1] : -1;
            push @prev, $#cfn;
        }
        my $c = $prev[-1];
        ($xcal[$c], $xexc[$c], $xinc[$c], $cfirst[$c]) = ($cal->[$v], $exc->[$v], $inc->[$v], $pos[$v]);
        vec($vctx, $v, 32) = $c + 1;
        $order[$c] = $names->[$v];     # the contexts' order by path, for sorted_contexts
        push @ctx, $c;
    }
    my $n = @cfn;
    $#xcal = $#xexc = $#xinc = $#cfirst = $n - 1;
    for (my $c = $n - 1; $c > 0; $c--) {        # a node's first position: its subtree's least
        my $p = $cpar[$c];
        $cfirst[$p] = $cfirst[$c] if $p >= 0 && (!defined $cfirst[$p] || $cfirst[$c] < $cfirst[$p]);
    }
    return { n => $n, par => \@cpar, fn => \@cfn, first => \@cfirst, ctx => [sort { $a <=> $b } @ctx], order => \@order,
             xcalls => \@xcal, xexcl => \@xexc, xincl => \@xinc, vctx => $vctx };
}

# inv_inf of a calling context tree pruned to the chains of the contexts
# $ids (their root paths reversed: a trie of at most their total length),
# each node with its counters over the whole inf-CCF: the sums over the
# tree's nodes whose reversed root path starts with the node's chain.  One
# pass over the tree, each node walking up its path while the trie has the
# next label (never past the trie's depth); the inf-CCF itself is never
# built.  first: the natural order, as cct_ccf's.  $extra: more packed
# 64-bit node columns of the tree (events), summed the same way into cols.
sub pruned_ccf {
    my ($F, $ids, $extra) = @_;
    $extra //= [];
    my ($par, $fn) = @$F{qw(par fn)};    # packed: par is the parent + 1
    my (@cpar, @cfn, %child);
    my $rootlab = '';                     # a bit per label that starts a chain
    for my $v (@$ids) {
        my $c = -1;
        for (my $u = $v + 1; $u; $u = vec($par, $u - 1, 32)) {
            my $lab = vec($fn, $u - 1, 32);
            my $x = $child{"$c $lab"};
            unless (defined $x) {
                push @cfn, $lab;
                push @cpar, $c;
                $x = $child{"$c $lab"} = $#cfn;
                vec($rootlab, $lab, 1) = 1 if $c < 0;
            }
            $c = $x;
        }
    }
    my $n = @cfn;
    my (@cal, @exc, @inc, @first);
    $cal[$_] = $exc[$_] = $inc[$_] = 0 for 0 .. $n - 1;
    my @xcol = map { [(0) x $n] } @$extra;
    my $pos = $F->{preorder} ? undef : do { my @p; my $ord = preorder($F); @p[@$ord] = 0 .. $#$ord; \@p };
    for my $w (0 .. $F->{n} - 1) {
        next unless vec($rootlab, vec($fn, $w, 32), 1);
        my ($cw, $xw, $iw, $pw) = (vec($F->{calls}, $w, 64), vec($F->{excl}, $w, 64), vec($F->{incl}, $w, 64),
                                   $pos ? $pos->[$w] : $w);
        my $c = -1;
        for (my $u = $w + 1; $u; $u = vec($par, $u - 1, 32)) {
            my $x = $child{"$c " . vec($fn, $u - 1, 32)} // last;
            $cal[$x] += $cw; $exc[$x] += $xw; $inc[$x] += $iw;
            if (@xcol) { $xcol[$_][$x] += vec($extra->[$_], $w, 64) for 0 .. $#xcol }
            $first[$x] = $pw if !defined $first[$x] || $pw < $first[$x];
            $c = $x;
        }
    }
    return { n => $n, shown => 1, par => \@cpar, fn => \@cfn, calls => \@cal, excl => \@exc, incl => \@inc,
             first => \@first, cols => \@xcol };
}

sub min { $_[0] < $_[1] ? $_[0] : $_[1] }

# Each node's position in the order of root paths compared name by name
# (byte order, a path before its extensions): the pre-order of the tree
# with siblings sorted by name.  sorted_contexts breaks ties with it, as it
# does with the paths themselves for other contexts.
sub name_order {
    my ($F) = @_;
    my ($par, $fn) = @$F{qw(par fn)};    # packed: par is the parent + 1
    my @byparent = sort map { substr($par, 4 * $_, 4) . $LNAME[vec($fn, $_, 32)] . pack('xN', $_) } 0 .. $F->{n} - 1;
    my (@first, @next, $prev, $prevpar);     # first child, next sibling
    for my $k (@byparent) {
        my $v = unpack('N', substr($k, -4));
        my $p = unpack('N', $k) - 1;
        if (defined $prevpar && $prevpar == $p) { $next[$prev] = $v } elsif ($p >= 0) { $first[$p] = $v }
        ($prev, $prevpar) = ($v, $p);
    }
    undef @byparent;
    my @order;
    my $i = 0;
    my @stack = (0);
    while (@stack) {
        my $v = pop @stack;
        $order[$v] = $i++;
        push @stack, $next[$v] if defined $next[$v];
        push @stack, $first[$v] if defined $first[$v];
    }
    return \@order;
}

# The k-CCF node counters (each chain's counters on all its nodes): the
# chain ends' sums, summed into their ancestors.  Only trees need them.
sub ccf_counters {
    my ($C) = @_;
    return $C if $C->{calls};
    my $n = $C->{n};
    my $cpar = $C->{par};
    my @ccal = map { $_ // 0 } @{$C->{xcalls}};
    my @cexc = map { $_ // 0 } @{$C->{xexcl}};
    my @cinc = map { $_ // 0 } @{$C->{xincl}};
    for (my $c = $n - 1; $c > 0; $c--) {
        my $p = $cpar->[$c];
        next if $p < 0;
        $ccal[$p] += $ccal[$c]; $cexc[$p] += $cexc[$c]; $cinc[$p] += $cinc[$c];
    }
    @$C{qw(calls excl incl)} = (\@ccal, \@cexc, \@cinc);
    return $C;
}

# Path of context cid, outermost caller first: label ids (ctx_labels) or names.
sub ctx_labels {
    my ($C, $cid) = @_;
    return [map { $_ - 1 } reverse unpack('N*', substr($C->{chain}[$cid], 0, -8))] if $C->{chain};
    my @p;
    if ($C->{cct}) {    # packed columns (a CCT): the path is the node's root path
        my ($par, $fn) = @$C{qw(par fn)};
        for (my $v = $cid + 1; $v; $v = vec($par, $v - 1, 32)) { push @p, vec($fn, $v - 1, 32) }
        return [reverse @p];
    }
    while ($cid >= 0) { push @p, $C->{fn}[$cid]; $cid = $C->{par}[$cid] }
    return \@p;    # a k-CCF path is stored reversed
}

sub ctx_path { [map { $LNAME[$_] } @{ctx_labels(@_)}] }

1;
