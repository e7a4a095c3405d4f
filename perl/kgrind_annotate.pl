#!/usr/bin/perl
# kgrind_annotate: reads kgrind profiles (callgrind format with k-SF records,
# see docs/output-format.md), rebuilds each thread's k-Slab Forest, computes
# the k-Calling Context Forest with inv_k (IHPP thesis 3.3.3, 5.3.3) and shows
# the hottest k-contexts, the forests, annotated sources, or JSON / Graphviz /
# folded stacks.  Core Perl modules only.  See docs/annotate.md.
# perl/lib/KGrind/Profile.pm reads and checks profiles, KGrind/Forest.pm
# joins forests and computes inv_k; this file has the options and outputs.
use strict;
use warnings;
no warnings 'recursion';
no warnings 'portable';    # 64-bit vec on packed columns
use Getopt::Long qw(GetOptionsFromArray :config no_ignore_case bundling no_auto_abbrev);
use File::Spec;
use List::Util ();
# The modules: next to the script (perl/lib in the source tree, a link to it
# in the build tree), else where `make install` put them.
use FindBin ();
use lib "$FindBin::RealBin/lib", '@KG_PERL5LIB@';
use KGrind::Profile;
use KGrind::Forest;

my $VERSION = '@KG_VERSION@';
my $BLOCKMODE;   # the profiles are block k-SFs (mode intra or inter)

# ---------------------------------------------------------------------------
# Options.
# ---------------------------------------------------------------------------
my $USAGE = <<"EOT";
usage: kgrind_annotate [options] kgrind.out.<pid> [more profiles...] [source files...]

By default it prints a header (profiles, command, k, mode, threads, total
Ir) and, per thread, a table of its hottest k-contexts: exclusive Ir, its
share, inclusive Ir (recursion counted once), calls, the context (outermost
caller first, short names); at most --top rows, until they hold
--threshold % of the sort key.  Trees (--kccf, --ksf) and annotated
sources (--auto=yes, or source files given) only when asked.  --diff
prints the totals and the changed contexts, largest change first.

  --sort=Ir|calls|inclusive   sort key for contexts and tree children [Ir]
  --threshold=<0-100>         show contexts until this cumulative share [99]
  --top=<N>                   show at most N contexts (0: no limit) [40]
  --k=<N>|inf                 show the N-CCF (N <= the recorded k) [recorded k]
  --thread=<tid>|all          select one thread's forest [all]
  --join-threads              join all threads' forests into one
  --ksf                       print the k-Slab Forest (thesis style)
  --kccf                      print the k-Calling Context Forest (thesis style)
  --costs=yes|no              print Ir next to tree nodes [yes]
  --tree-order=sorted|natural sibling order in trees: by the sort key then
                              name, or the order of the file / of inv_k [sorted]
  --auto=yes|no               annotate the source files of the hottest contexts [no]
  --context=<N>               source lines of context around costly lines [8]
  --context-id=<ID>           print the k-context that KGRIND_CURRENT_CONTEXT()
                              returned ID for (kgrind.h), and nothing else
  -I, --include=<dir>         add a directory to the source search path
  --format=FORMAT             output format [text]:
      text        the table above (and what --ksf, --kccf, --auto,
                  --show-blocks ask for)
      json        everything: contexts, k-CCF, k-SF (docs/output-format.md)
      dot         Graphviz call graph of the hottest contexts (connected)
      folded      flame-graph stacks: "a;b;c <exclusive Ir>"
      pprof       gzipped profile.proto for go tool pprof (binary; redirect it)
      speedscope  speedscope's JSON file format, one profile per thread
  --show-blocks               block modes: the table of all basic blocks
  --blocks-disasm             block modes: --show-blocks with each block's
                              instructions (objdump), targets named by block
  --callers                   --format=folded: the k-CCF as caller stacks
                              (function;caller;caller's caller... Ir)
  --names=short|full          names without parameter lists and template
                              arguments, or as recorded [short in text and
                              dot, full in the other formats]
  --diff BASE NEW             per k-context changes of NEW against BASE
  --diff BASE... --vs NEW...  (several profiles a side, each side joined);
                              text, json or folded (two counts, a differential
                              flame graph); sides summed over their threads
  --normalize                 --diff: NEW scaled to BASE's totals first
  --fail-above=<PCT>          --diff: exit status 1 when the total Ir, or a
                              context's Ir (in % of BASE's total), grew by
                              more than PCT %
  --force                     join (or --diff) profiles of different programs
  --version, -h/--help
