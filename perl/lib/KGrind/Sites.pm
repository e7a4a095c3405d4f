package KGrind::Sites;
# kgrind_annotate --sites: the line each level of a context was called
# from, read from the callgrind body's calls= lines (calls and inclusive
# Ir per caller context, callee context and call site), summed over the
# profiles given.  The body's contexts have body_k callers.
#
# A level's line (level_lines): the lines of the body's calls from that
# level into the next one within the context's chain (the calls whose
# callee context ends with the context's levels up to the callee).  One
# line: every call at that level was made there.  Several: the profile
# does not say which of them this context's calls went through (its
# callers' lines are not part of a context; a context deeper than the
# body's also cannot tell its own).
#
# The innermost call's sites (innermost_sites): calls and inclusive Ir per
# line, exact when the context has at most body_k + 1 callers (a call's
# chain is its caller's context and the callee), and when its calls are all the body's (one thread, or threads
# joined).  A call the k-SF rolled (a function calling itself, with
# simple recursion rolled) is a calls= line of the context to itself: its
# site is a line of the innermost function.
use strict;
use warnings;
use Exporter 'import';
use KGrind::Labels;
use KGrind::Names qw(short_name);

our @EXPORT_OK = qw(body_k full_caller_names site_index level_lines innermost_sites sited_names);

# The k of the callgrind body's contexts (desc: body contexts; the records'
# k in files that do not say).
sub body_k {
    my ($S) = @_;
    my ($k) = ($S->{P}[0]{desc}{'body contexts'} // '') =~ /^(\d+|inf)\b/;
    return !defined $k ? $S->{K} : $k eq 'inf' ? $INF : $k;
}

# The body names a context's callers short where no other function of the
# body has that short name (docs/output-format.md): short name -> the full
# name, from the functions the body's contexts start with (every caller is
# one: its own context calls).
sub full_caller_names {
    my ($calls) = @_;
    my (%heads, %by_short, %full);
    for my $pair (keys %$calls) { $heads{(split /'/, $_)[0]} = 1 for split /\0/, $pair }
    push @{$by_short{short_name($_)}}, $_ for keys %heads;
    for my $s (keys %by_short) { $full{$s} = $by_short{$s}[0] if @{$by_short{$s}} == 1 }
    $full{$_} = $_ for keys %heads;    # full names stand for themselves
    return \%full;
}

# A name as both the k-SF labels and the body give it: the labels tell
# namesakes apart ("mmap#2"), the body does not.
sub plain { (my $n = $_[0]) =~ s/#\d+\z//; $n }

# The body's calls by their chain's last two functions: "a\0b" ->
# [{caller (its function), path (the call's chain, outermost first: the
# caller's context and the callee), line, calls, incl}], and the body's k.
sub site_index {
    my ($S) = @_;
    my %by;
    for my $P (@{$S->{P}}) {
        my $full = full_caller_names($P->{calls} // {});
        while (my ($pair, $lines) = each %{$P->{call_sites} // {}}) {
            my ($from, $to) = split /\0/, $pair;
            my $caller = plain(base_name($from));
            # the call's chain: the caller's context and the callee (one
            # level more than the callee's context); a rolled call's, the
            # context's own (it goes from the context to itself)
            my $names = sub { my ($head, @callers) = split /'/, $_[0]; (reverse(map { $full->{$_} // $_ } @callers), $head) };
            my @path = $from eq $to ? $names->($to) : ($names->($from), base_name($to));
            next if @path < 2;
            my $list = $by{"$path[-2]\0$path[-1]"} //= [];
            while (my ($at, $v) = each %$lines) {
                my (undef, $line) = split /\0/, $at;
                push @$list, { caller => $caller, path => \@path, line => $line, calls => $v->[0], incl => $v->[1] };
            }
        }
    }
    return { by => \%by, k => body_k($S) };
}

# The body's calls whose activations may lie in the chain $q (names,
# outermost first, at least two): those whose chain ends with $q, and,
# where $q is deeper than the body's chains, those whose chain is a suffix
# of $q.  Exact (no others) when $q has at most body_k + 1 callers.
sub calls_into {
    my ($I, $q) = @_;
    my $list = $I->{by}{plain($q->[-2]) . "\0" . plain($q->[-1])} or return [];
    my @q = map { plain($_) } @$q;
    return [grep {
        my $p = $_->{path};
        my $n = @$p < @q ? @$p : @q;
        my $same = 1;
        for my $i (1 .. $n) { if ($p->[-$i] ne $q[-$i]) { $same = 0; last } }
        $same && (@$p >= @q || $p->[0] ne $ROOT_NAME);
    } @$list];
}

# Each level's line but the last's: [line, ...] per level (several when
# the profile does not tell them apart; none when no call was seen, or
# the calls have no line: __root__'s).
sub level_lines {
    my ($I, $path) = @_;
    # a level's lines depend on its chain's last body_k + 2 names and on
    # whether it is longer: the contexts of a deep tree share them
    my $n = $I->{k} == $INF ? undef : $I->{k} + 2;
    my @out;
    for my $j (0 .. $#$path - 1) {
        my $from = defined $n && $j + 1 >= $n ? $j + 2 - $n : 0;
        my $key = defined $n ? ($from ? '>' : '=') . join("\0", @$path[$from .. $j + 1]) : undef;
        push @out, defined $key && $I->{memo}{$key} || do {
            my %lines;
            my $caller = plain($path->[$j]);
            $lines{$_->{line}} = 1
                for grep { $_->{calls} && $_->{line} && $_->{caller} eq $caller } @{calls_into($I, [@$path[0 .. $j + 1]])};
            my $l = [sort { $a <=> $b } keys %lines];
            $I->{memo}{$key} = $l if defined $key;
            $l;
        };
    }
    return \@out;
}

# $shown (the names of $path as printed) with each level's line(s) but the
# last's: "main:12", "work:44|45".
sub sited_names {
    my ($I, $path, $shown) = @_;
    my $lines = level_lines($I, $path);
    return [(map { @{$lines->[$_]} ? "$shown->[$_]:" . join('|', @{$lines->[$_]}) : $shown->[$_] } 0 .. $#$lines),
            $shown->[-1]];
}

# The innermost call's sites: [{caller, line, calls, incl}] by caller (the
# context's own function for rolled calls) and line, then calls without a
# line (line undef) when $calls (the context's) is more than the lines'
# sum; undef when the body cannot split this context's calls.
sub innermost_sites {
    my ($I, $path, $calls) = @_;
    return [] if @$path < 2;
    my $exact = $I->{k} == $INF || @$path <= $I->{k} + 2;
    my %by;
    for my $e (@{calls_into($I, $path)}) {
        my $s = $by{"$e->{caller}\0$e->{line}"} //= { caller => $e->{caller}, line => $e->{line}, calls => 0, incl => 0 };
        $s->{calls} += $e->{calls};
        $s->{incl} += $e->{incl};
    }
    my @sites = grep { $_->{calls} } sort { ($a->{caller} eq $path->[-1]) <=> ($b->{caller} eq $path->[-1])
                                            || $a->{caller} cmp $b->{caller} || $a->{line} <=> $b->{line} } values %by;
    return undef unless $exact;
    my $sum = 0;
    $sum += $_->{calls} for @sites;
    push @sites, { caller => undef, line => undef, calls => $calls - $sum, incl => undef } if $calls > $sum;
    return \@sites;
}

1;
