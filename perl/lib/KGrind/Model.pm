package KGrind::Model;
# The model every output reads: the profiles given, read and joined
# (KGrind::Profile), each selected thread's forest F and its k-CCF C
# (KGrind::Forest's inv_k), the block table, the body's source lines, and
# the views of a thread's k-contexts that the outputs share: counters,
# sorting and selection by --sort, --top and --threshold, paths, and the
# contexts as the exporters take them (contexts_model, model_head).
use strict;
use warnings;
no warnings 'recursion';
no warnings 'portable';    # 64-bit vec on packed columns
use Exporter 'import';
use List::Util ();
use KGrind::Error;
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Profile;
use KGrind::Forest;
use KGrind::Inclusive;
use KGrind::Events;
use KGrind::Names qw(display_name);
use KGrind::Format qw(utf8_clean);
use KGrind::Sites qw(site_index sited_names);

our @EXPORT = qw(build_model cval outer_incl key_arrays each_key sorted_contexts shown_contexts select_contexts
                 ctx_fn ctx_str left_out_nodes model_sources export_name export_names contexts_model model_head
                 is_ir_key context_value event_totals thread_event_total truncation_marker is_truncated finite_k_note);

# What the exporters write as the program that wrote their file.
our $EXPORTER = 'kgrind_annotate';

