package KGrind::Export::Diff;
# --diff BASE NEW: per k-context deltas of calls, exclusive and inclusive Ir
# (of the outermost activations, KGrind::Inclusive) between two models
# (each side's contexts summed over its threads, keyed by full names), as a
# text table, JSON, or a differential flame graph (folded stacks with two
# counts: "a;b;c <base Ir> <new Ir>", what flamegraph.pl's difffolded.pl
# writes).  With --event (an event of the records or a derived one), each
# context's count of it is compared too, and --fail-above applies to it;
# with --event=incl:<event> its inclusive count (of the outermost
# activations, as inclusive Ir), --fail-above's total the event's.
# compare() builds the diff, write() prints it.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use JSON::PP ();
use KGrind::Error;
use KGrind::Labels;
use KGrind::Profile qw(refuse_other_programs);
use KGrind::Model qw(build_model contexts_model);
use KGrind::Names qw(display_name);
use KGrind::Format qw(commify);
use KGrind::Output qw(written);

my @VALUES = qw(calls Ir inclusive);

# The values compared: calls, Ir, inclusive and the --event's.
sub values_of { my ($o) = @_; (@VALUES, event_of($o) // ()) }
# The --event beyond Ir, or undef.
sub event_of { my ($o) = @_; defined $o->{event} && $o->{event} ne 'Ir' ? $o->{event} : undef }

# --diff BASE... --vs NEW...: each side read and joined as usual, at the
# smaller of their k unless --k says; contexts keyed by full names.
# Returns the diff as written, and why --fail-above fails ([] if it does not).
sub run {
    my ($o) = @_;
    my %side = map { ($_ => { %$o, profiles => $o->{$_}, names => 'full', limited => 0 }) } qw(base new);
    my %S = map { ($_ => build_model($side{$_})) } qw(base new);
    if (!defined $o->{k} && $S{base}{kk} != $S{new}{kk}) {
        my ($low, $high) = sort { $S{$a}{kk} == $INF ? 1 : $S{$b}{kk} == $INF ? -1 : $S{$a}{kk} <=> $S{$b}{kk} } qw(base new);
        $side{$high}{k} = kstr($S{$low}{kk});
        $S{$high} = build_model($side{$high});
    }
    fail("--diff: function-mode profiles only") if $S{base}{blockmode} || $S{new}{blockmode};
    refuse_other_programs('compared', $S{base}{P}[0], $S{new}{P}[0]) unless $o->{force};
    my $d = compare(contexts_model($side{base}, $S{base}), contexts_model($side{new}, $S{new}), $o);
    return (written(\&write, $d, $o), $d->{failed} // []);
}
# the model's field of each value: inclusive Ir of the outermost
# activations, as the text report (recursion counted once, at most 100 %)
my %FIELD = (calls => 'calls', Ir => 'Ir', inclusive => 'inclusive_outermost', 'incl:Ir' => 'inclusive_outermost');

# path key -> {calls, Ir, inclusive (and the --event)} summed over the
# threads; and the totals (the event's: its exclusive count over every
# context, for incl:<event> too).
sub side_contexts {
    my ($model, $o) = @_;
    my $e = event_of($o);
    my $ex = $e && $e =~ s/^incl://r;
    my @values = values_of($o);
    my (%ctx, %total);
    for my $t (@{$model->{threads}}) {
        for my $c (@{$t->{contexts}}) {
            my $x = $ctx{join("\0", @{$c->{path}})} //= { map { ($_ => 0) } @values };
            $x->{$_} += $c->{$FIELD{$_} // $_} for @values;
            $total{calls} += $c->{calls};
            $total{$e} += $c->{$ex} if $e && $ex ne 'Ir';
        }
        $total{Ir} += $t->{Ir};
        $total{$e} += $t->{Ir} if $e && $ex eq 'Ir';
    }
    $total{$_} //= 0 for 'calls', 'Ir', $e // ();
    return (\%ctx, \%total);
}

# With --normalize the new side is scaled to the base's totals (calls to
# the base's calls, Ir to its Ir), rounded: deltas then show shifts of
# cost between contexts, not the change of the whole.
sub scaled {
    my ($ctx, $total, $to, $o) = @_;
    my %f = map { ($_ => $total->{$_} ? $to->{$_} / $total->{$_} : 1) } grep { $_ ne 'inclusive' } values_of($o);
    $f{inclusive} = $f{Ir};
    my %out;
    for my $key (keys %$ctx) {
        $out{$key} = { map { ($_ => int($ctx->{$key}{$_} * $f{$_} + 0.5)) } values_of($o) };
    }
    return (\%out, { %$to });
}

sub pct_of { my ($d, $base) = @_; $base ? 100 * $d / $base : undef }

sub compare {
    my ($base, $new, $o) = @_;
    my ($bctx, $btot) = side_contexts($base, $o);
    my ($nctx, $ntot) = side_contexts($new, $o);
    my $raw_new_total = { %$ntot };
    ($nctx, $ntot) = scaled($nctx, $ntot, $btot, $o) if $o->{normalize};
    my @values = values_of($o);
    my $zero = { map { ($_ => 0) } @values };
    my (@rows, %count);
    my %keys = map { ($_ => 1) } keys %$bctx, keys %$nctx;
    for my $key (keys %keys) {
        my ($b, $n) = ($bctx->{$key} // $zero, $nctx->{$key} // $zero);
        my %delta = map { ($_ => $n->{$_} - $b->{$_}) } @values;
        my $status = !$bctx->{$key} ? 'new' : !$nctx->{$key} ? 'vanished'
                   : (grep { $delta{$_} } @values) ? 'changed' : 'same';
        $count{$status}++;
        push @rows, { path => [split /\0/, $key], status => $status, base => $b, new => $n,
                      delta => \%delta };
    }
    # with --event, by its change unless --sort says otherwise
    my $sort = $o->{sort} eq 'Ir' && event_of($o) ? event_of($o) : $o->{sort};
    @rows = sort { abs($b->{delta}{$sort}) <=> abs($a->{delta}{$sort})
                   || join("\0", @{$a->{path}}) cmp join("\0", @{$b->{path}}) } @rows;
    my %d = (k => $new->{k}, sort => $sort, event => event_of($o), normalized => $o->{normalize} ? 1 : 0, rows => \@rows,
             count => \%count, base => { files => $base->{files}, total => $btot },
             new => { files => $new->{files}, total => $ntot, measured_total => $raw_new_total });
    $d{failed} = regressions(\%d, $o->{'fail-above'}) if defined $o->{'fail-above'};
    return \%d;
}

# --fail-above=PCT: the total Ir (or --event) grew by more than PCT %, or a
# context's exclusive count by more than PCT % of the base's total (a share
# of the whole program, so that a tiny context doubling does not fail a CI
# run).
sub regressions {
    my ($d, $pct) = @_;
    my $e = $d->{event} // 'Ir';
    my @why;
    my $bt = $d->{base}{total}{$e};
    my $growth = pct_of($d->{new}{total}{$e} - $bt, $bt);
    push @why, sprintf('total %s %+.2f%%', $e =~ s/^incl://r, $growth) if defined $growth && $growth > $pct;
    my @ctx = grep { my $p = pct_of($_->{delta}{$e}, $bt); defined $p && $p > $pct } @{$d->{rows}};
    push @why, sprintf('%d context(s)%s grew by more than %s%% of the base total %s, first %s %+.2f%%',
                       scalar(@ctx), $e =~ /^incl:/ ? " ($e)" : '', $pct, $e =~ s/^incl://r, join(' > ', @{$ctx[0]{path}}), pct_of($ctx[0]{delta}{$e}, $bt))
        if @ctx;
    return \@why;
}

sub shown { grep { $_->{status} ne 'same' } @{$_[0]{rows}} }

sub write {
    my ($d, $fh, $o) = @_;
    return write_folded($d, $fh) if $o->{format} eq 'folded';
    return write_json($d, $fh) if $o->{format} eq 'json';
    return write_text($d, $fh, $o);
}

sub write_folded {
    my ($d, $fh) = @_;
    my $e = $d->{event} // 'Ir';
    for my $r (sort { join("\0", @{$a->{path}}) cmp join("\0", @{$b->{path}}) } @{$d->{rows}}) {
        next unless $r->{base}{$e} || $r->{new}{$e};
        print $fh join(';', @{$r->{path}}), " $r->{base}{$e} $r->{new}{$e}\n";
    }
}

sub write_json {
    my ($d, $fh) = @_;
    my $side = sub { my $s = $d->{$_[0]}; { files => $s->{files}, total => $s->{total} } };
    my %out = (version => 1, tool => 'kgrind', diff => JSON::PP::true, k => $d->{k}, sort => $d->{sort},
               normalized => $d->{normalized} ? JSON::PP::true : JSON::PP::false,
               base => $side->('base'), new => $side->('new'),
               delta => { map { ($_ => $d->{new}{total}{$_} - $d->{base}{total}{$_}) } 'Ir', 'calls', $d->{event} // () },
               ($d->{event} ? (event => $d->{event}) : ()),
               counts => { map { ($_ => $d->{count}{$_} // 0) } qw(changed new vanished same) },
               contexts => [shown($d)],
               ($d->{failed} ? (failed => $d->{failed}) : ()));
    print $fh JSON::PP->new->canonical->encode(\%out), "\n";
}

sub signed { my $n = shift; ($n > 0 ? '+' : $n < 0 ? '-' : '') . commify(abs $n) }

sub write_text {
    my ($d, $fh, $o) = @_;
    my $rule = '-' x 80;
    my ($bt, $nt) = ($d->{base}{total}{Ir}, $d->{new}{total}{Ir});
    my $e = $d->{event};
    my $g = pct_of($nt - $bt, $bt);
    my $c = $d->{count};
    my @shown = shown($d);
    my $limit = $o->{top} && @shown > $o->{top} ? $o->{top} : scalar @shown;
    print $fh join("\n", $rule,
        'Diff of k-contexts (k=' . $d->{k} . '), sorted by the absolute change of ' . $d->{sort}
            . ($d->{normalized} ? ', NEW normalised to the base totals' : ''),
        $rule,
        sprintf('%-14s%s', 'Base:', join(', ', @{$d->{base}{files}})),
        sprintf('%-14s%s', 'New:', join(', ', @{$d->{new}{files}})),
        sprintf('%-14s%s -> %s (%s%s)', 'Total Ir:', commify($bt), commify($d->{new}{measured_total}{Ir}),
                signed($d->{new}{measured_total}{Ir} - $bt),
                defined $g && !$d->{normalized} ? sprintf(', %+.2f%%', $g) : ''),
        ($e && $e ne 'incl:Ir' ? sprintf('%-14s%s -> %s (%s)', 'Total ' . ($e =~ s/^incl://r) . ':', commify($d->{base}{total}{$e}),
                      commify($d->{new}{measured_total}{$e}),
                      signed($d->{new}{measured_total}{$e} - $d->{base}{total}{$e})) : ()),
        sprintf('%-14s%d changed, %d new, %d vanished, %d unchanged', 'Contexts:',
                map { $c->{$_} // 0 } qw(changed new vanished same)),
        ''), "\n";
    unless (@shown) { print $fh "No k-context changed.\n"; return }
    print $fh sprintf("%d of %d changed contexts shown (--top)\n", $limit, scalar @shown) if $limit < @shown;
    # with --event: its delta, base and new columns first
    my $w = $e && length("delta $e") > 13 ? length("delta $e") : 13;
    my $ecols = $e ? "%${w}s %${w}s %${w}s " : '';
    print $fh sprintf("$ecols%13s %9s %13s %13s %13s %10s  %-8s %s\n", ($e ? ("delta $e", "base $e", "new $e") : ()),
                      'delta Ir', '%', 'base Ir', 'new Ir', 'delta incl', 'delta calls', 'status', 'context');
    for my $r (@shown[0 .. $limit - 1]) {
        my $p = pct_of($r->{delta}{Ir}, $r->{base}{Ir});
        print $fh sprintf("$ecols%13s %9s %13s %13s %13s %10s  %-8s %s\n",
                          ($e ? (signed($r->{delta}{$e}), commify($r->{base}{$e}), commify($r->{new}{$e})) : ()),
                          signed($r->{delta}{Ir}),
                          defined $p ? sprintf('%+.1f%%', $p) : '', commify($r->{base}{Ir}), commify($r->{new}{Ir}),
                          signed($r->{delta}{inclusive}), signed($r->{delta}{calls}), $r->{status},
                          join(' > ', map { display_name($o, $_) } @{$r->{path}}));
    }
}

1;
