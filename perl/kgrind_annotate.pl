#!/usr/bin/perl
# kgrind_annotate: reads kgrind profiles (callgrind format with k-SF records,
# see docs/output-format.md), rebuilds each thread's k-Slab Forest, computes
# the k-Calling Context Forest with inv_k (IHPP thesis 3.3.3, 5.3.3) and shows
# the hottest k-contexts, the forests, annotated sources, or JSON / Graphviz /
# folded stacks / pprof / speedscope.  Core Perl modules only.  See
# docs/annotate.md, and the manual page at the end of this file.
# This file has the options, the dispatch to the outputs and the messages;
# the modules (perl/lib/KGrind) read the profiles (KGrind::Profile), build
# the model every output reads (KGrind::Model) and write each format
# (KGrind::Export::*).
use strict;
use warnings;
use Getopt::Long qw(GetOptionsFromArray :config no_ignore_case bundling no_auto_abbrev);
# The modules: next to the script (perl/lib in the source tree, a link to it
# in the build tree), else where `make install` put them.
use FindBin ();
use lib "$FindBin::RealBin/lib", '@KG_PERL5LIB@';
use KGrind::Error;
use KGrind::Model qw(build_model);
use KGrind::Output qw(out flush_out);

my $VERSION = '@KG_VERSION@';
$KGrind::Model::EXPORTER = "kgrind_annotate\@$VERSION";

# ---------------------------------------------------------------------------
# Options.
# ---------------------------------------------------------------------------
my $USAGE = <<"EOT";
usage: kgrind_annotate [options] kgrind.out.<pid> [more profiles...] [source files...]

