package KGrind::Export::Dot;
# --format=dot: Graphviz graphs.  In function mode the call graph of the
# k-contexts (write): one node per k-context (threads summed), one edge per
# call edge between contexts (the callgrind body's calls= lines: caller
# context -> callee context; at k = inf a context's path) labelled with
# its calls and inclusive Ir, pruned to the contexts within --threshold
# and --top by the sort key, each joined to the graph's root through its
# heaviest callers (among those nearer the roots: caller_depths), so the
# graph is connected, recursive contexts too.  In the block modes
# (block_graph) each thread's k-CCF nodes on the paths of its hottest
# contexts, a cluster a thread.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec on packed columns
use KGrind::Labels;
use KGrind::Forest;
use KGrind::Model;
use KGrind::Names qw(display_name);
use KGrind::Sites qw(body_k full_caller_names site_index level_lines);
use KGrind::Format qw(commify utf8_clean dq);
use KGrind::Output;

# --format=dot: the block modes' graph; at k = inf (CCTs) the call graph
# of the contexts (cct_model); else the call graph of the body's contexts,
# at most the body's k.
sub show {
    my ($o, $S) = @_;
    return out(block_graph($o, $S)) if $S->{blockmode};
    my $model;
    if ($S->{kk} == $INF && !grep { !KGrind::Forest::single_tree($_->{F}) } @{$S->{threads}}) {
        $model = cct_model($o, $S);
    } else {
        # finite k above the body's: the graph of the body's contexts
        my $bk = body_k($S);
        $S = build_model({ %$o, k => kstr($bk) }) if $S->{kk} != $INF && $bk != $INF && $S->{kk} > $bk;
        $model = contexts_model({ %$o, names => 'full', limited => 0, sites => 0 }, $S);
        $model->{edges} = call_edges($S, $model->{threads});
    }
    # --sites: each arrow with the lines of its calls (at k = inf, from the
    # body's calls into the callee's chain: KGrind::Sites)
    if ($o->{sites} && $model->{k} eq 'inf') {
        my $I = site_index($S);
        $_->{lines} = { map { $_ => 1 } @{level_lines($I, $_->{to})->[-1] // []} } for grep { $_->{to} } @{$model->{edges}};
    }
    out(written(\&write, $model, $o));
}

# A box's fill: white to red by its share of the Ir.
sub fill_colour { my ($share) = @_; sprintf('#ff%02x%02x', 255 - int(200 * $share), 255 - int(200 * $share)) }

# The block modes' graph, as a string: per thread the k-CCF nodes on the
# paths of its hottest contexts (--top, --threshold), the contexts' own
# nodes in bold, edges from caller to callee labelled with the calls.
sub block_graph {
    my ($o, $S) = @_;
    my @out = ('digraph kgrind {', '  rankdir=LR;', '  node [shape=box, style=filled, fontname="Helvetica"];',
               '  label=' . dq(utf8_clean('hottest ' . kstr($S->{kk}) . "-contexts of $S->{P}[0]{file} (sorted by $o->{sort}); "
                   . 'arrows go from caller to callee')) . ';');
    for my $t (@{$S->{threads}}) {
        my $C = ccf_counters($t->{C});
        my $sorted = sorted_contexts($o, $C, $o->{top});
        my ($show) = shown_contexts($o, $C, $sorted);
        my (%node, %edge, %hotend);
        for my $cid (@$show) {
            $hotend{$cid} = 1;
            my $u = $cid;
            while ($u >= 0) { $node{$u} = 1; my $p = $C->{par}[$u]; $edge{"$u $p"} = 1 if $p >= 0; $u = $p }
        }
        my $tt = $t->{tid};
        push @out, "  subgraph \"cluster_t$tt\" {", '    label=' . dq("thread $tt") . ';';
        for my $u (sort { $a <=> $b } keys %node) {
            push @out, sprintf('    "t%s_%d" [label=%s, fillcolor="%s"%s];', $tt, $u,
                dq(utf8_clean($LNAME[$C->{fn}[$u]] . "\ncalls $C->{calls}[$u]\nIr $C->{excl}[$u] / incl $C->{incl}[$u]")),
                fill_colour($t->{ir} ? $C->{excl}[$u] / $t->{ir} : 0), $hotend{$u} ? ', penwidth=2' : '');
        }
        for my $e (sort keys %edge) {
            my ($u, $p) = split ' ', $e;
            push @out, sprintf('    "t%s_%d" -> "t%s_%d" [label="%s"];', $tt, $u, $tt, $p, $C->{calls}[$u]);
        }
        push @out, '  }';
    }
    return join("\n", @out, '}') . "\n";
}

# The call graph at k = inf, in time linear in the forest plus the graph
# (contexts_model writes every context's path: O(nodes x depth)): the
# threads' calling context trees joined (each context summed over the
# threads, as the graph of the body's contexts is), the hottest contexts
# by --top and --threshold, and their callers up to __root__ (a context's
# one caller is its path's prefix); a box's tooltip is the last
# $DOT_TOOLTIP functions of its path.  Boxes are numbered in the order of
# their paths.
my $DOT_TOOLTIP = 32;
sub cct_model {
    my ($o, $S) = @_;
    my $J = join_forests('all', map { $_->{F} } @{$S->{threads}});
    my $C = inv_k($J, $INF, $INF, 0, 0);
    @$C{qw(F_of kk K)} = ($J, $INF, $INF);    # its events (KGrind::Events): the nodes'
    my $e = defined $o->{event} && $o->{event} ne 'Ir' ? $o->{event} : undef;
    my ($show) = shown_contexts($o, $C, sorted_contexts($o, $C, $o->{top}));
    my ($par, $fn) = @$J{qw(par fn)};
    my $parent = sub { vec($par, $_[0], 32) - 1 };
    my $name = sub { utf8_clean($LNAME[vec($fn, $_[0], 32)]) };
    my (%in, %kids);
    for my $v (@$show) {
        for (my $u = $v; !$in{$u}; ) {
            $in{$u} = 1;
            my $p = $parent->($u);
            last if $p < 0;
            push @{$kids{$p}}, $u;
            $u = $p;
        }
    }
    my (%key, @stack);
    @stack = (0) if $in{0};
    while (@stack) {
        my $u = pop @stack;
        $key{$u} = sprintf('%09d', scalar keys %key);
        push @stack, reverse sort { $LNAME[vec($fn, $a, 32)] cmp $LNAME[vec($fn, $b, 32)] } @{$kids{$u} // []};
    }
    my $tooltip = sub {
        my @p;
        for (my $u = $_[0]; $u >= 0 && @p <= $DOT_TOOLTIP; $u = $parent->($u)) { push @p, $name->($u) }
        my $cut = @p > $DOT_TOOLTIP && pop @p;
        join(' > ', ($cut ? '...' : ()), reverse @p);
    };
    my @contexts = map { { key => $key{$_}, name => $name->($_), tooltip => $tooltip->($_),
                           calls => vec($J->{calls}, $_, 64), Ir => vec($J->{excl}, $_, 64),
                           inclusive_outermost => vec($J->{incl}, $_, 64),
                           ($e ? ($e => context_value($C, $e, $_)) : ()) } } sort { $a <=> $b } keys %in;
    # --sites: an arrow's callee chain, for the lines of its calls
    my $chain = sub { my @p; for (my $u = $_[0]; $u >= 0; $u = $parent->($u)) { unshift @p, $LNAME[vec($fn, $u, 32)] } \@p };
    my @edges = map { { from_key => $key{$parent->($_)}, to_key => $key{$_}, calls => vec($J->{calls}, $_, 64),
                        inclusive => vec($J->{incl}, $_, 64), ($o->{sites} ? (to => $chain->($_)) : ()) } } grep { $parent->($_) >= 0 } sort { $a <=> $b } keys %in;
    my $e_total = 0;
    if ($e) { $e_total += context_value($C, $e, $_) for 0 .. $J->{n} - 1 }
    return { k => 'inf', files => [map { $_->{file} } @{$S->{P}}], total => $S->{total},
             threads => [{ contexts => \@contexts }], edges => \@edges, shown => [map { $key{$_} } @$show],
             ($e ? (event => $e, event_total => $e_total) : ()) };
}

# The call edges between the contexts shown, summed over threads and
# profiles: [{from, to, calls, inclusive}].  At k = inf a context's caller is
# its path's prefix; else the callgrind body's calls= lines, projected to
# the k shown (the last k+1 names of each side).
sub call_edges {
    my ($S, $threads) = @_;
    return cct_edges($threads) if $S->{kk} == $INF;
    my $n = $S->{kk} + 1;
    my %sum;
    for my $P (@{$S->{P}}) {
        my $full = full_caller_names($P->{calls} // {});
        my $path = sub {
            my ($head, @callers) = split /'/, $_[0];
            my @p = reverse $head, map { $full->{$_} // $_ } @callers;
            @p > $n ? [@p[-$n .. -1]] : \@p;
        };
        while (my ($k, $v) = each %{$P->{calls} // {}}) {
            my ($from, $to) = map { $path->($_) } split /\0/, $k;
            my $e = $sum{join("\0", @$from) . "\0\0" . join("\0", @$to)} //= { from => $from, to => $to,
                                                                                calls => 0, inclusive => 0 };
            $e->{calls} += $v->[0];
            $e->{inclusive} += $v->[1];
            $e->{lines}{$_} = 1 for grep { $_ } map { (split /\0/)[1] } keys %{$P->{call_sites}{$k} // {}};
        }
    }
    return [map { $sum{$_} } sort keys %sum];
}

sub cct_edges {
    my ($threads) = @_;
    my %sum;
    for my $c (map { @{$_->{contexts}} } @$threads) {
        next if @{$c->{path}} < 2;
        my $e = $sum{join("\0", @{$c->{path}})} //= { from => [@{$c->{path}}[0 .. $#{$c->{path}} - 1]],
                                                       to => $c->{path}, calls => 0, inclusive => 0 };
        $e->{calls} += $c->{calls};
        $e->{inclusive} += $c->{inclusive};
    }
    return [map { $sum{$_} } sort keys %sum];
}

# A context's key.  The callgrind body names two functions of the same name
# (mmap of ld.so and of libc) alike, where the k-SF labels say "mmap#2": the
# graph takes them as one.
sub key { join("\0", map { (my $n = $_) =~ s/#\d+\z//; $n } @{$_[0]}) }

# key -> {name, tooltip, calls, Ir, inclusive}, summed over the threads.  A
# context given with its key, name and tooltip (cct_model's k = inf
# graph: its paths can be 10^5 deep) needs no path.
sub contexts {
    my ($data) = @_;
    my $e = $data->{event};    # --event: that event's count too
    my %ctx;
    for my $t (@{$data->{threads}}) {
        for my $c (@{$t->{contexts}}) {
            my $x = $ctx{$c->{key} // key($c->{path})} //= {
                name => $c->{name} // $c->{path}[-1], tooltip => $c->{tooltip} // join(' > ',
                    (is_truncated($data->{k}, $c->{path}[0]) ? truncation_marker($data->{k}) : ()), @{$c->{path}}),
                calls => 0, Ir => 0, inclusive => 0 };
            $x->{$_} += $c->{$_} // 0 for 'calls', 'Ir', $e // ();
            $x->{inclusive} += $c->{inclusive_outermost};    # recursion counted once: at most 100 %
        }
    }
    return \%ctx;
}

# The contexts to show: by the sort key until the cumulative share reaches
# the threshold, at most top of them.
sub hottest {
    my ($ctx, $o) = @_;
    my $key = $o->{sort} eq 'Ir' && defined $o->{event} ? $o->{event} : $o->{sort};
    my @all = sort { $ctx->{$b}{$key} <=> $ctx->{$a}{$key} || $a cmp $b } keys %$ctx;
    my $sum = 0;
    $sum += $ctx->{$_}{$key} for @all;
    my ($cum, @show) = (0);
    for my $k (@all) {
        last if $o->{top} && @show >= $o->{top};
        last if $sum && $o->{threshold} < 100 && 100 * $cum / $sum >= $o->{threshold};
        push @show, $k;
        $cum += $ctx->{$k}{$key};
    }
    return @show;
}

# Each context's depth in the call graph: 0 for the contexts no other
# context calls (__root__, a thread's first function), else one more than
# its least deep caller's (a breadth-first walk along the call edges).
sub caller_depths {
    my ($ctx, $in) = @_;
    my %out;
    for my $t (keys %$in) {
        push @{$out{$_->{from_key}}}, $t for grep { $_->{from_key} ne $t } @{$in->{$t}};
    }
    my @level = grep { my $t = $_; !grep { $_->{from_key} ne $t } @{$in->{$t} // []} } sort keys %$ctx;
    my %depth = map { $_ => 0 } @level;
    for (my $d = 1; @level; $d++) {
        my @next;
        for my $f (@level) {
            for my $t (@{$out{$f} // []}) { next if exists $depth{$t}; $depth{$t} = $d; push @next, $t }
        }
        @level = @next;
    }
    return \%depth;
}

sub write {
    my ($data, $fh, $o) = @_;
    my $ctx = contexts($data);
    my (%in, %edge);    # callee -> [edges]; "from\0\0to" -> edge
    for my $e (@{$data->{edges}}) {
        my ($f, $t) = ($e->{from_key} //= key($e->{from}), $e->{to_key} // key($e->{to}));
        next unless $ctx->{$f} && $ctx->{$t};
        push @{$in{$t}}, $e;
        $edge{"$f\0\0$t"} = $e;
    }
    # shown contexts, then each one's chain of heaviest callers nearer the
    # roots (a recursive context's heaviest caller is often itself, or a
    # context it calls: a chain of heaviest callers would go round)
    my $depth = caller_depths($ctx, \%in);
    my %node;
    for my $k ($data->{shown} ? @{$data->{shown}} : hottest($ctx, $o)) {
        while (defined $k && !$node{$k}) {
            $node{$k} = 1;
            my $d = $depth->{$k} // next;
            my ($heavy) = sort { $b->{inclusive} <=> $a->{inclusive} || $a->{from_key} cmp $b->{from_key} }
                          grep { ($depth->{$_->{from_key}} // $d) < $d } @{$in{$k} // []};
            $k = $heavy ? $heavy->{from_key} : undef;
        }
    }
    my %id;
    my @nodes = sort keys %node;
    @id{@nodes} = 0 .. $#nodes;
    my $total = $data->{total} || 1;
    # --event: a box's share and colour are of that event's total
    my $e = $data->{event};
    my $e_total = $e ? ($data->{event_total} // do { my $n = 0; $n += $_->{$e} for values %$ctx; $n }) || 1 : 0;
    my @out = ('digraph kgrind {', '  node [shape=box, style=filled, fontname="Helvetica"];',
               '  edge [fontname="Helvetica", fontsize=10];',
               '  label=' . dq("k-contexts (k=$data->{k}) of " . join(', ', @{$data->{files}})
                   . ": one box per context, arrows from caller to callee with calls and inclusive Ir") . ';');
    for my $k (@nodes) {
        my $c = $ctx->{$k};
        my $share = $c->{Ir} / $total;
        my $label = display_name($o, $c->{name}) . "\nIr " . commify($c->{Ir}) . sprintf(' (%.1f%%)', 100 * $share)
                  . "\nincl " . commify($c->{inclusive}) . sprintf(' (%.1f%%)', 100 * $c->{inclusive} / $total)
                  . "\ncalls " . commify($c->{calls});
        if ($e) {
            $share = $c->{$e} / $e_total;
            $label .= "\n$e " . commify($c->{$e}) . sprintf(' (%.1f%%)', 100 * $share);
        }
        push @out, sprintf('  n%d [label=%s, tooltip=%s, fillcolor="%s"];', $id{$k}, dq($label),
                           dq($c->{tooltip}), fill_colour($share));
    }
    for my $ek (sort keys %edge) {
        my ($f, $t) = split /\0\0/, $ek;
        next unless $node{$f} && $node{$t};
        my $e = $edge{$ek};
        push @out, sprintf('  n%d -> n%d [label=%s];', $id{$f}, $id{$t},
                           dq(commify($e->{calls}) . "x\n" . commify($e->{inclusive})
                              . ($e->{lines} && %{$e->{lines}} ? "\nline " . join('|', sort { $a <=> $b } keys %{$e->{lines}}) : '')));
    }
    print $fh join("\n", @out, '}'), "\n";
}

1;
