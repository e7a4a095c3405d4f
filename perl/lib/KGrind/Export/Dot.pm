package KGrind::Export::Dot;
# --format=dot: the call graph of the k-contexts, for Graphviz.  One node per
# k-context (threads summed), one edge per call edge between contexts (the
# callgrind body's calls= lines: caller context -> callee context) labelled
# with its calls and inclusive Ir.  Pruned: the contexts within --threshold
# and --top by the sort key, each joined to the graph's root through its
# heaviest callers, so the graph is connected.
use strict;
use warnings;

use KGrind::Names ();

# A context's key.  The callgrind body names two functions of the same name
# (mmap of ld.so and of libc) alike, where the k-SF labels say "mmap#2": the
# graph takes them as one.
sub key { join("\0", map { (my $n = $_) =~ s/#\d+\z//; $n } @{$_[0]}) }

sub commify { my $n = reverse shift; $n =~ s/(\d{3})(?=\d)/$1,/g; scalar reverse $n }

sub dq { my $s = shift; $s =~ s/(["\\])/\\$1/g; $s =~ s/\n/\\n/g; "\"$s\"" }

# key -> {name, tooltip, calls, Ir, inclusive}, summed over the threads.  A
# context given with its key, name and tooltip (kgrind_annotate's k = inf
# graph: its paths can be 10^5 deep) needs no path.
sub contexts {
    my ($data) = @_;
    my %ctx;
    for my $t (@{$data->{threads}}) {
        for my $c (@{$t->{contexts}}) {
            my $x = $ctx{$c->{key} // key($c->{path})} //= {
                name => $c->{name} // $c->{path}[-1], tooltip => $c->{tooltip} // join(' > ', @{$c->{path}}),
                calls => 0, Ir => 0, inclusive => 0 };
            $x->{$_} += $c->{$_} for qw(calls Ir);
            $x->{inclusive} += $c->{inclusive_outermost};    # recursion counted once: at most 100 %
        }
    }
    return \%ctx;
}

# The contexts to show: by the sort key until the cumulative share reaches
# the threshold, at most top of them.
sub hottest {
    my ($ctx, $o) = @_;
    my $key = $o->{sort} eq 'inclusive' ? 'inclusive' : $o->{sort};
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
    # shown contexts, then each one's chain of heaviest callers
    my %node;
    for my $k ($data->{shown} ? @{$data->{shown}} : hottest($ctx, $o)) {
        while (defined $k && !$node{$k}) {
            $node{$k} = 1;
            my ($heavy) = sort { $b->{inclusive} <=> $a->{inclusive} || $a->{from_key} cmp $b->{from_key} }
                          @{$in{$k} // []};
            $k = $heavy ? $heavy->{from_key} : undef;
        }
    }
    my %id;
    my @nodes = sort keys %node;
    @id{@nodes} = 0 .. $#nodes;
    my $total = $data->{total} || 1;
    my $name = sub { $o->{names} eq 'short' ? KGrind::Names::short_name($_[0]) : $_[0] };
    my @out = ('digraph kgrind {', '  node [shape=box, style=filled, fontname="Helvetica"];',
               '  edge [fontname="Helvetica", fontsize=10];',
               '  label=' . dq("k-contexts (k=$data->{k}) of " . join(', ', @{$data->{files}})
                   . ": one box per context, arrows from caller to callee with calls and inclusive Ir") . ';');
    for my $k (@nodes) {
        my $c = $ctx->{$k};
        my $share = $c->{Ir} / $total;
        my $col = sprintf('#ff%02x%02x', 255 - int(200 * $share), 255 - int(200 * $share));
        my $label = $name->($c->{name}) . "\nIr " . commify($c->{Ir}) . sprintf(' (%.1f%%)', 100 * $share)
                  . "\nincl " . commify($c->{inclusive}) . sprintf(' (%.1f%%)', 100 * $c->{inclusive} / $total)
                  . "\ncalls " . commify($c->{calls});
        push @out, sprintf('  n%d [label=%s, tooltip=%s, fillcolor="%s"];', $id{$k}, dq($label),
                           dq($c->{tooltip}), $col);
    }
    for my $ek (sort keys %edge) {
        my ($f, $t) = split /\0\0/, $ek;
        next unless $node{$f} && $node{$t};
        my $e = $edge{$ek};
        push @out, sprintf('  n%d -> n%d [label=%s];', $id{$f}, $id{$t},
                           dq(commify($e->{calls}) . "x\n" . commify($e->{inclusive})));
    }
    print $fh join("\n", @out, '}'), "\n";
}

1;
