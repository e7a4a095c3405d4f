package KGrind::Export::Text;
# --format=text: the header (profiles, command, k, mode, threads, total
# Ir), per thread the table of its hottest k-contexts, and what --ksf,
# --kccf (the trees, thesis style), --show-blocks (KGrind::Export::Blocks)
# and --auto or source files (KGrind::Export::Source) ask for.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec on packed columns
use Exporter 'import';
use List::Util ();
use KGrind::Labels;
use KGrind::Forest qw(ccf_nodes ctx_count ctx_path);
use KGrind::Model;
use KGrind::Events qw(forest_event_names derived_names miss_rates is_incl_event);
use KGrind::TreeView;
use KGrind::Format qw(commify pct frame_name);
use KGrind::Output;
use KGrind::Names qw(display_name);
use KGrind::ContextFit qw(fit_contexts may_fold);
use KGrind::HotTree qw(hot_tree_lines tree_event);
use KGrind::Sites qw(site_index sited_names innermost_sites);

our @EXPORT_OK = qw(show forest_desc);

my $RULE = '-' x 80;
# the fewest columns a fitted context gets, however wide the numbers
my $MIN_ROOM = 40;

sub show {
    my ($o, $S) = @_;
    my @out = header($o, $S);
    my @hot;    # contexts shown, for source annotation
    my $want_src = $o->{auto} eq 'yes' || @{$o->{sources}};
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my $sorted = sorted_contexts($o, $C, $want_src ? 0 : $o->{top});
        push @hot, [$t, $sorted];
        push @out, context_table($o, $S, $t, $sorted);
        if ($o->{tree}) {
            push @out, '', $RULE, sprintf('Tree of the hot %s-contexts, thread %s (at least %s%% of its %s inclusive)',
                                          kstr($S->{kk}), forest_desc($t), $o->{'tree-min'}, tree_event($o)), $RULE,
                       hot_tree_lines($o, $S, $t);
        }
        if ($o->{ksf}) {
            my $T = ksf_tree($o, $t);
            push @out, '', $RULE, "DUMP of K-SF (k=" . kstr($S->{K}) . ", thread " . forest_desc($t) . ", $t->{F}{n} nodes"
                . left_out_note($S, $t->{tid})
                . ($T->{shown} ? ", $T->{n} shown: the paths of the contexts selected)" : ')'), $RULE;
            push @out, tree_note($o, $t);
            out_lines(\@out);
            print_tree($o, $S, $t, $T);
        }
        if ($o->{kccf}) {
            my $T = ccf_tree($o, $t);
            push @out, '', $RULE, "DUMP of K-CCF (k=" . kstr($S->{kk}) . ", thread " . forest_desc($t) . ", "
                . ($T->{shown} ? "$T->{n} nodes shown: the chains of the contexts selected)" : ccf_nodes($C) . ' nodes)'), $RULE;
            push @out, tree_note($o, $t);
            out_lines(\@out);
            print_tree($o, $S, $t, $T);
        }
    }
    if ($o->{'show-blocks'}) {
        require KGrind::Export::Blocks;
        KGrind::Export::Blocks::show_blocks($o, $S, \@out);
    }
    if ($want_src) {
        require KGrind::Export::Source;
        KGrind::Export::Source::annotate_sources($o, $S, \@hot, \@out);
    }
    out_lines(\@out);
}