Profiles given together are joined (k-SF join); their k and mode must agree,
and their programs (cmd:'s executable by file name, arguments aside) unless
--force.
Arguments ending in a source suffix (.c .cpp .h ...) are source files to annotate.
Exit status: 0 success, 1 --fail-above exceeded, 2 bad usage or bad input.
EOT

sub is_source { $_[0] =~ /\.(?:c|cc|cpp|cxx|c\+\+|C|h|hh|hpp|hxx|H|inl|ipp|s|S|f|f90|F90|rs|go|m|mm)$/ }

sub parse_options {
    my @args = ([], []);
    my @argv = @_;
    my %o = (sort => 'Ir', costs => 'yes', 'tree-order' => 'sorted',
             auto => 'no', context => 8, include => [], format => 'text', thread => 'all');
    my @warn;
    {
        local $SIG{__WARN__} = sub { push @warn, $_[0] };
        # positional arguments in order: --vs starts the NEW side of --diff
        my $ok = GetOptionsFromArray(\@argv, \%o, 'sort=s', 'threshold=s', 'top=s', 'k=s', 'thread=s',
            'join-threads', 'ksf', 'kccf', 'costs=s', 'tree-order=s', 'auto=s', 'context=s',
            'include|I=s@', 'format=s', 'version', 'help|h', 'show-blocks', 'blocks-disasm',
            'names=s', 'callers', 'context-id=s', 'diff', 'normalize', 'fail-above=s', 'force',
            'vs' => sub { $o{vs}++ }, '<>' => sub { push @{$args[$o{vs} ? 1 : 0]}, "$_[0]" });
        push @{$args[$o{vs} ? 1 : 0]}, @argv;    # after '--'
        unless ($ok) {
            my $m = $warn[0] // "bad options\n";
            chomp $m;
            $m =~ s/^Unknown option: (.*)$/unknown option '--$1'/;
            fail("$m (see kgrind_annotate --help)");
        }
    }
    return \%o if $o{help} || $o{version};
    # given, --top and --threshold also limit the trees and the machine
    # formats (select_contexts); their defaults are the table's
    my $given = defined $o{top} || defined $o{threshold};
    $o{top} //= 40;
    $o{threshold} //= 99;
    $o{'show-blocks'} = 1 if $o{'blocks-disasm'};
    my %sorts = (ir => 'Ir', calls => 'calls', inclusive => 'inclusive', incl => 'inclusive');
    $o{sort} = $sorts{lc $o{sort}} // fail("bad --sort value '$o{sort}' (Ir, calls or inclusive)");
    fail("bad --threshold value '$o{threshold}' (a percentage 0-100)")
        unless $o{threshold} =~ /^\d+(?:\.\d*)?$/ && $o{threshold} <= 100;
    fail("bad --top value '$o{top}' (a non-negative integer)") unless $o{top} =~ /^\d+$/;
    $o{limited} = $given && ($o{top} > 0 || $o{threshold} < 100);    # --top=0 --threshold=100: everything
    fail("bad --context value '$o{context}' (a non-negative integer)") unless $o{context} =~ /^\d+$/;
    fail("bad --context-id value '$o{'context-id'}' (an id from KGRIND_CURRENT_CONTEXT(), a positive integer)")
        if defined $o{'context-id'} && $o{'context-id'} !~ /^[1-9]\d*$/;
    fail("bad --k value '$o{k}' (a non-negative integer or inf)")
        if defined $o{k} && $o{k} !~ /^(?:\d+|inf)$/;
    fail("bad --thread value '$o{thread}' (a thread id or all)") unless $o{thread} =~ /^(?:\d+|all)$/;
    fail("bad --format value '$o{format}' (text, json, dot, folded, pprof or speedscope)")
        unless $o{format} =~ /^(?:text|json|dot|folded|pprof|speedscope)$/;
    # short names where people read them, full ones where programs do
    $o{names} //= $o{format} =~ /^(?:text|dot)$/ ? 'short' : 'full';
    fail("bad --names value '$o{names}' (short or full)") unless $o{names} =~ /^(?:short|full)$/;
    fail("--vs separates the two sides of --diff (--diff BASE... --vs NEW...)") if $o{vs} && !$o{diff};
    fail("--vs given twice") if ($o{vs} // 0) > 1;
    fail("--fail-above, --normalize: only with --diff") if !$o{diff} && ($o{normalize} || defined $o{'fail-above'});
    fail("bad --fail-above value '$o{'fail-above'}' (a percentage)")
        if defined $o{'fail-above'} && $o{'fail-above'} !~ /^\d+(?:\.\d*)?$/;
    fail("--callers: only with --format=folded") if $o{callers} && $o{format} ne 'folded';
    for my $yn (qw(costs auto)) {
        fail("bad --$yn value '$o{$yn}' (yes or no)") unless $o{$yn} =~ /^(?:yes|no)$/;
    }
    fail("bad --tree-order value '$o{'tree-order'}' (sorted or natural)")
        unless $o{'tree-order'} =~ /^(?:sorted|natural)$/;
    if ($o{diff}) {
        my ($base, $new) = @args;
        ($base, $new) = ([$base->[0]], [$base->[1]]) if !$o{vs} && @$base == 2;
        fail("--diff needs two profiles, BASE and NEW (several a side: --diff BASE... --vs NEW...)")
            unless @$base && @$new && defined $base->[0] && defined $new->[0];
        fail("--diff: no source annotation (source files given: $_)") for grep { is_source($_) } @$base, @$new;
        fail("--diff: --format=$o{format} is not a diff format (text, json or folded)")
            unless $o{format} =~ /^(?:text|json|folded)$/;
        @o{qw(base new profiles sources)} = ($base, $new, [@$base, @$new], []);
        return \%o;
    }
    my (@profiles, @sources);
    for my $a (map { @$_ } @args) {
        if (is_source($a)) { push @sources, $a }
        else { push @profiles, $a }
    }
    fail("no profile given (usage: kgrind_annotate [options] kgrind.out.<pid> ...; see --help)") unless @profiles;
    $o{profiles} = \@profiles;
    $o{sources} = \@sources;
    return \%o;
}

# ---------------------------------------------------------------------------
# Main computation: everything is built before anything is printed.
# ---------------------------------------------------------------------------
sub analyse {
    my ($o) = @_;
    # pprof and speedscope name each function's file and first line: the body has them
    # and the call graph (dot): its calls= lines
    my $want_src = $o->{auto} eq 'yes' || @{$o->{sources}} || $o->{format} =~ /^(?:pprof|speedscope|dot)$/;
    my @P;
    refuse_repeated_files($o->{profiles});
    for my $f (@{$o->{profiles}}) { push @P, read_profile($f, $want_src, $P[0]) }
    my $P0 = $P[0];
    check_merge($P0, $_) for @P[1 .. $#P];
    refuse_other_programs('joined', @P) unless $o->{force};
    my $K = $P0->{k};
    my $kk = $K;
    if (defined $o->{k}) {
        $kk = $o->{k} eq 'inf' ? $INF : $o->{k} + 0;
        if ($K != $INF && ($kk == $INF || $kk > $K)) {
            fail("--k=$o->{k} is above the recorded k=$K of $P0->{file}: "
                 . "a k-SF only holds contexts of length up to k+1 (profile again with a larger --k)");
        }
    }
    # threads: merge same tids across files; join all when asked or when any file was joined
    my $join = $o->{'join-threads'} || grep { $_->{joined} eq 'yes' } @P;
    # intra mode: one forest per (thread, function); the key is "tid\0function"
    my (%by, @order, %fname);
    for my $P (@P) {
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
                : "no such thread in " . join(', ', map { $_->{file} } @P)
                  . " (threads: " . join(', ', @tids) . ")"));
        }
        @order = grep { $tid_of->($_) eq $o->{thread} } @order;
    }
    # the k-CCF's trees are built only for the outputs that show them
    # (a CCT's inf-CCF pruned to the contexts selected is built when printed: pruned_ccf)
    my $tree = $o->{kccf} || $o->{format} eq 'json' || ($o->{format} eq 'dot' && $P0->{mode} ne 'func');
    my @threads;
    my %pos;
    @pos{@order} = 0 .. $#order;
    my $tnum = sub { my $t = $tid_of->($_[0]); $t eq 'all' ? 0 : $t };
    for my $key (sort { $tnum->($a) <=> $tnum->($b) || $pos{$a} <=> $pos{$b} } @order) {
        my $tid = $tid_of->($key);
        my $F = join_forests($tid, @{$by{$key}});
        # a CCT's inf-CCF is walked where printed (ccf_tree), but for out_dot's
        my $lazy = $kk == $INF && KGrind::Forest::single_tree($F) && !($o->{format} eq 'dot' && $P0->{mode} ne 'func');
        my $C = inv_k($F, $kk, $K, !$lazy && $o->{'tree-order'} eq 'natural', !$lazy && $tree);
        $C->{keep_automaton} = $lazy && $tree && !$o->{limited};    # the whole inf-CCF is printed
        $C->{outer} = $BLOCKMODE ? undef : KGrind::Inclusive::outermost($F, $kk, $K);
        $C->{ir} = $F->{ir};
        push @threads, { tid => $tid, F => $F, C => $C, ir => $F->{ir},
                         (defined $fname{$key} ? (fname => $fname{$key}) : ()) };
    }
    my $total = 0;
    $total += $_->{total} for @P;
    my %S = (P => \@P, K => $K, kk => $kk, threads => \@threads, total => $total, joined => $join,
             ntids => scalar(@tids));
    fail("--show-blocks/--blocks-disasm: $P0->{file} is a function-mode profile (no basic blocks; "
         . "profile with --mode=intra or --mode=inter)") if $o->{'show-blocks'} && $P0->{mode} eq 'func';
    if ($P0->{mode} ne 'func') {
        $BLOCKMODE = 1;
        # the block table, merged by name over the profiles (counts summed)
        my %b;
        for my $P (@P) {
            for my $B (@{$P->{blocks}}) {
                if (my $x = $b{$B->{id}}) { $x->{count} += $B->{count} }
                else { $b{$B->{id}} = { %$B, name => $LNAME[$B->{id}], obj => $P } }
            }
        }
        $S{blocks} = [sort { $b->{count} <=> $a->{count} || $a->{addr} <=> $b->{addr} || $a->{name} cmp $b->{name} }
                      values %b];
    }
    push @KEEP, \%S;    # lives until the process exits: never freed piece by piece
    # source data of the selected threads
    if ($want_src) {
        my %tsel = map { $_ => 1 } @order;
        my (%src, %fnl);
        for my $P (@P) {
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
        $S{src} = \%src;
        $S{fnline} = \%fnl;
    }
    return \%S;
}

# Sorting helpers: key of a context / node by --sort.
# A context's counter (xcalls, xexcl, xincl): an array, or a CCT's packed
# column (KGrind::Forest::cct_contexts).
sub cval { my ($C, $name, $cid) = @_; my $c = $C->{$name}; ref $c ? $c->[$cid] : vec($c, $cid, 64) }

# Context cid's inclusive Ir of its outermost activations, at most the
# thread's Ir (KGrind::Inclusive); the plain inclusive Ir at k = inf and in
# the block modes (where it equals the exclusive Ir).  Looked up per context:
# the text table needs only the contexts it shows.
sub outer_incl {
    my ($C, $cid) = @_;
    my $outer = $C->{outer} or return cval($C, 'xincl', $cid);
    my $v = $outer->{KGrind::Inclusive::key_of(ctx_labels($C, $cid))} // cval($C, 'xincl', $cid);
    return $v < $C->{ir} ? $v : $C->{ir};
}

# All contexts' outer_incl, computed once (the plain column without outermost values).
sub xouter {
    my ($C) = @_;
    return $C->{xincl} unless $C->{outer};
    return $C->{xouter} //= do { my @x; $x[$_] = outer_incl($C, $_) for @{$C->{ctx}}; \@x };
}

# The sort keys: inclusive is the contexts' outermost inclusive Ir, the
# trees' plain inclusive counters.  An array, or for a CCT's contexts a
# packed column (read with each_key).
sub key_arrays {
    my ($sort, $C, $ctx) = @_;
    return $ctx ? ($sort eq 'calls' ? $C->{xcalls} : $sort eq 'inclusive' ? xouter($C) : $C->{xexcl})
                : col($C, $sort eq 'calls' ? 'calls' : $sort eq 'inclusive' ? 'incl' : 'excl');
}

# Calls $each->([keys], ids) over all contexts, in chunks (a CCT's packed
# column is never unpacked whole); ids are the keys' context ids, or for a
# packed column the first key's (the others follow).
sub each_key {
    my ($C, $key, $each) = @_;
    return $each->([@$key[@{$C->{ctx}}]], $C->{ctx}) if ref $key;
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
        elsif ($cch) { $s .= "\0" . $LNAME[$_ - 1] for reverse unpack('N*', substr($cch->[$cid], 0, -8)) }
        else {
            my $u = $cid;
            while ($u >= 0) { $s .= "\0" . $LNAME[$cfn->[$u]]; $u = $cpar->[$u] }
        }
        push @s, "$s\0\0\0$cid";
    }
    @s = sort @s;
    return [map { substr($_, rindex($_, "\0") + 1) } @s];
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
        my $key = key_arrays($o->{sort}, $T, 0);
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

# Function names get "()" (thesis style); block names ({foo+12 at prog4.c:14}
# and __root__) are printed as they are.
sub fmt_name { my $n = shift; $n =~ /\)\z/ || $BLOCKMODE ? $n : "$n()" }

