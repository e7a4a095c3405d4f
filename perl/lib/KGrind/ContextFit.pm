package KGrind::ContextFit;
# The text table's contexts fitted into a column: deep contexts (k = inf)
# are chains of 15-60 functions whose first ones every row repeats.  When
# a row would be wider than its column (and some row has at least
# $MIN_ELIDE functions: shorter contexts, k <= 3, are left as they are),
# the part every row starts with is printed once above the table and each
# row starts "... > " instead; a row still too wide (at least $MIN_ELIDE
# functions) leaves callers out in its middle, each run shown as "..N.."
# (N functions left out), keeping its innermost functions and, for each
# other row it would otherwise look the same as, the function where the
# two part (fit_contexts).  As gaps say how many functions they hide, two
# rows that keep the same functions at the same places are the same
# context: rows stay apart.
use strict;
use warnings;
use Exporter 'import';
use List::Util ();

our @EXPORT_OK = qw(fit_contexts wrap_chain may_fold);

my $SEP = ' > ';
my $MIN_ELIDE = 5;    # a shorter row (k <= 3) keeps all its functions

# Whether paths of at most $levels functions (undef: any number) can be
# fitted otherwise than as they are: else fit_contexts leaves them whole.
sub may_fold { my ($levels) = @_; !defined $levels || $levels >= $MIN_ELIDE }

# Paths (each an array of names, outermost first) as strings fitted in
# $width columns (0: as they are), and the lines to print above them
# (the common part), wrapped at $line columns: none when the paths are
# shown as they are.
sub fit_contexts {
    my ($paths, $width, $line) = @_;
    my @plain = map { join($SEP, @$_) } @$paths;
    return (\@plain, []) if !$width || !grep { length > $width } @plain
                            or !grep { @$_ >= $MIN_ELIDE } @$paths;
    # the common part: every row keeps at least its last function
    my $common = common_prefix($paths);
    my @rest = map { [@$_[$common .. $#$_]] } @$paths;
    my $lead = $common ? "...$SEP" : '';
    my @shown;
    for my $r (0 .. $#rest) {
        my $s = $lead . join($SEP, @{$rest[$r]});
        push @shown, length $s > $width && @{$paths->[$r]} >= $MIN_ELIDE ? undef : $s;
    }
    my @long = grep { !defined $shown[$_] } 0 .. $#shown;
    if (@long) {
        my $keep = needed_positions(\@rest);
        for my $r (@long) {
            $shown[$r] = $lead . elided($rest[$r], $keep->[$r], $width - length $lead);
        }
    }
    my @note;
    push @note, wrap_chain('Every context below starts with: ', [@{$paths->[0]}[0 .. $common - 1]], $line)
        if $common;
    push @note, join('; ', ($common ? "'...' in a row: that part" : ()),
                     (@long ? '..N..: N callers left out (--width=0: whole contexts)' : ())) if $common || @long;
    return (\@shown, \@note);
}

# The number of functions every path starts with, less than the shortest
# path's.
sub common_prefix {
    my ($paths) = @_;
    my $n = List::Util::min(map { scalar @$_ } @$paths) - 1;
    my $first = $paths->[0];
    for my $i (0 .. $n - 1) {
        for my $p (@$paths) { return $i if $p->[$i] ne $first->[$i] }
    }
    return $n < 0 ? 0 : $n;
}

# Per row, the positions it must keep to stay apart from the others: its
# last, and where it parts from each row that ends in the same function at
# the same depth (the rows that would otherwise be shown alike).
sub needed_positions {
    my ($rows) = @_;
    my %alike;
    push @{$alike{scalar(@{$rows->[$_]}) . "\0" . $rows->[$_][-1]}}, $_ for 0 .. $#$rows;
    my @keep = map { { $#$_ => 1 } } @$rows;
    for my $group (grep { @$_ > 1 } values %alike) {
        for my $r (@$group) {
            for my $s (@$group) {
                next if $s == $r;
                my ($a, $b) = ($rows->[$r], $rows->[$s]);
                my $i = 0;
                $i++ while $i < $#$a && $a->[$i] eq $b->[$i];
                $keep[$r]{$i} = 1;
            }
        }
    }
    return \@keep;
}

# A row with the positions $keep, then as many of its innermost functions
# as fit in $width (and its first), the others as "..N..".
sub elided {
    my ($row, $keep, $width) = @_;
    my %k = %$keep;
    my $s = render($row, \%k);
    # the innermost callers, and after the first of them the outermost
    # function (where the row leaves the common part)
    for my $i (grep { !$k{$_} } $#$row - 1, 0, reverse 1 .. $#$row - 2) {
        next if $i < 0 || $k{$i};
        my $t = render($row, { %k, $i => 1 });
        last if length $t > $width;
        ($s, $k{$i}) = ($t, 1);
    }
    return $s;
}

sub render {
    my ($row, $keep) = @_;
    my (@parts, $gap);
    for my $i (0 .. $#$row) {
        if ($keep->{$i}) {
            push @parts, "..$gap.." if $gap;
            push @parts, $row->[$i];
            $gap = 0;
        } else { $gap++ }
    }
    return join($SEP, @parts);
}

# "$head" and a chain of names joined by " > ", wrapped at $width
# columns (0: one line), the continuation lines indented.
sub wrap_chain {
    my ($head, $names, $width) = @_;
    my @lines = ($head . $names->[0]);
    for my $n (@$names[1 .. $#$names]) {
        if ($width && length($lines[-1]) + length($SEP) + length($n) > $width) { push @lines, "  > $n" }
        else { $lines[-1] .= "$SEP$n" }
    }
    return @lines;
}

1;