By default it prints a header (profiles, command, k, mode, inline frames,
threads, total Ir) and, per thread, a table of its hottest k-contexts: exclusive Ir, its
share, inclusive Ir (recursion counted once), calls, the context (outermost
caller first, short names); at most --top rows, until they hold
--threshold % of the sort key.  Trees (--kccf, --ksf) and annotated
sources (--auto=yes, or source files given) only when asked.  --diff
prints the totals and the changed contexts, largest change first.

  --sort=Ir|calls|inclusive|<event>
                              sort key for contexts and tree children [Ir];
                              an event such as D1mr, or incl:D1mr (inclusive)
                              (text, json)
  --show=<event>,...          the events' columns in the table and next to
                              tree nodes (Ir, D1mr, incl:D1mr, ...) [Ir]
  --event=<event>             folded, speedscope: the stacks' weight; dot: a line
                              and the colour of each box; --tree: the shares
                              shown and pruned by; --diff: compared too
                              (D1mr, CEst, ...; incl:D1mr: inclusive counts,
                              --tree and --diff but folded) [Ir]
  --threshold=<0-100>         show contexts until this cumulative share [99]
  --top=<N>                   show at most N contexts (0: no limit) [40]
  --k=<N>|inf                 show the N-CCF (N <= the recorded k) [recorded k]
  --thread=<tid>|all          select one thread's forest [all]
  --max-threads=<N>|all       text: the tables and trees of at most N threads,
                              those with the most Ir; the header says how
                              many were left out and their Ir [16]
  --join-threads              join all threads' forests into one
  --tree                      print the tree of the hot contexts: outermost
                              caller first, inclusive and exclusive shares
                              (of --event, or the --sort event, else Ir)
  --tree-min=<0-100>          --tree: leave out contexts below this inclusive
                              share of the thread's Ir (or that event) [0.5]
  --sites                     each level of a context with the line it called
                              the next one from (main:12 > foo:30 > bar), and
                              the innermost call's calls per line (text, json;
                              folded, speedscope, dot: frames name:line;
                              pprof: a location per call line;
                              function mode)
  --width=<N>                 fit the table's contexts (function mode) in N
                              columns: the part all rows share printed once,
                              callers in the middle left out (0: whole
                              contexts) [120]
  --ksf                       print the k-Slab Forest (thesis style)
  --kccf                      print the k-Calling Context Forest (thesis style)
  --costs=yes|no              print counts (Ir, or --show's) next to tree nodes [yes]
  --tree-order=sorted|natural sibling order in trees: by the sort key then
                              name, or the order of the file / of inv_k [sorted]
  --auto=yes|no               annotate the source files of the hottest contexts [no]
  --context=<N>               source lines of context around costly lines [8]
  --context-id=<ID>           print the k-context that KGRIND_CURRENT_CONTEXT()
                              or KGRIND_CURRENT_SITE_CONTEXT() returned ID for
                              (kgrind.h), and nothing else
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
  --fail-above=<PCT>          --diff: exit status 1 when the total Ir (or --event), or a
                              context's count (in % of BASE's total), grew by
                              more than PCT % (--event=incl:E: a context's
                              inclusive E, of BASE's total E)
  --force                     join (or --diff) profiles of different programs
  --version, -h/--help
Profiles given together are joined (k-SF join); their k, mode and inline
frames must agree, and their programs (cmd:'s executable by file name,
arguments aside) unless --force.
Arguments ending in a source suffix (.c .cpp .h ...) are source files to annotate.
Exit status: 0 success, 1 --fail-above exceeded, 2 bad usage or bad input.
EOT

sub is_source { $_[0] =~ /\.(?:c|cc|cpp|cxx|c\+\+|C|h|hh|hpp|hxx|H|inl|ipp|s|S|f|f90|F90|rs|go|m|mm)$/ }

sub parse_options {
    my @args = ([], []);
    my @argv = @_;
    my %o = (sort => 'Ir', costs => 'yes', 'tree-order' => 'sorted',
             auto => 'no', context => 8, include => [], format => 'text', thread => 'all',
             'max-threads' => 16);
    my @warn;
    {
        local $SIG{__WARN__} = sub { push @warn, $_[0] };
        # positional arguments in order: --vs starts the NEW side of --diff
        my $ok = GetOptionsFromArray(\@argv, \%o, 'sort=s', 'threshold=s', 'top=s', 'k=s', 'thread=s', 'max-threads=s',
            'join-threads', 'ksf', 'kccf', 'costs=s', 'tree-order=s', 'auto=s', 'context=s',
            'include|I=s@', 'format=s', 'version', 'help|h', 'show-blocks', 'blocks-disasm',
            'names=s', 'callers', 'width=s', 'tree', 'tree-min=s', 'sites', 'context-id=s', 'show=s', 'event=s', 'diff', 'normalize', 'fail-above=s', 'force',
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
    my $given_tree_min = defined $o{'tree-min'};
    $o{top} //= 40;
    $o{threshold} //= 99;
    $o{'show-blocks'} = 1 if $o{'blocks-disasm'};
    my %sorts = (ir => 'Ir', calls => 'calls', inclusive => 'inclusive', incl => 'inclusive');
    # an event's name (D1mr): checked against the profile's events when read
    # an event's inclusive count: incl:<event> (incl:D1mr)
    my $event_re = qr/^(?:incl:)?[A-Za-z]\w*$/;
    $o{sort} = $sorts{lc $o{sort}} // ($o{sort} =~ $event_re ? $o{sort}
        : fail("bad --sort value '$o{sort}' (Ir, calls, inclusive or an event of the profile, e.g. D1mr or incl:D1mr)"));
    $o{show} = [split /,/, $o{show} // 'Ir', -1];
    for my $e (@{$o{show}}) {
        fail("bad --show value '$e' (events of the profile, e.g. --show=Ir,D1mr,incl:D1mr)") unless $e =~ $event_re;
    }
    fail("--show names '$_' twice") for do { my %n; grep { $n{$_}++ == 1 } @{$o{show}} };
    fail("bad --event value '$o{event}' (an event of the profile, e.g. D1mr or incl:D1mr)")
        if defined $o{event} && $o{event} !~ $event_re;
    fail("--event: only with --format=folded, speedscope or dot, --tree, or --diff")
        if defined $o{event} && $o{format} !~ /^(?:folded|speedscope|dot)$/ && !$o{diff} && !$o{tree};
    # an inclusive event where a viewer derives inclusive cost from the
    # stacks' exclusive weights (--diff's differential flame graph too), or a
    # box shows both: one message
    if (defined $o{event} && $o{format} =~ /^(?:folded|speedscope|dot)$/ && $o{event} =~ /^incl:(.*)/) {
        my $e = $1;
        fail("--event=$o{event}: --format=$o{format} "
             . ($o{format} eq 'dot' ? "shows each box's exclusive and inclusive count of --event=$e"
                : 'weighs each stack by its exclusive count, the viewer derives the inclusive one')
             . ": use --event=$e");
    }
    # --diff sorts by Ir, calls, inclusive or its --event
    my $events = ($o{sort} !~ /^(?:Ir|calls|inclusive)$/ && !($o{diff} && $o{sort} eq ($o{event} // '')))
                 || grep { $_ ne 'Ir' } @{$o{show}};
    fail("--show and --sort with events beyond Ir: only with --format=text or json (--diff: --sort=<its --event>)")
        if $events && ($o{format} !~ /^(?:text|json)$/ || $o{diff});
    fail("bad --threshold value '$o{threshold}' (a percentage 0-100)")
        unless $o{threshold} =~ /^\d+(?:\.\d*)?$/ && $o{threshold} <= 100;
    fail("bad --top value '$o{top}' (a non-negative integer)") unless $o{top} =~ /^\d+$/;
    $o{limited} = $given && ($o{top} > 0 || $o{threshold} < 100);    # --top=0 --threshold=100: everything
    fail("bad --context value '$o{context}' (a non-negative integer)") unless $o{context} =~ /^\d+$/;
    $o{width} //= 120;
    fail("bad --width value '$o{width}' (a number of columns, or 0: no limit)") unless $o{width} =~ /^\d+$/;
    $o{'tree-min'} //= 0.5;
    fail("bad --tree-min value '$o{'tree-min'}' (a percentage 0-100)")
        unless $o{'tree-min'} =~ /^\d+(?:\.\d*)?$/ && $o{'tree-min'} <= 100;
    fail("--sites: not with --diff (it compares contexts, whose levels are functions)") if $o{sites} && $o{diff};
    fail("--tree, --tree-min: only with --format=text") if ($o{tree} || $given_tree_min) && $o{format} ne 'text';
    fail("bad --context-id value '$o{'context-id'}' (an id from KGRIND_CURRENT_CONTEXT() or KGRIND_CURRENT_SITE_CONTEXT(), a positive integer)")
        if defined $o{'context-id'} && $o{'context-id'} !~ /^[1-9]\d*$/;
    fail("bad --k value '$o{k}' (a non-negative integer or inf)")
        if defined $o{k} && $o{k} !~ /^(?:\d+|inf)$/;
    fail("bad --thread value '$o{thread}' (a thread id or all)") unless $o{thread} =~ /^(?:\d+|all)$/;
    fail("bad --max-threads value '$o{'max-threads'}' (a positive integer or all)")
        unless $o{'max-threads'} =~ /^(?:[1-9]\d*|all)$/;
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
# The outputs: one module per format, loaded when asked for.
# ---------------------------------------------------------------------------
my %FORMAT = (text => 'KGrind::Export::Text', json => 'KGrind::Export::Json', dot => 'KGrind::Export::Dot',
              folded => 'KGrind::Export::Folded', pprof => 'KGrind::Export::Pprof',
              speedscope => 'KGrind::Export::Speedscope');

sub load_module {
    my ($module) = @_;
    (my $file = "$module.pm") =~ s{::}{/}g;
    eval { require $file; 1 } or fail("cannot load $module (kgrind_annotate's modules are not installed "
                                      . "with it?): " . (split /\n/, $@)[0]);
    return $module;
}

# ---------------------------------------------------------------------------
sub main {
    my $o = parse_options(@_);
    if ($o->{help}) { print $USAGE; return 0 }
    if ($o->{version}) { print "kgrind_annotate $VERSION\n"; return 0 }
    if (defined $o->{'context-id'}) {
        return load_module('KGrind::ContextId')->can('print_context_id')->($o->{'context-id'}, @{$o->{profiles}});
    }
    my ($S, $text, $failed);
    if ($o->{diff}) { ($text, $failed) = load_module('KGrind::Export::Diff')->can('run')->($o) }
    else { $S = build_model($o) }
    # every format is UTF-8: bytes of names that are not (Latin-1) are converted
    KGrind::Output::clean_output(($o->{format} eq 'text' || $o->{format} eq 'folded') && !$o->{diff});
    binmode STDOUT, ':raw';
    local $SIG{PIPE} = 'IGNORE';
    my $written = eval {
        if (defined $text) { out($text) }
        else {
            fail("--format=$o->{format}: function-mode profiles only ($S->{P}[0]{file} has mode $S->{P}[0]{mode})")
                if $S->{blockmode} && $o->{format} =~ /^(?:pprof|speedscope)$/;
            load_module($FORMAT{$o->{format}})->can('show')->($o, $S);
        }
        flush_out();
        1;
    };
    unless ($written) { return 0 if ref $@ eq 'KG::Closed'; die $@ }
    close STDOUT or ($!{EPIPE} ? return 0 : fail("cannot write the output: $!"));
    # stacks of k-contexts: say what they are not (KGrind::Model::finite_k_note),
    # to a user at a terminal (not in the logs of scripts, which read the marker)
    print STDERR 'kgrind_annotate: ', KGrind::Model::finite_k_note(KGrind::Labels::kstr($S->{kk})), "\n"
        if $S && !$S->{blockmode} && $S->{kk} != $KGrind::Labels::INF && $o->{format} =~ /^(?:folded|pprof|speedscope)$/
           && -t STDERR;
    if ($failed && @$failed) {    # --diff --fail-above: the diff is printed, the status says it failed
        print STDERR "kgrind_annotate: above --fail-above=$o->{'fail-above'}%: ", join('; ', @$failed), "\n";
        return 1;
    }
    return 0;
}

# The script's run: main's exit status, a failure as one line on stderr
# (status 2). tests/annotate_server.pl calls it in a forked child.
sub run {
    my $rc = eval { main(@_) };
    if (!defined $rc) {
        my $e = $@;
        my $m = ref $e eq 'KG::Error' ? $e->{msg} : "internal error: $e";
        $m =~ s/\s+\z//;
        print STDERR "kgrind_annotate: $m\n";
        return 2;
    }
    return $rc;
}

exit run(@ARGV) unless caller;
1;

__END__

=head1 NAME

kgrind_annotate - show the k-calling contexts of kgrind profiles

=head1 SYNOPSIS

B<kgrind_annotate> [I<options>] I<kgrind.out.pid> [I<more profiles>...] [I<source files>...]

B<kgrind_annotate> B<--diff> [I<options>] I<BASE> I<NEW>

B<kgrind_annotate> B<--diff> [I<options>] I<BASE>... B<--vs> I<NEW>...

B<kgrind_annotate> B<--context-id>=I<ID> I<kgrind.out.pid>...

=head1 DESCRIPTION

B<kgrind_annotate> reads the profiles that B<valgrind --tool=kgrind> writes
(callgrind's format with k-Slab Forest records), rebuilds each thread's
k-Slab Forest (k-SF), computes the k-Calling Context Forest (k-CCF) and
shows the hottest k-contexts: the calling contexts of at most k callers.

By default it prints a header (profiles, command, k, mode, inline frames,
threads, total Ir) and, per thread, a table of its hottest k-contexts: exclusive Ir, its
share, inclusive Ir (recursion counted once), calls, and the context
(outermost caller first, short names); at most B<--top> rows, until they
hold B<--threshold> % of the sort key.  The trees (B<--kccf>, B<--ksf>)
and annotated sources (B<--auto=yes>, or source files given) are printed
only when asked for.  B<--diff> prints the totals and the changed
contexts, largest change first.

Profiles given together are joined (k-SF join); their k, mode and inline
frames (B<desc: inline frames:>) must agree, and their programs (cmd:'s
executable by file name, arguments aside) unless B<--force> is given.  Arguments ending in a source suffix
(.c .cpp .h ...) are source files to annotate.

=head1 OPTIONS

=over 4

=item B<--sort>=B<Ir>|B<calls>|B<inclusive>|I<event>

The sort key for contexts and tree children [Ir]. An event of a profile
made with B<--cache-sim>, B<--branch-sim>, B<--collect-bus>, B<--collect-data> or
B<--collect-systime> (B<D1mr>,
B<Bcm>, ...) sorts the contexts by their exclusive count of it (text and
JSON); B<incl:>I<event> (B<incl:D1mr>, B<incl:CEst>) by their inclusive
count of it, recursion counted once as in the B<incl Ir> column, the share
column then of the event's total. The trees' siblings are sorted by the
nodes' counts of it (B<incl:>I<event>: their inclusive counts).

=item B<--event>=I<event>

B<--format=folded> and B<speedscope>: the event the stacks weigh (their
exclusive count of it); B<--format=dot>: each box also shows it, and is
coloured by its share of it; B<--diff>: each context's change of it is
shown too, and B<--fail-above> applies to it instead of Ir; B<--tree>:
the shares the tree shows and B<--tree-min> prunes by. Any event of the
records or a derived one (B<CEst>, B<L1m>, B<LLm>, B<Bm>: the manual gives
their formulas) [Ir]. B<incl:>I<event> (B<incl:D1mr>): with B<--diff>,
each context's inclusive count is compared, and B<--fail-above> applies
to it (in % of I<BASE>'s total count of the event); with B<--tree>, the
same tree as I<event> (it shows both shares). Folded (B<--diff>'s too) and speedscope
stacks weigh exclusive counts (the viewer derives inclusive ones) and dot
boxes show both: there B<incl:>I<event> is refused, B<--event>=I<event>
is the one to use.

=item B<--show>=I<event>,...

The events the table shows, in this order [Ir]: B<Ir>, the
events of the profile's k-SF records and the derived ones (B<CEst>, B<L1m>,
B<LLm>, B<Bm>), exclusive counts; B<incl:>I<event> an event's inclusive
count. The trees (B<--ksf>, B<--kccf>) show, next to each node, the
exclusive counts of the events named, then their inclusive counts
(C<[Ir 5, D1mr 2, incl 9, incl:D1mr 3]>).

=item B<--threshold>=I<0-100>

Show contexts until their cumulative share of the sort key reaches this
percentage [99].

=item B<--top>=I<N>

Show at most I<N> contexts (0: no limit) [40].  Given, B<--top> and
B<--threshold> also limit the trees and the machine formats.

=item B<--k>=I<N>|B<inf>

Show the I<N>-CCF (I<N> at most the recorded k) [the recorded k].

=item B<--thread>=I<tid>|B<all>

Select one thread's forest [all].

=item B<--max-threads>=I<N>|B<all>

With B<--format=text>: print the tables and trees of at most I<N> threads,
the I<N> with the most Ir, in thread order [16]. The header names how many
threads were left out and their Ir; annotated sources count every thread's
lines. B<all>: every thread. Machine formats always carry every thread.

=item B<--join-threads>

Join all threads' forests into one.

=item B<--tree>

Print, per thread, the tree of its hot contexts: outermost caller first,
each node a context with its inclusive and exclusive share of the
thread's Ir and its calls; a chain of single callees stays in one column,
siblings are drawn with C<+> and C<|>.  With B<--event>, or B<--sort> by an
event (B<D1mr>, B<incl:D1mr>), the shares are of that event's total, and
siblings are ordered by its inclusive share.

=item B<--tree-min>=I<0-100>

With B<--tree>: leave out the contexts whose inclusive share of the
thread's Ir (or of the tree's event) is below this percentage [0.5].

=item B<--sites>

Function mode (text, B<--tree>, JSON; folded, speedscope and dot name
frames C<name:line> and label arrows with lines; pprof gives a frame's
Location its call line): each level of a context but the last is
printed with the line it called the next level from (C<main:12 E<gt> foo:30
E<gt> bar>), from the callgrind body's calls= lines; several lines
(C<foo:30|31>) when the profile does not tell which one this context's
calls went through. A context whose innermost call came from several
lines gets a row per line under its own (calls and inclusive Ir; a
recursive call rolled into the context is a line of its own function),
when the context has at most one caller more than the body's contexts
(B<--view-k>) and the threads are one or joined. Not with B<--diff>. JSON gives C<lines> and C<sites>.

=item B<--width>=I<N>

Fit the table's contexts (function mode) in I<N> columns [120]: when a row would be
wider, the part every row starts with is printed once above the table
(rows start with C<...>), and a row still too wide leaves out callers in
its middle, shown as C<..>I<N>C<..>, keeping the functions that tell it
from the other rows. 0: whole contexts.

=item B<--ksf>

Print the k-Slab Forest (thesis style): each node's calls, and its
exclusive and inclusive Ir (or B<--show>'s events), the records' counts.

=item B<--kccf>

Print the k-Calling Context Forest (thesis style): a tree per function,
its callers below it; each node's counts (Ir, or B<--show>'s events) are
the sums over the k-SF nodes whose chains pass through it.

=item B<--costs>=B<yes>|B<no>

Print counts (Ir, or B<--show>'s events) next to tree nodes [yes].

=item B<--tree-order>=B<sorted>|B<natural>

Sibling order in trees: by the sort key then name, or the order of the
file / of inv_k [sorted].

=item B<--auto>=B<yes>|B<no>

Annotate the source files of the hottest contexts [no].

=item B<--context>=I<N>

Source lines of context around costly lines [8].

=item B<--context-id>=I<ID>

Print the k-context that KGRIND_CURRENT_CONTEXT() or
KGRIND_CURRENT_SITE_CONTEXT() (kgrind.h) returned I<ID> for, and nothing
else; a site context's callers with the line of their call into the next
level (C<main:12 E<gt> foo:30 E<gt> bar>).

=item B<-I> I<dir>, B<--include>=I<dir>

Add a directory to the source search path.

=item B<--format>=I<FORMAT>

The output format [text]:

=over 4

=item B<text>

The table above (and what B<--ksf>, B<--kccf>, B<--auto>,
B<--show-blocks> ask for).

=item B<json>

Everything: contexts, k-CCF, k-SF (each tree a flat array of nodes in
pre-order with their B<id> and B<parent>, readable at any depth).

=item B<dot>

Graphviz call graph of the hottest contexts (connected).

=item B<folded>

Flame-graph stacks: "a;b;c <exclusive Ir>".

=item B<pprof>

Gzipped profile.proto for B<go tool pprof> (binary; redirect it).

=item B<speedscope>

Speedscope's JSON file format, one profile per thread.

=back

=item B<--show-blocks>

Block modes: the table of all basic blocks.

=item B<--blocks-disasm>

Block modes: B<--show-blocks> with each block's instructions (objdump),
targets named by block.

=item B<--callers>

With B<--format=folded>: the k-CCF as caller stacks
(function;caller;caller's caller... Ir).

=item B<--names>=B<short>|B<full>

Names without parameter lists and template arguments, or as recorded
[short in text and dot, full in the other formats].

=item B<--diff> I<BASE> I<NEW>

Per k-context changes of I<NEW> against I<BASE>.

=item B<--diff> I<BASE>... B<--vs> I<NEW>...

Several profiles a side, each side joined; text, json or folded (two
counts, a differential flame graph); sides summed over their threads.

=item B<--normalize>

With B<--diff>: I<NEW> scaled to I<BASE>'s totals first.

=item B<--fail-above>=I<PCT>

With B<--diff>: exit status 1 when the total Ir, or a context's Ir (in %
of I<BASE>'s total), grew by more than I<PCT> % (with B<--event>, that
event's; B<--event>=B<incl:>I<event>: a context's inclusive count of it).

=item B<--force>

Join (or B<--diff>) profiles of different programs.

=item B<--version>

Print the version and exit.

=item B<-h>, B<--help>

Print the usage and exit.

=back

=head1 EXAMPLES

Profile a program with 2 callers a context, then show its hottest
contexts and its 2-CCF:

    valgrind --tool=kgrind --k=2 ./prog
    kgrind_annotate --kccf kgrind.out.12345

Annotate the sources of the hottest contexts, looking for them in src/:

    kgrind_annotate --auto=yes -I src kgrind.out.12345

A flame graph, and a profile for pprof:

    kgrind_annotate --format=folded kgrind.out.12345 | flamegraph.pl > prog.svg
    kgrind_annotate --format=pprof kgrind.out.12345 > prog.pb.gz

Compare two runs, failing when a context grew by more than 5 % of the
base's total Ir:

    kgrind_annotate --diff --fail-above=5 kgrind.out.base kgrind.out.new

=head1 EXIT STATUS

=over 4

=item B<0>

Success.

=item B<1>

B<--fail-above> exceeded.

=item B<2>

Bad usage or bad input.

=back

=head1 FILES

=over 4

=item F<kgrind.out.>I<pid>

The profiles kgrind writes (B<--kgrind-out-file>); numbered dumps are
F<kgrind.out.>I<pid>F<.>I<n>.

=item F<share/kgrind/perl5/KGrind/>

Its Perl modules, under the installation prefix; a copy next to the
script (F<lib/>) is taken first.

=back

=head1 SEE ALSO

L<valgrind(1)>, L<kgrind_control(1)>, L<callgrind_annotate(1)>;
docs/annotate.md and docs/output-format.md in kgrind's sources.

=cut