sub print_tree {
    my ($o, $T) = @_;
    my $view = tree_view($o, $T);
    my $costs = $o->{costs} eq 'yes' && $view->{costs};
    my @stack = map { [$_, 0] } reverse @{$view->{roots}};
    while (@stack) {
        my ($v, $d) = @{pop @stack};
        my ($fn, $cal, $exc, $inc) = $view->{node}->($v);
        my $l = ('  ' x $d) . '| ' . fmt_name($LNAME[$fn]) . ",$cal";
        $l .= "  [Ir $exc, incl $inc]" if $costs;
        out("$l\n");
        my $kids = $view->{kids}->($v);
        push @stack, map { [$_, $d + 1] } reverse @$kids if $kids;
    }
}

# ---------------------------------------------------------------------------
# The output, written as it is produced: every format is printed after the
# whole input was read and checked (analyse), so bad input still prints
# nothing; memory is then that of the forests, not of the output.
# ---------------------------------------------------------------------------
my $OUT = '';             # not written yet
my $OUT_LENGTH = 0;       # its length: `length $OUT` counts a character string's characters, O(n)
my $OUT_CLEAN = 0;        # names' bytes made UTF-8 (text and folded: their pieces are whole lines)
sub out {
    for (@_) {
        $OUT .= $_;
        $OUT_LENGTH += length;
    }
    flush_out() if $OUT_LENGTH >= 1 << 20;
}

sub flush_out {
    return if $OUT eq '';
    $OUT = utf8_clean($OUT) if $OUT_CLEAN;
    unless (print STDOUT $OUT) {
        die bless({}, 'KG::Closed') if $!{EPIPE};    # the reader left: stop, status 0
        fail("cannot write the output: $!");
    }
    $OUT = '';
    $OUT_LENGTH = 0;
}

sub pct { my ($a, $b) = @_; $b ? sprintf('%.2f%%', 100 * $a / $b) : '-' }

sub commify { my $n = reverse shift; $n =~ s/(\d{3})(?=\d)/$1,/g; scalar reverse $n }