# The header's lines: profiles, command, k, mode, threads, total Ir, and
# per thread its Ir and forests' sizes.
sub header {
    my ($o, $S) = @_;
    my @out;
    my @P = @{$S->{P}};
    my $P0 = $P[0];
    my $blocks = $S->{blockmode};
    push @out, $RULE;
    push @out, (@P > 1 ? 'Profile data files: ' : 'Profile data file: ') . join(', ', map { $_->{file} } @P)
        . ' (creator: ' . ($P0->{creator} // '?') . ')';
    push @out, $RULE;
    my %cmds = map { ($_->{cmd} // '?') => 1 } @P;
    push @out, sprintf('%-22s%s', 'Command:', join(' | ', sort keys %cmds));
    push @out, sprintf('%-22s%s', 'PID:', join(', ', map { $_->{pid} // '?' } @P));
    push @out, sprintf('%-22s%s', 'K value:', kstr($S->{kk}) . ($S->{kk} != $S->{K} ? ' (recorded k: ' . kstr($S->{K}) . ')' : ''));
    if ($blocks) {
        push @out, sprintf('%-22s%s', 'Mode:', $P0->{mode} . ($P0->{mode} eq 'intra'
            ? ' (basic blocks, one k-SF per thread and function)' : ' (basic blocks, one k-SF per thread)')
            . ($P0->{roll} eq 'yes' ? ', loops rolled' : ', loops not rolled'));
    } else {
        push @out, sprintf('%-22s%s', 'Mode:', $P0->{mode} . ($P0->{rolling} eq 'yes' ? ', simple recursion rolled' : ', simple recursion unrolled'));
        push @out, sprintf('%-22s%s', 'Inline frames:', $P0->{inline} eq 'yes'
            ? 'yes (inlined functions are context levels, marked [inlined])' : 'no (physical frames, as callgrind\'s)');
    }
    my $nthr = 0;
    if ($blocks) { my %t; $t{$_->{tid}} = 1 for map { @{$_->{threads}} } @P; $nthr = keys %t }
    else { $nthr += @{$_->{threads}} for @P }
    my $tool_joined = grep { $_->{joined} eq 'yes' } @P;
    my $thr_desc = $tool_joined ? 'joined when profiling (thread all)'
                 : $S->{joined} ? "$nthr, joined by kgrind_annotate (thread all)"
                 : "$nthr, " . ($blocks ? $S->{ntids} - ($S->{others} ? $S->{others}{n} : 0) : scalar(@{$S->{threads}})) . ' shown'
                   . ($S->{others} ? ' (those with the most Ir; --max-threads=all shows every thread, --join-threads joins them)' : '');
    push @out, sprintf('%-22s%s', 'Threads:', $thr_desc);
    my $events = @{$S->{threads}} ? forest_event_names($S->{threads}[0]{F}) : [];
    push @out, sprintf('%-22s%s', 'Events:', join(' ', 'Ir', @$events));
    push @out, sprintf('%-22s%s', 'Total Ir:', commify($S->{total}));
    push @out, derived_lines($S) if @$events;
    push @out, '', 'No basic block of a traced function ran: the block modes trace the functions of '
        . '--funcs (by default the main executable\'s); pass --funcs to trace library code.'
        if $blocks && !grep { $_->{F}{n} > ($P0->{mode} eq 'inter' ? 1 : 0) } @{$S->{threads}};
    for my $t (@{$S->{threads}}) {
        push @out, sprintf('%-22s%s', "Thread $t->{tid}" . (defined $t->{fname} ? ", $t->{fname}: " : ':'),
            'Ir ' . commify($t->{ir})
            . ", k-SF nodes $t->{F}{n}" . left_out_note($S, $t->{tid})
            . ', ' . kstr($S->{kk}) . '-CCF nodes ' . header_ccf_nodes($o, $t->{C}));
    }
    if (my $x = $S->{others}) {
        push @out, sprintf('%-22s%s', 'Other threads:', commify($x->{n}) . ' not shown, Ir ' . commify($x->{ir})
            . ' (' . pct($x->{ir}, $S->{total}) . ' of the total)');
    }
    return @out;
}

# The header's derived figures: the cycle estimate (KCachegrind's formula)
# and cachegrind's miss rates, of the selected threads' totals.
sub derived_lines {
    my ($S) = @_;
    my ($t, $have) = event_totals($S);
    my $derived = derived_names($S->{threads}[0]{F});
    my @out;
    push @out, sprintf('%-22s%s', 'Derived:', join(', ', map { "$_ " . commify($t->{$_}) } @$derived)) if @$derived;
    my $rates = miss_rates(sub { $t->{$_[0]} // 0 }, $have);
    push @out, sprintf('%-22s%s', 'Miss rates:', join(', ', map { "$_->[0] " . pct($_->[1], $_->[2]) } @$rates))
        if @$rates;
    return @out;
}

# The table of a thread's hottest contexts ($sorted: in the table's order).
sub context_table {
    my ($o, $S, $t, $sorted) = @_;
    my $C = $t->{C};
    my ($show, $sum) = shown_contexts($o, $C, $sorted);
    my @out = ('', $RULE);
    push @out, sprintf('Hottest %s-contexts, thread %s: %d of %d shown (sorted by %s; threshold %s%%%s)',
        kstr($S->{kk}) . ($S->{blockmode} ? ' block' : ''), forest_desc($t), scalar(@$show), ctx_count($C), $o->{sort},
        $o->{threshold}, $o->{top} ? ", top $o->{top}" : '');
    push @out, $RULE;
    my $pk = $o->{sort} eq 'calls' ? '%calls' : $o->{sort} eq 'inclusive' ? '%incl' : "%$o->{sort}";
    # an event's share: of its total over the contexts; an inclusive one's
    # of the thread's total, as inclusive Ir's
    my $den = is_incl_event($o->{sort}) ? thread_event_total($C, $o->{sort} =~ s/^incl://r)
            : $o->{sort} eq 'calls' || !is_ir_key($o->{sort}) ? $sum : $t->{ir};
    # the exclusive columns: --show's events (Ir by default)
    my @show = @{$o->{show} // ['Ir']};
    # the rows are the same for threads that share C's contexts and order
    # (KGrind::Model::thread_ccfs: their events too) and have the same Ir:
    # made once, as one string of lines
    my $rows = $C->{same} ? \$C->{same}{"rows\0$sorted\0$t->{ir}"} : \my $own;
    $$rows //= do {
        my $key = key_arrays($o->{sort}, $C, 1);
        my @head = (@show, $pk, 'incl Ir', 'calls');
        my @nums = map {
            my $cid = $_;
            [map({ commify(context_value($C, $_, $cid)) } @show),
             pct(ref $key ? $key->[$cid] : vec($key, $cid, 64), $den),
             commify(outer_incl($C, $cid)), commify(cval($C, 'xcalls', $cid))]
        } @$show;
        # --sites: each level with the line it called the next one from
        my $I = $o->{sites} ? ($S->{site_index} //= site_index($S)) : undef;
        my (@full, @paths);    # the contexts' paths, names as --names asks: for --sites and fitting
        my $paths = sub {
            return \@paths if @paths || !@$show;
            @full = map { ctx_path($C, $_) } @$show;
            @paths = map { [map { display_name($o, $_) } @$_] } @full;
            @paths = map { sited_names($I, $full[$_], $paths[$_]) } 0 .. $#paths if $I;
            return \@paths;
        };
        my @w = ((15) x @show, 8, 15, 12);
        my %pattern;    # by the widths
        my $fmt = sub { sprintf($pattern{"@w"} //= join(' ', map { "%${_}s" } @w) . '  ', @{$_[0]}) };
        my @lead = map { $fmt->($_) } @nums;
        # rows wider than --width: the numbers' columns as wide as they
        # need, the contexts fitted in the rest (KGrind::ContextFit); a
        # block mode's contexts, and k-contexts too short to fold, are
        # printed whole
        my ($ctx, $note) = ($I ? [map { join(' > ', @$_) } @{$paths->()}] : [map { ctx_str($o, $C, $_) } @$show], []);
        if ($o->{width} && !$S->{blockmode} && may_fold($S->{kk} == $INF ? undef : $S->{kk} + 1) && grep { length($lead[$_]) + length($ctx->[$_]) > $o->{width} } 0 .. $#nums) {
            my @was = @w;
            for my $i (0 .. $#w) { $w[$i] = List::Util::max(map { length $_->[$i] } \@head, @nums) }
            my $room = $o->{width} - length $fmt->(\@head);
            ($ctx, $note) = fit_contexts($paths->(), $room < $MIN_ROOM ? $MIN_ROOM : $room, $o->{width});
            if (@$note) { @lead = map { $fmt->($_) } @nums }
            else { @w = @was }    # rows as they are (too short to fold)
        }
        my $sites = sub { $I ? site_rows($o, $S, $I, $full[$_[0]], cval($C, 'xcalls', $show->[$_[0]]), $fmt, scalar @show) : () };
        join("\n", @$note, $fmt->(\@head) . 'context', map { ($lead[$_] . $ctx->[$_], $sites->($_)) } 0 .. $#nums);
    };
    return @out, $$rows;
}

# --sites: a context's rows under its own, one per line its innermost
# call came from (calls, inclusive Ir), when it came from several and the
# profile's body splits this context's calls (KGrind::Sites).
sub site_rows {
    my ($o, $S, $I, $path, $calls, $fmt, $nshow) = @_;
    return () unless $S->{joined} || $S->{ntids} == 1;
    my $sites = innermost_sites($I, $path, $calls) or return ();
    return () if @$sites < 2;
    return map {
        my $from = defined $_->{line} ? display_name($o, $_->{caller}) . ($_->{line} ? ":$_->{line}" : ' (no line)')
                                      : '(no line in the profile)';
        $fmt->([('') x $nshow, '', defined $_->{incl} ? commify($_->{incl}) : '', commify($_->{calls})]) . "  from $from"
    } @$sites;
}

# What a tree's header says of its events (KGrind::TreeView::tree_columns), if anything.
sub tree_note {
    my ($o, $t) = @_;
    my (undef, $note) = tree_columns($o, $t->{F});
    return $o->{costs} eq 'yes' && $note ? ("note: $note") : ();
}

# A tree, thesis style: "| name,calls  [Ir excl, incl incl]", two spaces
# of indent a level; with --show, its events: "[Ir 5, D1mr 2, incl 9,
# incl:D1mr 3]".
sub print_tree {
    my ($o, $S, $t, $T) = @_;
    my $view = tree_view($o, $T);
    my $costs = $o->{costs} eq 'yes' && $view->{costs};
    my ($cols) = tree_columns($o, $t->{F});
    my $counts = $view->{reader}->([map { $_->[1] } @$cols]);
    my @stack = map { [$_, 0] } reverse @{$view->{roots}};
    while (@stack) {
        my ($v, $d) = @{pop @stack};
        my ($fn, $cal, $exc, $inc) = $view->{node}->($v);
        my $l = ('  ' x $d) . '| ' . frame_name($LNAME[$fn], $S->{blockmode}) . ",$cal";
        if ($costs) { my @n = $counts->($v); $l .= '  [' . join(', ', map { "$cols->[$_][0] $n[$_]" } 0 .. $#n) . ']' }
        out("$l\n");
        my $kids = $view->{kids}->($v);
        push @stack, map { [$_, $d + 1] } reverse @$kids if $kids;
    }
}

# The text header's inf-CCF node count, which the default report does not
# otherwise need: counting a CCT's inf-CCF costs about as much again as
# reading the profile (cc1plus k=inf: 2.9 M k-SF nodes, 20 s more, 0.4 GB),
# so above $COUNT_LIMIT k-SF nodes it is made only when the automaton is
# built anyway (a whole inf-CCF printed) or exported (JSON's kccf_nodes).
my $COUNT_LIMIT = 1_000_000;
sub header_ccf_nodes {
    my ($o, $C) = @_;
    return ccf_nodes($C) if !$C->{cct} || defined $C->{n} || $C->{nctx} <= $COUNT_LIMIT || $C->{keep_automaton};
    return 'not counted (over ' . commify($COUNT_LIMIT) . ' k-SF nodes; --format=json or a whole --kccf counts them)';
}

# " (N counting nothing left out by kgrind)" after a thread's k-SF node
# count, or "" when its records hold every node.
sub left_out_note {
    my ($S, $tid) = @_;
    my $n = left_out_nodes($S, $tid);
    return $n ? ' (' . commify($n) . ' counting nothing left out by kgrind)' : '';
}

# "1" or, for an intra forest, "1, function foo".
sub forest_desc { my $t = shift; $t->{tid} . (defined $t->{fname} ? ", function $t->{fname}" : '') }

1;