# The model of the profiles $o->{profiles} as the options $o ask: {P (the
# profiles), K (recorded k), kk (the k shown), threads ([{tid, F, C, ir,
# fname}], sorted by thread), total, joined, ntids (every thread's), others
# (the threads the text report leaves out: hottest_threads), blockmode, and blocks
# (block modes), src and fnline (source annotation)}.  Everything is
# built before anything is printed.
sub build_model {
    my ($o) = @_;
    # pprof and speedscope name each function's file and first line: the body has them
    # and the call graph (dot): its calls= lines
    my $want_src = $o->{sites} ? 'sites'
                 : $o->{auto} eq 'yes' || @{$o->{sources}} || $o->{format} =~ /^(?:pprof|speedscope|dot)$/;
    my @P;
    refuse_repeated_files($o->{profiles});
    for my $f (@{$o->{profiles}}) { push @P, read_profile($f, $want_src, $P[0]) }
    my $P0 = $P[0];
    check_merge($P0, $_) for @P[1 .. $#P];
    refuse_other_programs('joined', @P) unless $o->{force};
    my $K = $P0->{k};
    my $kk = shown_k($o, $P0);
    # threads: merge same tids across files; join all when asked or when any file was joined
    my $join = $o->{'join-threads'} || grep { $_->{joined} eq 'yes' } @P;
    my ($forests, $tids) = thread_forests($o, \@P, $join);
    my ($shown, $others) = hottest_threads($o, $forests, $tids, $join);
    my $total = 0;
    $total += $_->{total} for @P;
    my %S = (P => \@P, K => $K, kk => $kk, threads => thread_ccfs($o, $P0, $shown, $kk), total => $total,
             joined => $join, ntids => scalar(@$tids), others => $others,
             blockmode => $P0->{mode} ne 'func');
    fail("--show-blocks/--blocks-disasm: $P0->{file} is a function-mode profile (no basic blocks; "
         . "profile with --mode=intra or --mode=inter)") if $o->{'show-blocks'} && $P0->{mode} eq 'func';
    $S{blocks} = block_table(\@P) if $S{blockmode};
    fail("--sites: $P0->{file} is a block-mode profile; call sites are function mode's (calls= lines between contexts)")
        if $o->{sites} && $S{blockmode};
    my @evF = map { $_->{F} } @{$S{threads}};
    check_event_names('--show', $o->{show} // ['Ir'], @evF);
    check_event_names('--event', [$o->{event}], @evF) if defined $o->{event};
    check_event_names('--sort', [$o->{sort}], @evF) unless $o->{sort} =~ /^(?:calls|inclusive)$/;
    push @KEEP, \%S;    # lives until the process exits: never freed piece by piece
    @S{qw(src fnline)} = source_lines(\@P, $join, [map { $_->{key} } @$forests]) if $want_src;
    return \%S;
}

# The k shown: --k, at most the recorded k.
sub shown_k {
    my ($o, $P0) = @_;
    my $K = $P0->{k};
    return $K unless defined $o->{k};
    my $kk = $o->{k} eq 'inf' ? $INF : $o->{k} + 0;
    if ($K != $INF && ($kk == $INF || $kk > $K)) {
        fail("--k=$o->{k} is above the recorded k=$K of $P0->{file}: "
             . "a k-SF only holds contexts of length up to k+1 (profile again with a larger --k)");
    }
    return $kk;
}

# The forests to show: [{key, tid, forests (one per profile), fname}] in
# the order of the threads (then of the files), and every thread id.
# Intra mode: one forest per (thread, function); the key is "tid\0function".
sub thread_forests {
    my ($o, $P, $join) = @_;
    my (%by, @order, %fname);
    for my $P (@$P) {
        for my $T (@{$P->{threads}}) {
            my $tid = $join ? 'all' : $T->{tid};
            my $key = defined $T->{fname} ? "$tid\0$T->{fname}" : $tid;
            $fname{$key} = $T->{fname};
            push @order, $key unless $by{$key};
            push @{$by{$key}}, $T;
        }
    }
    my $tid_of = sub { (split /\0/, $_[0])[0] };
    my @tids = do { my %s; grep { !$s{$_}++ } map { $tid_of->($_) } @order };
    if ($o->{thread} ne 'all') {
        if (!grep { $_ eq $o->{thread} } @tids) {
            fail("thread $o->{thread}: " . ($join ? "threads are joined in this profile (only thread 'all')"
                : "no such thread in " . join(', ', map { $_->{file} } @$P)
                  . " (threads: " . join(', ', @tids) . ")"));
        }
        @order = grep { $tid_of->($_) eq $o->{thread} } @order;
    }
    # by thread number, then in the order read
    my @tnum = map { my $t = $tid_of->($_); $t eq 'all' ? 0 : $t } @order;
    my @forests = map { { key => $order[$_], tid => $tid_of->($order[$_]), forests => $by{$order[$_]},
                          fname => $fname{$order[$_]} } }
                  sort { $tnum[$a] <=> $tnum[$b] || $a <=> $b } 0 .. $#order;
    return (\@forests, \@tids);
}

# The forests of the threads the text report shows (--max-threads): the
# N threads with the most Ir, in thread order; and what the others hold
# ({n, ir, F: their forests, for the header's event totals}), or undef
# when every thread is shown. Machine formats and --diff take every thread.
sub hottest_threads {
    my ($o, $forests, $tids, $join) = @_;
    my $max = $o->{'max-threads'} // 'all';
    return ($forests, undef)
        if $max eq 'all' || $join || $o->{thread} ne 'all' || $o->{format} ne 'text' || $o->{diff} || @$tids <= $max;
    my %ir;
    for my $f (@$forests) { $ir{$f->{tid}} += $_->{ir} for @{$f->{forests}} }
    my @hot = (sort { $ir{$b} <=> $ir{$a} || $a <=> $b } keys %ir)[0 .. $max - 1];
    my %show = map { $_ => 1 } @hot;
    my @shown = grep { $show{$_->{tid}} } @$forests;
    my %others = (n => scalar(@$tids) - $max, ir => 0, F => []);
    for my $f (grep { !$show{$_->{tid}} } @$forests) {
        $others{ir} += $_->{ir} for @{$f->{forests}};
        push @{$others{F}}, @{$f->{forests}};
    }
    return (\@shown, \%others);
}

# Each thread's forests joined, and its k-CCF: the trees only for the
# outputs that show them (a CCT's inf-CCF pruned to the contexts selected
# is built when printed: pruned_ccf).
sub thread_ccfs {
    my ($o, $P0, $forests, $kk) = @_;
    my $K = $P0->{k};
    my $tree = $o->{kccf} || $o->{format} eq 'json' || ($o->{format} eq 'dot' && $P0->{mode} ne 'func');
    my @threads;
    # threads whose forests are the same, column for column (a program's
    # many threads doing the same work), share one k-CCF's contexts: each
    # gets a copy of the first one's (its arrays shared, read only), with
    # its own Ir; and their sorted contexts (sorted_contexts: {same}). Not a
    # CCT's (its automaton is the thread's, dropped once walked).
    my %same;
    for my $f (@$forests) {
        my $F = join_forests($f->{tid}, @{$f->{forests}});
        # a CCT's inf-CCF is walked where printed (ccf_tree), but for the block modes' graph
        my $lazy = $kk == $INF && KGrind::Forest::single_tree($F) && !($o->{format} eq 'dot' && $P0->{mode} ne 'func');
        my $key = same_forest_key($F);
        my $C;
        if (defined $key && $same{$key}) { $C = { %{$same{$key}} } }
        else {
            $C = inv_k($F, $kk, $K, !$lazy && $o->{'tree-order'} eq 'natural', !$lazy && $tree);
            $C->{outer} = KGrind::Inclusive::outermost($F, $kk, $K);
            if (defined $key && !$C->{cct}) {
                $C->{same} = {};
                $same{$key} = $C;
            }
        }
        $C->{keep_automaton} = $lazy && $tree && !$o->{limited};    # the whole inf-CCF is printed
        $C->{ir} = $F->{ir};
        @$C{qw(F_of kk K)} = ($F, $kk, $K);    # events beyond Ir (KGrind::Events)
        push @threads, { tid => $f->{tid}, F => $F, C => $C, ir => $F->{ir},
                         (defined $f->{fname} ? (fname => $f->{fname}) : ()) };
    }
    return \@threads;
}

# A digest of a forest's columns as read (packed), its events' included, for thread_ccfs: undef
# for a forest joined from several (unpacked columns, first roots).  The
# reader's digest of the node columns (KGrind::Read::Records::thread_end)
# is taken: one a forest read, not one a thread.
sub same_forest_key {
    my ($F) = @_;
    my @ev = (@{$F->{ev} // []}, @{$F->{evi} // []});    # events too (KGrind::Events)
    my @cols = (@$F{qw(par fn depth calls excl incl)}, @ev);
    return undef if $F->{firstroots} || grep { !defined || ref } @cols;
    return columns_digest($F->{n}, @cols) unless defined $F->{digest};
    return @ev ? $F->{digest} . columns_digest(scalar(@ev), @ev) : $F->{digest};
}

# The block table, merged by name over the profiles (counts summed).
sub block_table {
    my ($P) = @_;
    my %b;
    for my $P (@$P) {
        for my $B (@{$P->{blocks}}) {
            if (my $x = $b{$B->{id}}) { $x->{count} += $B->{count} }
            else { $b{$B->{id}} = { %$B, name => $LNAME[$B->{id}], obj => $P } }
        }
    }
    return [sort { $b->{count} <=> $a->{count} || $a->{addr} <=> $b->{addr} || $a->{name} cmp $b->{name} }
            values %b];
}

# The body's Ir per source file and line, and each function's first
# costly line per file, of the threads selected ($keys): summed over the
# profiles.
sub source_lines {
    my ($P, $join, $keys) = @_;
    my %tsel = map { $_ => 1 } @$keys;
    my (%src, %fnl);
    for my $P (@$P) {
        for my $t (keys %{$P->{src}}) {
            next unless $t eq '' || $join || $tsel{$t};
            for my $f (keys %{$P->{src}{$t}}) {
                my $h = $P->{src}{$t}{$f};
                $src{$f}{$_} += $h->{$_} for keys %$h;
                my $g = $P->{fnline}{$t}{$f};
                for my $fn (keys %$g) {
                    $fnl{$f}{$fn} = $g->{$fn} if !defined $fnl{$f}{$fn} || $g->{$fn} < $fnl{$f}{$fn};
                }
            }
        }
    }
    return (\%src, \%fnl);
}

# The views of a thread's contexts.
# A context's counter (xcalls, xexcl, xincl): an array, or a CCT's packed
# column (KGrind::Forest::cct_contexts).
# What k-contexts' label chains (KGrind::Forest::inv_k_contexts) give, made
# once for all threads that have the context: "s<names>\0chain" its string
# (ctx_str), "o" its KGrind::Inclusive key, "n" its names' sort key.
my %CHAIN;

sub cval { my ($C, $name, $cid) = @_; my $c = $C->{$name}; ref $c ? $c->[$cid] : vec($c, $cid, 64) }

# Context cid's inclusive Ir of its outermost activations, at most the
# thread's Ir (KGrind::Inclusive); the plain inclusive Ir at k = inf.
# Looked up per context: the text table needs only the contexts it shows.
sub outer_incl {
    my ($C, $cid) = @_;
    my $outer = $C->{outer} or return cval($C, 'xincl', $cid);
    my $ckey = $C->{chain} ? $CHAIN{'o' . substr($C->{chain}[$cid], 0, -8)} //= KGrind::Inclusive::key_of(ctx_labels($C, $cid))
                           : KGrind::Inclusive::key_of(ctx_labels($C, $cid));
    my $v = $outer->{$ckey} // cval($C, 'xincl', $cid);
    return $v < $C->{ir} ? $v : $C->{ir};
}

# All contexts' outer_incl, computed once (the plain column without outermost values).
sub xouter {
    my ($C) = @_;
    return $C->{xincl} unless $C->{outer};
    return $C->{xouter} //= do { my @x; $x[$_] = outer_incl($C, $_) for @{$C->{ctx}}; \@x };
}

# Whether a sort key is Ir's (Ir, calls, inclusive), not an event's.
sub is_ir_key { $_[0] =~ /^(?:Ir|calls|inclusive)$/ }

# Context cid's exclusive count of $e: Ir, an event of the records or a
# derived event (KGrind::Events); "incl:<e>" its inclusive count, of its
# outermost activations as outer_incl's.
sub context_value {
    my ($C, $e, $cid) = @_;
    return cval($C, 'xexcl', $cid) if $e eq 'Ir';    # the table's column
    my $incl = $e =~ s/^incl://;
    return $incl ? outer_incl($C, $cid) : cval($C, 'xexcl', $cid) if $e eq 'Ir';
    unless (is_derived($e)) { return $incl ? context_event_incl($C, $e, $cid) : context_event($C, $e, $cid) }
    my $have = $C->{have_events} //= { map { $_ => 1 } @{forest_event_names($C->{F_of})} };
    return derived_value($e, sub { context_value($C, ($incl ? 'incl:' : '') . $_[0], $cid) }, $have);
}

# Thread C's total count of $e (Ir, an event of its records or a derived
# one): what an inclusive count's share is of.
sub thread_event_total {
    my ($C, $e) = @_;
    my $F = $C->{F_of};
    my $names = forest_event_names($F);
    my %t = (Ir => $C->{ir});
    $t{$names->[$_]} = List::Util::sum0(unpack('Q>*', $F->{ev}[$_])) for 0 .. $#$names;
    return $t{$e} // derived_value($e, sub { $t{$_[0]} // 0 }, { map { $_ => 1 } @$names });
}

# Ir and each event's total over the selected threads' nodes, the derived
# events' from them: a hash by name, and the hash of the events there are.
sub event_totals {
    my ($S) = @_;
    my %t = (Ir => $S->{total});
    my $names = @{$S->{threads}} ? forest_event_names($S->{threads}[0]{F}) : [];
    # the threads left out of the text report too (hottest_threads)
    for my $F ((map { $_->{F} } @{$S->{threads}}), @{$S->{others} ? $S->{others}{F} : []}) {
        my %at = map { ($F->{ev_names}[$_] => $_) } 0 .. $#{$F->{ev_names} // []};
        for my $e (grep { defined $at{$_} } @$names) { $t{$e} += List::Util::sum0(unpack('Q>*', $F->{ev}[$at{$e}])) }
    }
    my %have = map { $_ => 1 } @$names;
    if (@{$S->{threads}}) {
        $t{$_} = derived_value($_, sub { $t{$_[0]} // 0 }, \%have) for @{derived_names($S->{threads}[0]{F})};
    }
    return (\%t, \%have);
}

# The sort keys: an event's is its column (KGrind::Events); inclusive is the contexts' outermost inclusive Ir, the
# trees' plain inclusive counters.  An array, or for a CCT's contexts a
# packed column (read with each_key).
sub key_arrays {
    my ($sort, $C, $ctx) = @_;
    return $C->{"derived $sort"} //= do {
        my @x;
        $x[$_] = context_value($C, $sort, $_) for @{KGrind::Forest::ctx_ids($C)};
        \@x;
    } if is_derived($sort) || is_incl_event($sort);
    return event_column($C, $sort) unless is_ir_key($sort);
    return $ctx ? ($sort eq 'calls' ? $C->{xcalls} : $sort eq 'inclusive' ? xouter($C) : $C->{xexcl})
                : col($C, $sort eq 'calls' ? 'calls' : $sort eq 'inclusive' ? 'incl' : 'excl');
}

# Calls $each->([keys], ids) over all contexts, in chunks (a CCT's packed
# column is never unpacked whole); ids are the keys' context ids, or for a
# packed column the first key's (the others follow).
sub each_key {
    my ($C, $key, $each) = @_;
    # an array over a CCT's contexts too (an event's derived or inclusive counts)
    if (ref $key) { my $ids = KGrind::Forest::ctx_ids($C); return $each->([@$key[@$ids]], $ids) }
    my $n = $C->{nctx};
    for (my $s = 0; $s < $n; $s += 65536) {
        my $len = $n - $s < 65536 ? $n - $s : 65536;
        $each->([unpack('Q>*', substr($key, 8 * $s, 8 * $len))], $s);
    }
}

sub key_sum { my ($C, $key) = @_; my $sum = 0; each_key($C, $key, sub { $sum += List::Util::sum0(@{$_[0]}) }); $sum }

# The contexts that can be among the first `limit` by key: those whose key
# is at least the limit-th largest, found in one pass with a buffer of the
# largest keys seen, cut back to `limit` whenever it holds 4 * limit.
sub top_candidates {
    my ($C, $key, $limit) = @_;
    my ($min, @buf) = (-1);
    each_key($C, $key, sub {
        push @buf, grep { $_ > $min } @{$_[0]};
        return if @buf < 4 * $limit;
        @buf = (sort { $b <=> $a } @buf)[0 .. $limit - 1];
        $min = $buf[-1];
    });
    my $cut = @buf >= $limit ? (sort { $b <=> $a } @buf)[$limit - 1] : -1;
    my @ids;
    each_key($C, $key, sub {
        my ($keys, $ids) = @_;
        push @ids, map { ref $ids ? $ids->[$_] : $ids + $_ } grep { $keys->[$_] >= $cut } 0 .. $#$keys;
    });
    return \@ids;
}

# Contexts sorted by the key (descending), then by path.  With a limit,
# only the contexts that can be among the first `limit` are fully sorted.
# Guttman-Rosler transform: one plain (C) string sort.
sub sorted_contexts {
    my ($o, $C, $limit) = @_;
    # the same for the threads that share C's contexts (thread_ccfs), but by
    # inclusive Ir (each capped at its thread's Ir)
    return $C->{same}{"$o->{sort}\0" . ($limit // 0)} //= sort_contexts($o, $C, $limit)
        if $C->{same} && $o->{sort} ne 'inclusive';
    return sort_contexts($o, $C, $limit);
}

sub sort_contexts {
    my ($o, $C, $limit) = @_;
    my $key = key_arrays($o->{sort}, $C, 1);
    my $ids = $limit && ctx_count($C) > $limit ? top_candidates($C, $key, $limit) : ctx_ids($C);
    my $kv = ref $key ? sub { $key->[$_[0]] } : sub { vec($key, $_[0], 64) };
    my $max = 0;
    for (@$ids) { my $x = $kv->($_); $max = $x if $x > $max }
    my $w = length $max;
    my ($cpar, $cfn, $cch, $corder) = @$C{qw(par fn chain order)};
    # a CCT's few contexts are ordered by their paths' names, many or deep
    # ones by the order of all paths (one sort of the tree's nodes)
    if ($C->{cct}) {
        my $labels = 0;
        $labels += vec($C->{F}{depth}, $_, 32) + 1 for @$ids;
        $corder = path_order($C) if $labels > 1_000_000;
    }
    my @s;
    for my $cid (@$ids) {
        my $s = sprintf('%0*d', $w, $max - $kv->($cid));
        if ($corder) { $s .= pack('N', $corder->[$cid]) }    # the paths' order, without the paths
        elsif ($C->{cct}) { $s .= "\0" . $LNAME[$_] for @{ctx_labels($C, $cid)} }
        elsif ($cch) {
            my $part = substr($cch->[$cid], 0, -8);
            $s .= $CHAIN{"n$part"} //= join('', map { "\0" . $LNAME[$_ - 1] } reverse unpack('N*', $part));
        }
        else {
            my $u = $cid;
            while ($u >= 0) { $s .= "\0" . $LNAME[$cfn->[$u]]; $u = $cpar->[$u] }
        }
        push @s, "$s\0\0\0$cid";
    }
    @s = sort @s;
    return [map { substr($_, rindex($_, "\0") + 1) } @s];
}

# Contexts to show in the table: --threshold (cumulative share of the sort
# key over all contexts) and --top.  The same for the threads that share
# C's contexts, order and Ir (thread_ccfs, sorted_contexts).
sub shown_contexts {
    my ($o, $C, $sorted) = @_;
    return @{$C->{same}{"shown\0$sorted\0$C->{ir}"} //= [threshold_contexts($o, $C, $sorted)]}
        if $C->{same} && $o->{sort} ne 'inclusive';
    return threshold_contexts($o, $C, $sorted);
}

sub threshold_contexts {
    my ($o, $C, $sorted) = @_;
    my $key = key_arrays($o->{sort}, $C, 1);
    my $sum = key_sum($C, $key);
    my @show;
    my $cum = 0;
    for my $cid (@$sorted) {
        last if $o->{top} && @show >= $o->{top};
        last if $sum && $o->{threshold} < 100 && 100 * $cum / $sum >= $o->{threshold};
        push @show, $cid;
        $cum += ref $key ? $key->[$cid] : vec($key, $cid, 64);
    }
    return (\@show, $sum);
}

# The contexts that the trees and the machine formats show: all of them in
# the table's order, or with --top or --threshold given, the table's.
sub select_contexts {
    my ($o, $C) = @_;
    return sorted_contexts($o, $C) unless $o->{limited};
    my ($show) = shown_contexts($o, $C, sorted_contexts($o, $C, $o->{top}));
    return $show;
}

# Root (activated function) of context cid in the CCF.
sub base_root { my ($C, $cid) = @_; $cid = $C->{par}[$cid] while $C->{par}[$cid] >= 0; $cid }

# Activated function (label id) of context cid.
sub ctx_fn {
    my ($C, $cid) = @_;
    return unpack('N', $C->{chain}[$cid]) - 1 if $C->{chain};
    return vec($C->{fn}, $cid, 32) if $C->{cct};    # a packed column
    return $C->{fn}[base_root($C, $cid)];
}

# A context as the text shows it: its path, outermost first, names as --names asks.
sub ctx_str {
    my ($o, $C, $cid) = @_;
    return join(' > ', map { display_name($o, $_) } @{ctx_path($C, $cid)}) unless $C->{chain};
    # a k-context's string made once for all threads (by its labels)
    return $CHAIN{"s$o->{names}\0" . substr($C->{chain}[$cid], 0, -8)}
        //= join(' > ', map { display_name($o, $_) } @{ctx_path($C, $cid)});
}

# The k-SF nodes kgrind left out of thread $tid's records (subtrees that
# count nothing: a fork child's copy of its parent's forest, paused or
# zeroed counting), summed over the profiles read; "all": every thread's.
sub left_out_nodes {
    my ($S, $tid) = @_;
    # the desc: lines read once (one a thread: a lookup each, not a pass)
    my $left = $S->{left_out} //= do {
        my %n;
        for my $P (@{$S->{P}}) {
            while (my ($key, $val) = each %{$P->{desc} // {}}) {
                next unless $key =~ /^thread (\S+) left out$/;
                my $t = $1;
                next unless $val =~ /^(\d+)/;
                $n{$t} += $1;
                $n{all} += $1 unless $t eq 'all';
            }
        }
        \%n;
    };
    return $left->{$tid} // 0;
}

# Each function's source file and first costly line, from the callgrind body.
sub function_sources {
    my ($S) = @_;
    my %src;
    for my $P (@{$S->{P}}) {
        for my $fn (keys %{$P->{fnfile} // {}}) {
            my $file = $P->{fnfile}{$fn};
            next if $src{$fn} || $file eq '???';
            $src{$fn} = { file => $file, line => ($S->{fnline}{$file}{$fn} // 0) + 0 };
        }
    }
    return \%src;
}

# Each function's source file and first line, keyed by its name in the
# model ($name: the name as the exporters write it).
sub model_sources {
    my ($S, $name) = @_;
    my $src = function_sources($S);
    return { map { ($name->($_) => { %{$src->{$_}}, file => utf8_clean($src->{$_}{file}) }) } keys %$src };
}

# A name as the exporters write it: as --names asks, in UTF-8 (pprof's
# strings must be; the JSON formats too); every label's.
sub export_name { my ($o, $n) = @_; utf8_clean(display_name($o, $n)) }
sub export_names { my ($o) = @_; [map { export_name($o, $_) } @LNAME] }

# The model that the exporters' write(\%model, $out_fh, \%options) reads:
# model_head and the selected threads' k-contexts, each with its path
# (names as export_name gives them) and counters.
# With --event (an event beyond Ir), each context has that event's count
# too, under its name, and its inclusive count under incl:<name> where the
# records have one; the model says which (event: --event, incl: kept).
sub contexts_model {
    my ($o, $S) = @_;
    my $name = sub { export_name($o, $_[0]) };
    my $event = defined $o->{event} && $o->{event} ne 'Ir' ? $o->{event} : undef;
    # the event's exclusive name (--event=incl:E: E's counts, both)
    my $e = defined $event && $event ne 'incl:Ir' ? $event =~ s/^incl://r : undef;
    my @threads;
    # --sites: each name but the last with the line it called the next one from
    my $I = $o->{sites} ? ($S->{site_index} //= site_index($S)) : undef;
    my $path = sub { my $p = $_[0]; my $n = [map { $name->($_) } @$p]; $I ? sited_names($I, $p, $n) : $n };
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        push @threads, { tid => $t->{tid}, Ir => $t->{ir} + 0, contexts => [map {
            { path => $path->(ctx_path($C, $_)), calls => cval($C, 'xcalls', $_) + 0,
              Ir => cval($C, 'xexcl', $_) + 0, inclusive => cval($C, 'xincl', $_) + 0,
              inclusive_outermost => outer_incl($C, $_) + 0, ($e ? ($e => context_value($C, $e, $_) + 0) : ()),
              ($e && $C->{F_of}{evi} ? ("incl:$e" => context_value($C, "incl:$e", $_) + 0) : ()) }
        } @{select_contexts($o, $C)}] };
    }
    my $head = model_head($S, $name);
    if ($I) {    # a name with its line: its function's file, at that line
        my $src = $head->{sources};
        for my $n (map { @{$_->{path}} } map { @{$_->{contexts}} } @threads) {
            next if $src->{$n} || $n !~ /\A(.*):(\d+)(?:\|\d+)*\z/s || !$src->{$1};
            $src->{$n} = { %{$src->{$1}}, line => $2 + 0 };
        }
    }
    return { %$head, threads => \@threads, ($event ? (event => $event) : ()) };
}

# The model but its threads and edges: the profiles, k and the comments
# (names as $name gives them).
sub model_head {
    my ($S, $name) = @_;
    my $P0 = $S->{P}[0];
    my ($program) = split ' ', $P0->{cmd} // '';
    my $k = kstr($S->{kk});
    return { k => $k, recorded_k => kstr($S->{K}), root => $ROOT_NAME, total => $S->{total},
             files => [map { $_->{file} } @{$S->{P}}], cmd => $P0->{cmd} // '', program => $program,
             creator => $P0->{creator} // '', exporter => $EXPORTER,
             sources => model_sources($S, $name),
             comments => ["kgrind k-contexts (k=$k) of " . join(', ', map { $_->{file} } @{$S->{P}})
                          . ': one sample per thread and context',
                          'threads: ' . join(', ', map { $_->{tid} } @{$S->{threads}}),
                          $k eq 'inf' ? 'stacks are full calling contexts'
                          : 'a stack whose outermost frame is ' . truncation_marker($k) . ' lacks its outer callers'] };
}

# The frame every format puts before (outside) a context that does not
# reach __root__ at finite k: its stack lacks its outer callers.
sub truncation_marker { "[truncated k=$_[0]]" }

# Whether context path $path (names or labels, outermost first) is cut at
# k $k (a number, or inf: never): it does not start at __root__.
sub is_truncated { my ($k, $first) = @_; $k ne 'inf' && $k != $INF && $first ne $ROOT_NAME }

# The note the stack formats (folded, pprof, speedscope) print on standard
# error at finite k: what their stacks are, and what their totals per
# outer function are not.
sub finite_k_note {
    my ($k) = @_;
    my $m = truncation_marker($k);
    return "note: k=$k: each stack is a k-context (at most " . ($k + 1) . " functions); one that does not "
         . "reach __root__ starts with $m, so a function's total over the stacks (pprof's cum, a flame "
         . "graph's width) counts only the contexts in which it is at most $k calls above the "
         . "instructions; profile with --k=inf for whole stacks";
}

1;