# Contexts to show in the table: --threshold (cumulative share of the sort
# key over all contexts) and --top.
sub shown_contexts {
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

sub ctx_str { my ($o, $C, $cid) = @_; join(' > ', map { display_name($o, $_) } @{ctx_path($C, $cid)}) }

# ---------------------------------------------------------------------------
# Text output.
# ---------------------------------------------------------------------------
sub out_text {
    my ($o, $S) = @_;
    my @out;
    my $rule = '-' x 80;
    my @P = @{$S->{P}};
    my $P0 = $P[0];
    push @out, $rule;
    push @out, (@P > 1 ? 'Profile data files: ' : 'Profile data file: ') . join(', ', map { $_->{file} } @P)
        . ' (creator: ' . ($P0->{creator} // '?') . ')';
    push @out, $rule;
    my %cmds = map { ($_->{cmd} // '?') => 1 } @P;
    push @out, sprintf('%-22s%s', 'Command:', join(' | ', sort keys %cmds));
    push @out, sprintf('%-22s%s', 'PID:', join(', ', map { $_->{pid} // '?' } @P));
    push @out, sprintf('%-22s%s', 'K value:', kstr($S->{kk}) . ($S->{kk} != $S->{K} ? ' (recorded k: ' . kstr($S->{K}) . ')' : ''));
    if ($BLOCKMODE) {
        push @out, sprintf('%-22s%s', 'Mode:', $P0->{mode} . ($P0->{mode} eq 'intra'
            ? ' (basic blocks, one k-SF per thread and function)' : ' (basic blocks, one k-SF per thread)')
            . ($P0->{roll} eq 'yes' ? ', loops rolled' : ', loops not rolled'));
    } else {
        push @out, sprintf('%-22s%s', 'Mode:', $P0->{mode} . ($P0->{rolling} eq 'yes' ? ', simple recursion rolled' : ', simple recursion unrolled'));
    }
    my $nthr = 0;
    if ($BLOCKMODE) { my %t; $t{$_->{tid}} = 1 for map { @{$_->{threads}} } @P; $nthr = keys %t }
    else { $nthr += @{$_->{threads}} for @P }
    my $tool_joined = grep { $_->{joined} eq 'yes' } @P;
    my $thr_desc = $tool_joined ? 'joined when profiling (thread all)'
                 : $S->{joined} ? "$nthr, joined by kgrind_annotate (thread all)"
                 : "$nthr, " . ($BLOCKMODE ? $S->{ntids} : scalar(@{$S->{threads}})) . ' shown';
    push @out, sprintf('%-22s%s', 'Threads:', $thr_desc);
    push @out, sprintf('%-22s%s', 'Events:', 'Ir');
    push @out, sprintf('%-22s%s', 'Total Ir:', commify($S->{total}));
    push @out, '', 'No basic block of a traced function ran: the block modes trace the functions of '
        . '--funcs (by default the main executable\'s); pass --funcs to trace library code.'
        if $BLOCKMODE && !grep { $_->{F}{n} > ($P0->{mode} eq 'inter' ? 1 : 0) } @{$S->{threads}};
    for my $t (@{$S->{threads}}) {
        push @out, sprintf('%-22s%s', "Thread $t->{tid}" . (defined $t->{fname} ? ", $t->{fname}: " : ':'),
            'Ir ' . commify($t->{ir})
            . ", k-SF nodes $t->{F}{n}" . left_out_note($S, $t->{tid})
            . ', ' . kstr($S->{kk}) . '-CCF nodes ' . header_ccf_nodes($o, $t->{C}));
    }
    my @hot;    # contexts shown, for source annotation
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my $want_src = $o->{auto} eq 'yes' || @{$o->{sources}};
        my $sorted = sorted_contexts($o, $C, $want_src ? 0 : $o->{top});
        my ($show, $sum) = shown_contexts($o, $C, $sorted);
        push @hot, [$t, $sorted];
        push @out, '', $rule;
        push @out, sprintf('Hottest %s-contexts, thread %s: %d of %d shown (sorted by %s; threshold %s%%%s)',
            kstr($S->{kk}) . ($BLOCKMODE ? ' block' : ''), forest_desc($t), scalar(@$show), ctx_count($C), $o->{sort}, $o->{threshold},
            $o->{top} ? ", top $o->{top}" : '');
        push @out, $rule;
        my $pk = $o->{sort} eq 'calls' ? '%calls' : $o->{sort} eq 'inclusive' ? '%incl' : '%Ir';
        my $den = $o->{sort} eq 'calls' ? $sum : $t->{ir};
        push @out, sprintf('%15s %8s %15s %12s  %s', 'Ir', $pk, 'incl Ir', 'calls', 'context');
        my $key = key_arrays($o->{sort}, $C, 1);
        for my $cid (@$show) {
            push @out, sprintf('%15s %8s %15s %12s  %s', commify(cval($C, 'xexcl', $cid)),
                pct(ref $key ? $key->[$cid] : vec($key, $cid, 64), $den),
                commify(outer_incl($C, $cid)), commify(cval($C, 'xcalls', $cid)), ctx_str($o, $C, $cid));
        }
        if ($o->{ksf}) {
            my $T = ksf_tree($o, $t);
            push @out, '', $rule, "DUMP of K-SF (k=" . kstr($S->{K}) . ", thread " . forest_desc($t) . ", $t->{F}{n} nodes"
                . left_out_note($S, $t->{tid})
                . ($T->{shown} ? ", $T->{n} shown: the paths of the contexts selected)" : ')'), $rule;
            out_lines(\@out);
            print_tree($o, $T);
        }
        if ($o->{kccf}) {
            my $T = ccf_tree($o, $t);
            push @out, '', $rule, "DUMP of K-CCF (k=" . kstr($S->{kk}) . ", thread " . forest_desc($t) . ", "
                . ($T->{shown} ? "$T->{n} nodes shown: the chains of the contexts selected)" : ccf_nodes($C) . ' nodes)'), $rule;
            out_lines(\@out);
            print_tree($o, $T);
        }
    }
    show_blocks($o, $S, \@out) if $o->{'show-blocks'};
    annotate_sources($o, $S, \@hot, \@out) if $o->{auto} eq 'yes' || @{$o->{sources}};
    out_lines(\@out);
}

# Writes the lines gathered so far (each with its newline) and forgets them.
sub out_lines { my ($lines) = @_; out(map { "$_\n" } @$lines); @$lines = () }

# ---------------------------------------------------------------------------
# Block modes: the table of all blocks (--show-blocks) and their
# instructions (--blocks-disasm, thesis Listing 4.15).
# ---------------------------------------------------------------------------
sub show_blocks {
    my ($o, $S, $out) = @_;
    my $rule = '-' x 80;
    my $B = $S->{blocks};
    push @$out, '', $rule, 'All basic blocks: ' . scalar(@$B) . ' (sorted by execution count, then address)', $rule;
    my $dis = $o->{'blocks-disasm'} ? disasm_blocks($S) : undef;
    push @$out, @{$dis->{notes}} if $dis;
    push @$out, sprintf('%12s  %-18s  %s', 'count', 'address', 'block [function, file:line]');
    for my $b (@$B) {
        push @$out, sprintf('%12s  %-18s  %s [%s, %s:%d]', commify($b->{count}), sprintf('0x%x', $b->{addr}),
                            $b->{name}, $b->{fn}, $b->{file}, $b->{line});
        next unless $dis;
        my $ins = $dis->{blocks}{$b->{id}};
        push @$out, $ins ? ('  Disassembly:', map { "    $_" } @$ins) : '  Disassembly: not available';
    }
}

# The object file of each block's function: the profile's ob= line above the
# function's fn= lines in the callgrind body; without one (or for a function
# the body does not name), the cmd: executable, relative paths taken from the
# profile's directory.
sub object_of_fns {
    my ($P) = @_;
    return $P->{fnob} if $P->{fnob};
    my %fnob;
    my (%name, $ob);
    if (open(my $fh, '<:raw', $P->{file})) {
        while (my $l = <$fh>) {
            last if index($l, '# ksf-') == 0;
            next unless $l =~ /^(c?ob|c?fn|fl|fi|fe|cfi|cfl)=(?:\((\d+)\))?[ ]*([^\r\n]*)$/;
            my ($key, $id, $n) = ($1, $2, $3);
            my $sp = $key =~ /ob/ ? 'ob' : $key =~ /fn/ ? 'fn' : 'fl';
            if (defined $id) { if ($n ne '') { $name{$sp}{$id} = $n } else { $n = $name{$sp}{$id} // '' } }
            if ($key eq 'ob') { $ob = $n }
            elsif ($key eq 'fn' && defined $ob && $ob ne '???') { $fnob{base_name($n)} //= $ob }
        }
        close $fh;
    }
    return $P->{fnob} = \%fnob;
}

sub exe_of {
    my ($P) = @_;
    my ($exe) = split ' ', $P->{cmd} // '';
    return undef unless defined $exe && $exe ne '';
    return $exe if File::Spec->file_name_is_absolute($exe);
    my (undef, $dir) = File::Spec->splitpath(File::Spec->rel2abs($P->{file}));
    return File::Spec->catfile($dir, $exe);
}

sub disasm_blocks {
    my ($S) = @_;
    my (@notes, %ins);
    my $ok = `objdump --version 2>/dev/null`;
    unless ($? == 0 && $ok) {
        return { notes => ['-- objdump not found: no disassembly of the blocks'], blocks => {} };
    }
    # blocks by object file
    my %byobj;
    for my $b (@{$S->{blocks}}) {
        my $ob = object_of_fns($b->{obj})->{$b->{fn}} // exe_of($b->{obj});
        push @{$byobj{$ob // '?'}}, $b;
    }
    for my $ob (sort keys %byobj) {
        unless ($ob ne '?' && -f $ob) {
            push @notes, "-- object file '$ob' not found: no disassembly of its " . scalar(@{$byobj{$ob}}) . ' block(s)';
            next;
        }
        # function symbols: name -> [address, size]
        my %sym;
        my $q = $ob; $q =~ s/'/'\\''/g;
        for my $l (`objdump -t '$q' 2>/dev/null`) {
            next unless $l =~ /^([0-9a-f]+) .{7} (\S+)\t([0-9a-f]+)\s+(?:\.hidden\s+)?(\S+)\s*$/;
            my ($a, $sec, $sz, $n) = (hex $1, $2, hex $3, $4);
            next unless substr($l, 23, 1) eq 'F' || $sz;
            $sym{$n} //= [$a, $sz];
        }
        my (%fnblocks, %target);
        for my $b (@{$byobj{$ob}}) {
            my $s = $sym{$b->{fn}};
            unless ($s) { push @notes, "-- $b->{name}: no symbol '$b->{fn}' in '$ob': no disassembly"; next }
            $b->{faddr} = $s->[0] + $b->{offset};
            $target{$b->{faddr}} = $b->{name};
            push @{$fnblocks{$b->{fn}}}, $b;
        }
        for my $fn (sort keys %fnblocks) {
            my ($start, $size) = @{$sym{$fn}};
            my @bl = sort { $a->{faddr} <=> $b->{faddr} } @{$fnblocks{$fn}};
            my $stop = $start + ($size || 1);
            $stop = $bl[-1]{faddr} + 64 if $stop <= $bl[-1]{faddr};
            my @lines = `objdump -d -M intel --no-show-raw-insn --start-address=0x@{[sprintf '%x', $start]} --stop-address=0x@{[sprintf '%x', $stop]} '$q' 2>/dev/null`;
            my @insn;    # [address, text]
            for my $l (@lines) {
                next unless $l =~ /^\s*([0-9a-f]+):\s+(\S.*?)\s*$/;
                push @insn, [hex $1, $2];
            }
            for my $i (0 .. $#bl) {
                my $b = $bl[$i];
                my $next = $i < $#bl ? $bl[$i + 1]{faddr} : $stop;
                my @out;
                for my $x (@insn) {
                    next if $x->[0] < $b->{faddr};
                    last if $x->[0] >= $next && @out;
                    my $t = $x->[1];
                    $t =~ s/\b([0-9a-f]+) <[^>]*>/defined $target{hex $1} ? $target{hex $1} : $&/ge;
                    push @out, $t;
                    # a block ends at its first jump, call or return
                    last if $x->[1] =~ /^(?:(?:bnd|notrack|rep[a-z]*)\s+)*(?:j[a-z]+|call[a-z]*|ret[a-z]*|hlt|ud2)\b/;
                }
                $ins{$b->{id}} = \@out if @out;
            }
        }
    }
    return { notes => \@notes, blocks => \%ins };
}

# "1" or, for an intra forest, "1, function foo".
sub forest_desc { my $t = shift; $t->{tid} . (defined $t->{fname} ? ", function $t->{fname}" : '') }

# ---------------------------------------------------------------------------
# Source annotation.
# ---------------------------------------------------------------------------
sub find_source {
    my ($o, $name, $P0) = @_;
    my @cand;
    if (File::Spec->file_name_is_absolute($name)) { push @cand, $name }
    else {
        push @cand, $name;
        my ($vol, $dir) = File::Spec->splitpath($P0->{file});
        push @cand, File::Spec->catfile($dir, $name) if $dir ne '';
    }
    (my $rel = $name) =~ s{^/+}{};
    my @parts = File::Spec->splitdir($rel);
    for my $d (@{$o->{include}}) {
        for my $i (0 .. $#parts) { push @cand, File::Spec->catfile($d, @parts[$i .. $#parts]) }
    }
    for my $c (@cand) { return $c if -f $c && -r _ }
    return undef;
}

sub annotate_sources {
    my ($o, $S, $hot, $out) = @_;
    my $src = $S->{src} // {};
    my $fnline = $S->{fnline} // {};
    my $rule = '-' x 80;
    my $P0 = $S->{P}[0];
    my $pmtime = (sort { $a <=> $b } map { $_->{mtime} // 0 } @{$S->{P}})[0];
    # files: explicit ones, and with --auto the files of the functions in the shown tables
    my @files;
    my %seen;
    for my $s (@{$o->{sources}}) {
        my ($match) = grep { $_ eq $s } keys %$src;
        ($match) = sort grep { m{(?:^|/)\Q$s\E$} || $s =~ m{(?:^|/)\Q$_\E$} } keys %$src unless $match;
        push @files, [$s, $match];
        $seen{$match // $s} = 1;
    }
    if ($o->{auto} eq 'yes') {
        my %fns;
        for my $h (@$hot) {
            my ($t, $sorted) = @$h;
            my ($show) = shown_contexts($o, $t->{C}, $sorted);
            $fns{$LNAME[ctx_fn($t->{C}, $_)]} = 1 for @$show;
        }
        for my $f (sort keys %$src) {
            next if $seen{$f} || $f eq '???';
            next unless grep { $fns{$_} } keys %{$fnline->{$f} // {}};
            push @files, [$f, $f];
            $seen{$f} = 1;
        }
    }
    # hottest contexts of each function, over the shown threads
    my %byfn;
    for my $h (@$hot) {
        my ($t, $sorted) = @$h;
        my $C = $t->{C};
        for my $cid (@$sorted) {
            my $fname = $LNAME[ctx_fn($C, $cid)];
            my $l = $byfn{$fname} //= [];
            push @$l, [$t, $cid] if @$l < 5;
        }
    }
    my @missing;    # named once, in one line
    for my $e (@files) {
        my ($name, $key) = @$e;
        my $lines = $key ? $src->{$key} : {};
        my $path = find_source($o, $key // $name, $P0);
        $path //= find_source($o, $name, $P0) if $key && $key ne $name;
        unless ($path) { push @missing, $key // $name; next }
        push @$out, '', $rule, "-- Annotated source: $path", $rule;
        my @text;
        if (open(my $fh, '<:raw', $path)) { @text = <$fh>; close $fh; chomp @text }
        else { pop @$out; push @$out, "-- Source file '$path' cannot be read: $!"; next }
        my $smtime = (stat $path)[9];
        push @$out, "WARNING: source file '$path' is newer than the profile '$P0->{file}': the annotation may be wrong"
            if defined $smtime && defined $pmtime && $smtime > $pmtime;
        my %first;    # line -> [functions starting there]
        for my $fn (sort keys %{$fnline->{$key // ''} // {}}) { push @{$first{$fnline->{$key}{$fn}}}, $fn }
        push @$out, sprintf('%15s  %s', 'Ir', 'source line');
        my %want;
        for my $l (keys %$lines, keys %first) {
            $want{$_} = 1 for ($l - $o->{context}) .. ($l + $o->{context});
        }
        my $n = @text;
        my $prev = 0;
        for my $i (1 .. $n) {
            next unless $want{$i};
            push @$out, "-- line $i " . ('-' x 40) if $i != $prev + 1;
            $prev = $i;
            if ($first{$i}) {
                for my $fn (@{$first{$i}}) {
                    next unless $byfn{$fn};
                    my $k = kstr($S->{kk});
                    push @$out, sprintf('%15s  // hottest %s-contexts of %s:', '', $k, $fn);
                    for my $h (@{$byfn{$fn}}) {
                        my ($t, $cid) = @$h;
                        my $C = $t->{C};
                        push @$out, sprintf('%15s  //   %s: Ir %s (%s), incl %s, calls %s%s', '', ctx_str($o, $C, $cid),
                            commify(cval($C, 'xexcl', $cid)), pct(cval($C, 'xexcl', $cid), $t->{ir}),
                            commify(outer_incl($C, $cid)), commify(cval($C, 'xcalls', $cid)),
                            @{$S->{threads}} > 1 ? ", thread $t->{tid}" : '');
                    }
                }
            }
            my $ir = $lines->{$i};
            push @$out, sprintf('%15s  %s', defined $ir ? commify($ir) : '.', $text[$i - 1]);
        }
        my @beyond = grep { $_ > $n } sort { $a <=> $b } keys %$lines;
        push @$out, "-- " . scalar(@beyond) . " line(s) with cost beyond the end of the file (last: $beyond[-1]): "
            . "the source probably changed since the profile" if @beyond;
    }
    push @$out, '', '-- ' . (@missing == 1 ? 'Source file' : scalar(@missing) . ' source files') . ' not found '
        . (@{$o->{include}} ? '(searched -I ' . join(', ', @{$o->{include}}) . ')' : '(add directories with -I)')
        . ': ' . join(', ', map { "'$_'" } @missing) if @missing;
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

# ---------------------------------------------------------------------------
# JSON output.
# ---------------------------------------------------------------------------
# A valid UTF-8 sequence of 2-4 bytes (RFC 3629: no overlongs, surrogates or
# code points above U+10FFFF).
my $UTF8_MULTI = qr/[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]|[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}
                   |\xED[\x80-\x9F][\x80-\xBF]|\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}
                   |\xF4[\x80-\x8F][\x80-\xBF]{2}/x;

# Names are bytes; JSON and DOT need UTF-8. A byte that is not part of a
# valid UTF-8 sequence (a Latin-1 symbol) is taken as the Latin-1 character
# it encodes, so nothing is lost and the output is valid UTF-8.
sub utf8_clean {
    my $s = shift;
    $s =~ s/($UTF8_MULTI)|([\x80-\xFF])/defined $1 ? $1 : chr(0xC0 | ord($2) >> 6) . chr(0x80 | ord($2) & 0x3F)/geo
        if $s =~ /[\x80-\xFF]/;
    return $s;
}

sub js {
    my $s = utf8_clean(shift);
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/([\x00-\x1f\x7f])/sprintf('\\u%04x', ord $1)/ge;
    return "\"$s\"";
}

# A forest as nested JSON objects, written with an explicit stack (a
# recursive writer keeps a string per level: O(depth^2) memory) as it is
# produced.
sub json_tree {
    my ($o, $T, $kidkey) = @_;
    my $view = tree_view($o, $T);
    my $s = '[';
    my @stack = ([$view->{roots}, 0]);    # [siblings, index of the next one]
    while (@stack) {
        my $top = $stack[-1];
        my ($list, $i) = @$top;
        if ($i == @$list) {       # a list ends, and with it its parent's object
            pop @stack;
            $s .= @stack ? ']}' : ']';
            next;
        }
        $top->[1]++;
        my $v = $list->[$i];
        my ($fn, $cal, $exc, $inc) = $view->{node}->($v);
        $s .= ($i ? ',' : '') . '{"name":' . js($LNAME[$fn]) . ',"calls":' . $cal . ',"Ir":' . $exc
            . ',"inclusive":' . $inc;
        my $kids = $view->{kids}->($v);
        if ($kids && @$kids) { $s .= ",\"$kidkey\":["; push @stack, [$kids, 0] }
        else { $s .= '}' }
        if (length $s >= 1 << 16) { out($s); $s = '' }
    }
    out($s);
}

sub out_json {
    my ($o, $S) = @_;
    my @P = @{$S->{P}};
    my $P0 = $P[0];
    my $kj = sub { $_[0] == $INF ? '"inf"' : $_[0] };
    my $pid = $P0->{pid} // 0;
    $pid = 0 unless $pid =~ /^\d+$/;
    my $s = '{"version":1,"tool":"kgrind","creator":' . js($P0->{creator} // '') . ',"files":['
        . join(',', map { js($_->{file}) } @P) . '],"cmd":' . js($P0->{cmd} // '') . ",\"pid\":$pid,\"pids\":["
        . join(',', map { ($_->{pid} // '') =~ /^\d+$/ ? $_->{pid} : 0 } @P) . '],"cmds":['
        . join(',', map { js($_->{cmd} // '') } @P) . '],"k":' . $kj->($S->{kk})
        . ',"recorded_k":' . $kj->($S->{K}) . ',"mode":' . js($P0->{mode}) . ',"rolling":'
        . ($P0->{rolling} eq 'yes' ? 'true' : 'false') . ',"joined":' . ($S->{joined} ? 'true' : 'false')
        . ',"events":["Ir"],"total":{"Ir":' . $S->{total} . '},"sort":' . js($o->{sort});
    if ($BLOCKMODE) {
        $s .= ',"roll_loops":' . ($P0->{roll} eq 'yes' ? 'true' : 'false') . ',"blocks":['
            . join(',', map { '{"name":' . js($_->{name}) . ',"address":' . js(sprintf('0x%x', $_->{addr}))
                . ',"count":' . $_->{count} . ',"function":' . js($_->{fn}) . ',"offset":' . $_->{offset}
                . ',"file":' . js($_->{file}) . ',"line":' . $_->{line} . '}' } @{$S->{blocks}}) . ']';
    }
    out($s, ',"threads":[');
    my @jname = map { js($_) } @LNAME;
    my $sep = '';
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my $tid = $t->{tid} eq 'all' ? '"all"' : $t->{tid};
        my $sorted = select_contexts($o, $C);
        out("$sep\{\"tid\":$tid," . (defined $t->{fname} ? '"function":' . js($t->{fname}) . ',' : '')
            . "\"Ir\":$t->{ir},\"ksf_nodes\":$t->{F}{n},\"ksf_nodes_left_out\":" . left_out_nodes($S, $t->{tid})
            . ',"kccf_nodes":' . ccf_nodes($C) . ',"contexts":[');
        my $comma = '';
        for my $cid (@$sorted) {
            out($comma, '{"path":[', join(',', @jname[@{ctx_labels($C, $cid)}]), '],"calls":', cval($C, 'xcalls', $cid),
                ',"Ir":', cval($C, 'xexcl', $cid), ',"inclusive":', cval($C, 'xincl', $cid), ',"inclusive_outermost":',
                outer_incl($C, $cid), '}');
            $comma = ',';
        }
        out('],"kccf":');
        json_tree($o, ccf_tree($o, $t), 'callers');
        out(',"ksf":');
        json_tree($o, ksf_tree($o, $t), 'children');
        out('}');
        $sep = ',';
    }
    out("]}\n");
}

# ---------------------------------------------------------------------------
# Folded stacks and Graphviz.
# ---------------------------------------------------------------------------
# --callers: the k-CCF as folded stacks, the activated function first, then
# its callers, innermost first: an icicle per function (who calls it, up to
# k levels), each stack weighing the exclusive Ir of its context.
sub out_callers {
    my ($frame, $S, $o) = @_;
    my %sum;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        for my $cid (@{$o->{limited} ? select_contexts($o, $C) : ctx_ids($C)}) {
            my $x = cval($C, 'xexcl', $cid) or next;
            $sum{join(';', map { $frame->[$_] } reverse @{ctx_labels($C, $cid)})} += $x;
        }
    }
    out("$_ $sum{$_}\n") for sort keys %sum;
}

sub out_folded {
    my ($o, $S) = @_;
    my %sum;
    # names as they are (--names=short if asked), but ';', the separator
    my @frame = map { (my $x = display_name($o, $_)) =~ s/;/%3B/g; $x } @LNAME;
    return out_callers(\@frame, $S, $o) if $o->{callers};
    return cct_folded(\@frame, $S->{threads}) if !$o->{limited} && !grep { !$_->{C}{cct} } @{$S->{threads}};
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        for my $cid (@{$o->{limited} ? select_contexts($o, $C) : ctx_ids($C)}) {
            my $x = cval($C, 'xexcl', $cid) or next;
            $sum{join(';', map { $frame[$_] } @{ctx_labels($C, $cid)})} += $x;
        }
    }
    out("$_ $sum{$_}\n") for sort keys %sum;
}

# The folded stacks of calling context trees (each node's stack is its root
# path), summed over the trees, in the order of the stacks (byte order, as
# the sorted stacks of out_folded), written as produced: memory linear in
# the trees, not in the output (the sum of the depths).
sub cct_folded {
    my ($frame, $threads) = @_;
    my (@fn, @excl, @kids, @roots);    # per node of all trees, numbered one tree after the other
    my $base = 0;
    for my $t (@$threads) {
        my $C = $t->{C};
        my ($r, $k) = children_of(col($C->{F}, 'par'));
        push @roots, map { $_ + $base } @$r;
        $kids[$_ + $base] = [map { $_ + $base } @{$k->[$_]}] for grep { $k->[$_] } 0 .. $#$k;
        push @fn, @{col($C->{F}, 'fn')};
        $excl[$base + $_] = vec($C->{xexcl}, $_, 64) for 0 .. $C->{nctx} - 1;
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

sub dq { my $s = utf8_clean(shift); $s =~ s/(["\\])/\\$1/g; $s =~ s/\n/\\n/g; "\"$s\"" }

sub out_dot {
    my ($o, $S) = @_;
    my @out = ('digraph kgrind {', '  rankdir=LR;', '  node [shape=box, style=filled, fontname="Helvetica"];',
               '  label=' . dq('hottest ' . kstr($S->{kk}) . "-contexts of $S->{P}[0]{file} (sorted by $o->{sort}); "
                   . 'arrows go from caller to callee') . ';');
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
            my $share = $t->{ir} ? $C->{excl}[$u] / $t->{ir} : 0;
            my $col = sprintf('#ff%02x%02x', 255 - int(200 * $share), 255 - int(200 * $share));
            push @out, sprintf('    "t%s_%d" [label=%s, fillcolor="%s"%s];', $tt, $u,
                dq(fmt_name($LNAME[$C->{fn}[$u]]) . "\ncalls $C->{calls}[$u]\nIr $C->{excl}[$u] / incl $C->{incl}[$u]"),
                $col, $hotend{$u} ? ', penwidth=2' : '');
        }
        for my $e (sort keys %edge) {
            my ($u, $p) = split ' ', $e;
            push @out, sprintf('    "t%s_%d" -> "t%s_%d" [label="%s"];', $tt, $u, $tt, $p, $C->{calls}[$u]);
        }
        push @out, '  }';
    }
    return join("\n", @out, '}') . "\n";
}

# ---------------------------------------------------------------------------
# --context-id=ID: the k-context that KGRIND_CURRENT_CONTEXT() returned ID
# for, from the "# kgrind-context <id> <thread> <label>..." records (labels
# innermost first) and the ksf-fns table (docs/regions.md).
sub print_context_id {
    my ($id, @files) = @_;
    for my $file (@files) {
        open(my $fh, '<', $file) or fail("cannot open $file: $!");
        my (@names, $found, %body);
        my $version = 0;
        while (my $l = <$fh>) {
            $l =~ s/\r?\n\z//;
            if (index($l, '# ksf-fns ') == 0) {
                push @names, map { table_name($_, $version, \%body) } split(/\t/, substr($l, 10), -1);
            }
            elsif ($l =~ /^c?fn=\((\d+)\) *(.+)$/) { $body{$1} = $2 }
            elsif ($l =~ /^# ksf-version: (\d+)$/) { $version = $1 }
            elsif ($l =~ /^# kgrind-context $id (\S+)((?: \d+)+)$/) { $found = [$1, [split ' ', $2]] }
        }
        close $fh;
        next unless $found;
        my ($thread, $labels) = @$found;
        my @chain = map { $names[$_] // fail("$file: context $id has unknown function id $_") } reverse @$labels;
        print "context $id, thread $thread: ", join(' > ', @chain), "\n";
        return 0;
    }
    fail("context id $id is in none of " . join(', ', @files) . " (ids are written by KGRIND_CURRENT_CONTEXT())");
}

# ---------------------------------------------------------------------------
# The exporters (perl/lib/KGrind/Export/*.pm) share one interface,
# write(\%model, $out_fh, \%options), over the model below: the selected
# threads' k-contexts with names as --names asks.  pprof's and (of CCTs)
# speedscope's write_file take the samples from a callback instead and
# write as they go (stream_pprof, cct_speedscope).
# ---------------------------------------------------------------------------
my %EXPORTER = (pprof => 'KGrind::Export::Pprof', speedscope => 'KGrind::Export::Speedscope',
                dot => 'KGrind::Export::Dot');

sub load_module {
    my ($module) = @_;
    (my $file = "$module.pm") =~ s{::}{/}g;
    eval { require $file; 1 } or fail("cannot load $module (kgrind_annotate's modules are not installed "
                                      . "with it?): " . (split /\n/, $@)[0]);
    return $module;
}

sub display_name { my ($o, $n) = @_; $o->{names} eq 'short' ? KGrind::Names::short_name($n) : $n }

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

# --format=speedscope of calling context trees without a limit: an
# "evented" profile per tree, written as produced (a sampled profile lists
# every node's whole stack: O(nodes x depth), 490 MB for cc1plus's 2.9 M
# nodes).  A preorder walk opens each node with Ir below it at its start,
# spends its exclusive Ir, walks its callees in the tree's order (first
# call first) and closes it at its start plus its inclusive Ir (computed
# here from the exclusive counters: the events nest exactly).  The frames
# are numbered in the order in which the walk first names them.
sub cct_speedscope {
    my ($o, $S) = @_;
    my $module = load_module($EXPORTER{speedscope});
    my @name = map { utf8_clean(display_name($o, $_)) } @LNAME;
    my (%fid, @names, @lfid, @threads);
    my $frame_id = sub { $lfid[$_[0]] //= $fid{$name[$_[0]]} //= do { push @names, $name[$_[0]]; $#names } };
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my ($par, $fn) = (col($C->{F}, 'par'), col($C->{F}, 'fn'));
        my @excl = @{col($C->{F}, 'excl')};
        my @incl = @excl;
        for (my $v = $#$par; $v >= 0; $v--) { $incl[$par->[$v]] += $incl[$v] if $par->[$v] >= 0 }    # children have larger ids
        my ($roots, $kids) = children_of($par);
        my $end = 0;
        $end += $incl[$_] for @$roots;
        push @threads, { tid => $t->{tid}, end => $end, each_event => sub {
            my ($emit) = @_;
            my $at = 0;
            my @todo = reverse grep { $incl[$_] } @$roots;
            while (@todo) {
                my $v = pop @todo;
                if ($v < 0) { $emit->('C', $frame_id->($fn->[-1 - $v]), $at); next }
                $emit->('O', $frame_id->($fn->[$v]), $at);
                $at += $excl[$v];
                push @todo, -1 - $v, reverse grep { $incl[$_] } @{$kids->[$v] // []};
            }
        } };
    }
    my $data = { k => kstr($INF), files => [map { $_->{file} } @{$S->{P}}], exporter => "kgrind_annotate\@$VERSION",
                 sources => model_sources($S, sub { utf8_clean(display_name($o, $_[0])) }) };
    $module->can('write_file')->($data, \@threads, \@names, \&out);
    return undef;    # written
}

# The call edges between the contexts shown, summed over threads and
# profiles: [{from, to, calls, inclusive}].  At k = inf a context's caller is
# its path's prefix; else the callgrind body's calls= lines, projected to
# the k shown (the last k+1 names of each side).
sub call_edges {
    my ($S, $threads) = @_;
    return cct_edges($threads) if $S->{kk} == $INF;
    my $n = $S->{kk} + 1;
    my $path = sub { my @p = reverse split /'/, $_[0]; @p > $n ? [@p[-$n .. -1]] : \@p };
    my %sum;
    for my $P (@{$S->{P}}) {
        while (my ($k, $v) = each %{$P->{calls} // {}}) {
            my ($from, $to) = map { $path->($_) } split /\0/, $k;
            my $e = $sum{join("\0", @$from) . "\0\0" . join("\0", @$to)} //= { from => $from, to => $to,
                                                                                calls => 0, inclusive => 0 };
            $e->{calls} += $v->[0];
            $e->{inclusive} += $v->[1];
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

# The k of the callgrind body's contexts (desc: body contexts; the records'
# k in files that do not say).
sub body_k {
    my ($S) = @_;
    my ($k) = ($S->{P}[0]{desc}{'body contexts'} // '') =~ /^(\d+|inf)\b/;
    return !defined $k ? $S->{K} : $k eq 'inf' ? $INF : $k;
}

sub export_model {
    my ($o, $S) = @_;
    # names in UTF-8 (pprof's strings must be; the JSON formats too)
    my $name = sub { utf8_clean(display_name($o, $_[0])) };
    my @threads;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        push @threads, { tid => $t->{tid}, Ir => $t->{ir} + 0, contexts => [map {
            { path => [map { $name->($_) } @{ctx_path($C, $_)}], calls => cval($C, 'xcalls', $_) + 0,
              Ir => cval($C, 'xexcl', $_) + 0, inclusive => cval($C, 'xincl', $_) + 0,
              inclusive_outermost => outer_incl($C, $_) + 0 }
        } @{select_contexts($o, $C)}] };
    }
    my $edges = $o->{format} eq 'dot' ? call_edges($S, \@threads) : [];
    return { %{model_head($S, $name)}, edges => $edges, threads => \@threads };
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
             creator => $P0->{creator} // '', exporter => "kgrind_annotate\@$VERSION",
             sources => model_sources($S, $name),
             comments => ["kgrind k-contexts (k=$k) of " . join(', ', map { $_->{file} } @{$S->{P}})
                          . ': one sample per thread and context',
                          $k eq 'inf' ? 'stacks are full calling contexts'
                          : "a stack whose outermost frame is [truncated k=$k] lacks its outer callers"] };
}

# --format=pprof, written as produced (KGrind::Export::Pprof::write_file):
# each selected context's path is made when its sample is written, so
# memory is the forest's plus pprof's tables, not every context's path
# (export_model: O(nodes x depth) at k = inf).
sub stream_pprof {
    my ($o, $S) = @_;
    my $module = load_module($EXPORTER{pprof});
    my @name = map { utf8_clean(display_name($o, $_)) } @LNAME;
    my @threads = map {
        my $C = $_->{C};
        { tid => $_->{tid}, each_sample => $C->{cct} && !$o->{limited} ? cct_pprof_samples($C, \@name) : sub {
            my ($emit) = @_;
            $emit->([@name[@{ctx_labels($C, $_)}]], cval($C, 'xcalls', $_), cval($C, 'xexcl', $_))
                for @{select_contexts($o, $C)};
        } }
    } @{$S->{threads}};
    my $head = model_head($S, sub { utf8_clean(display_name($o, $_[0])) });
    my $ok = eval { $module->can('write_file')->($head, \@threads, \&out); 1 };
    unless ($ok) { die $@ if ref $@; fail("pprof: " . (split /\n/, $@)[0]) }
    return undef;    # written
}

# Every context of a calling context tree as pprof samples, in preorder:
# a node's stack is its location before its parent's stack, so each is
# one concatenation (making every context's path was O(nodes x depth) in
# Perl: 119.7 s against 32.7 s for cc1plus's 2.9 M-node CCT).
sub cct_pprof_samples {
    my ($C, $name) = @_;
    return sub {
        my (undef, $emit_stack, $location_of) = @_;
        my ($roots, $kids) = children_of(col($C->{F}, 'par'));
        my $fn = col($C->{F}, 'fn');
        my @todo = map { [$_, ''] } reverse @$roots;
        while (my $e = pop @todo) {
            my ($v, $callers) = @$e;
            my $stack = $location_of->($name->[$fn->[$v]]) . $callers;
            $emit_stack->($stack, cval($C, 'xcalls', $v), cval($C, 'xexcl', $v));
            push @todo, map { [$_, $stack] } reverse @{$kids->[$v] // []};
        }
    };
}

# The k-SF nodes kgrind left out of thread $tid's records (subtrees that
# count nothing: a fork child's copy of its parent's forest, paused or
# zeroed counting), summed over the profiles read; "all": every thread's.
sub left_out_nodes {
    my ($S, $tid) = @_;
    my $n = 0;
    for my $P (@{$S->{P}}) {
        while (my ($key, $val) = each %{$P->{desc} // {}}) {
            next unless $key =~ /^thread (\S+) left out$/ && ($tid eq 'all' || $1 eq $tid);
            $n += $1 if $val =~ /^(\d+)/;
        }
    }
    return $n;
}

# " (N counting nothing left out by kgrind)" after a thread's k-SF node
# count, or "" when its records hold every node.
sub left_out_note {
    my ($S, $tid) = @_;
    my $n = left_out_nodes($S, $tid);
    return $n ? ' (' . commify($n) . ' counting nothing left out by kgrind)' : '';
}

sub run_exporter {
    my ($module, $model, $o) = @_;
    my $out = '';
    open(my $fh, '>:raw', \$out) or fail("cannot write to memory: $!");
    my $ok = eval { load_module($module)->can('write')->($model, $fh, $o); 1 };
    unless ($ok) { die $@ if ref $@; fail("$o->{format}: " . (split /\n/, $@)[0]) }
    close $fh;
    return $out;
}

# The call graph at k = inf, in time linear in the forest plus the graph
# (export_model writes every context's path: O(nodes x depth)): the
# threads' calling context trees joined (each context summed over the
# threads, as the graph of the body's contexts is), the hottest contexts
# by --top and --threshold, and their callers up to __root__ (a context's
# one caller is its path's prefix); a box's tooltip is the last
# $DOT_TOOLTIP functions of its path.  Boxes are numbered in the order of
# their paths.
my $DOT_TOOLTIP = 32;
sub cct_dot_model {
    my ($o, $S) = @_;
    my $J = join_forests('all', map { $_->{F} } @{$S->{threads}});
    my $C = inv_k($J, $INF, $INF, 0, 0);
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
                           inclusive_outermost => vec($J->{incl}, $_, 64) } } sort { $a <=> $b } keys %in;
    my @edges = map { { from_key => $key{$parent->($_)}, to_key => $key{$_}, calls => vec($J->{calls}, $_, 64),
                        inclusive => vec($J->{incl}, $_, 64) } } grep { $parent->($_) >= 0 } sort { $a <=> $b } keys %in;
    return { k => 'inf', files => [map { $_->{file} } @{$S->{P}}], total => $S->{total},
             threads => [{ contexts => \@contexts }], edges => \@edges, shown => [map { $key{$_} } @$show] };
}

sub export {
    my ($o, $S) = @_;
    return out_dot($o, $S) if $o->{format} eq 'dot' && $BLOCKMODE;
    return run_exporter($EXPORTER{dot}, cct_dot_model($o, $S), $o)
        if $o->{format} eq 'dot' && $S->{kk} == $INF && !grep { !KGrind::Forest::single_tree($_->{F}) } @{$S->{threads}};
    if ($o->{format} eq 'dot') {
        # finite k above the body's: the graph of the body's contexts
        my $bk = body_k($S);
        $S = analyse({ %$o, k => kstr($bk) }) if $S->{kk} != $INF && $bk != $INF && $S->{kk} > $bk;
        return run_exporter($EXPORTER{dot}, export_model({ %$o, names => 'full', limited => 0 }, $S), $o);
    }
    fail("--format=$o->{format}: function-mode profiles only ($S->{P}[0]{file} has mode $S->{P}[0]{mode})")
        if $BLOCKMODE;
    return stream_pprof($o, $S) if $o->{format} eq 'pprof';
    return cct_speedscope($o, $S) if $o->{format} eq 'speedscope' && !$o->{limited} && $S->{kk} == $INF
                                     && !grep { !$_->{C}{cct} } @{$S->{threads}};
    return run_exporter($EXPORTER{$o->{format}}, export_model($o, $S), $o);
}

# --diff BASE... --vs NEW...: each side read and joined as usual, at the
# smaller of their k unless --k says; contexts keyed by full names.
sub diff {
    my ($o) = @_;
    my %side = map { ($_ => { %$o, profiles => $o->{$_}, names => 'full', limited => 0 }) } qw(base new);
    my %S = map { ($_ => analyse($side{$_})) } qw(base new);
    if (!defined $o->{k} && $S{base}{kk} != $S{new}{kk}) {
        my ($low, $high) = sort { $S{$a}{kk} == $INF ? 1 : $S{$b}{kk} == $INF ? -1 : $S{$a}{kk} <=> $S{$b}{kk} } qw(base new);
        $side{$high}{k} = kstr($S{$low}{kk});
        $S{$high} = analyse($side{$high});
    }
    fail("--diff: function-mode profiles only") if $BLOCKMODE;
    refuse_other_programs('compared', $S{base}{P}[0], $S{new}{P}[0]) unless $o->{force};
    my $module = load_module('KGrind::Export::Diff');
    my $d = $module->can('compare')->(export_model($side{base}, $S{base}), export_model($side{new}, $S{new}), $o);
    return (run_exporter($module, $d, $o), $d->{failed} // []);
}

# ---------------------------------------------------------------------------
sub main {
    my $o = parse_options(@_);
    if ($o->{help}) { print $USAGE; return 0 }
    if ($o->{version}) { print "kgrind_annotate $VERSION\n"; return 0 }
    return print_context_id($o->{'context-id'}, @{$o->{profiles}}) if defined $o->{'context-id'};
    load_module($_) for qw(KGrind::Names KGrind::Inclusive);
    my ($S, $text, $failed);
    if ($o->{diff}) { ($text, $failed) = diff($o) }
    else { $S = analyse($o) }
    # every format is UTF-8: bytes of names that are not (Latin-1) are converted
    $OUT_CLEAN = ($o->{format} eq 'text' || $o->{format} eq 'folded') && !$o->{diff};
    binmode STDOUT, ':raw';
    local $SIG{PIPE} = 'IGNORE';
    my $written = eval {
        if (defined $text) { out($text) }
        elsif ($EXPORTER{$o->{format}}) { my $text = export($o, $S); out($text) if defined $text }
        elsif ($o->{format} eq 'json') { out_json($o, $S) }
        elsif ($o->{format} eq 'dot') { out(out_dot($o, $S)) }
        elsif ($o->{format} eq 'folded') { out_folded($o, $S) }
        else { out_text($o, $S) }
        flush_out();
        1;
    };
    unless ($written) { return 0 if ref $@ eq 'KG::Closed'; die $@ }
    close STDOUT or ($!{EPIPE} ? return 0 : fail("cannot write the output: $!"));
    if ($failed && @$failed) {    # --diff --fail-above: the diff is printed, the status says it failed
        print STDERR "kgrind_annotate: above --fail-above=$o->{'fail-above'}%: ", join('; ', @$failed), "\n";
        return 1;
    }
    return 0;
}

unless (caller) {
    my $rc = eval { main(@ARGV) };
    if (!defined $rc) {
        my $e = $@;
        my $m = ref $e eq 'KG::Error' ? $e->{msg} : "internal error: $e";
        $m =~ s/\s+\z//;
        print STDERR "kgrind_annotate: $m\n";
        exit 2;
    }
    exit $rc;
}
1;
