package KGrind::Names;
# --names=short: a demangled C++ name without its parameter list, return type
# and trailing qualifiers, each template argument list collapsed to "<...>"
# (as KCachegrind's "Shorten Templates"):
#   std::vector<int, std::allocator<int> >::push_back(int const&)  ->  std::vector<...>::push_back
#   Shape::area() const -> Shape::area      operator<<(std::ostream&, P const&) -> operator<<
#   f(int) [libx.so] -> f [libx.so]         (namesakes stay apart)
# Names without brackets (C functions, __root__, 0x401136) are unchanged.
# A short name stays that short only while no other function of the
# profiles has it (display_name): overloads get their parameter lists,
# instances of a template their arguments, as far as it takes to tell
# them apart (unique_names).
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use List::Util ();
use KGrind::Labels;

our @EXPORT_OK = qw(short_name display_name unique_names inlined_level);

my %CLOSE = ('(' => ')', '<' => '>', '[' => ']', '{' => '}');

# "operator" and its symbol, one atom: its brackets are not brackets.
my $OPERATOR = qr{operator(?:\s*(?:new|delete)(?:\[\])?|\(\)|\[\]|->\*?|<=>|<<=?|>>=?|&&|\|\||\+\+|--
                             |[-+*/%^&|~!=<>,]=?|\s+[^()<]+)}x;

# A run of characters that are neither brackets nor the start of an
# operator: taken in one step.
my $PLAIN = qr/(?:[^()<>\[\]{}o]|o(?!perator))+/;

# The operator name starting at $i, if one does (after a start of name:
# the string's start, a space or one of $after).
sub operator_at {
    my ($n, $i, $after) = @_;
    return undef unless substr($n, $i, 8) eq 'operator';
    return undef if $i > 0 && index(" $after", substr($n, $i - 1, 1)) < 0;
    return substr($n, $i) =~ /\A($OPERATOR)/ ? $1 : undef;
}

# The name as atoms: operators, bracketed groups (with what they hold) and
# single characters.  undef when the brackets do not balance.
sub atoms {
    my ($n) = @_;
    my @atoms;
    my $i = 0;
    while ($i < length $n) {
        pos($n) = $i;
        if ($n =~ /\G($PLAIN)/gc) { push @atoms, split //, $1; $i = pos($n); next }
        if (my $op = operator_at($n, $i, ':~')) {
            push @atoms, $op;
            $i += length $op;
            next;
        }
        my $c = substr($n, $i, 1);
        unless ($CLOSE{$c}) { push @atoms, $c; $i++; next }
        my $end = group_end($n, $i);
        return undef unless defined $end;
        push @atoms, substr($n, $i, $end - $i + 1);
        $i = $end + 1;
    }
    return \@atoms;
}

# Where the group opened at $i closes (operators inside are skipped).
sub group_end {
    my ($n, $i) = @_;
    my @open;
    while ($i < length $n) {
        pos($n) = $i;
        if (@open && $n =~ /\G$PLAIN/gc) { $i = pos($n); next }
        if (@open && (my $op = operator_at($n, $i, ':~(<,'))) {
            $i += length $op;
            next;
        }
        my $c = substr($n, $i, 1);
        if ($CLOSE{$c}) { push @open, $CLOSE{$c} }
        elsif ($c =~ /[)>\]}]/) {
            return undef unless @open && $open[-1] eq $c;
            pop @open;
            return $i unless @open;
        }
        $i++;
    }
    return undef;
}

# What follows a name and tells namesakes apart is kept: the object
# (" [libx.so]", docs/output-format.md), a clone (" [clone .cold]"), the
# n-th namesake of an older profile ("#2").
my $QUALIFIERS = qr/(?:\s\[[^\[\]]*\]|#\d+)+\z/;

sub short_name { shorten($_[0], 0, 0) }

# The name with the template argument lists nested deeper than $depth
# collapsed to "<...>" (0: every one), its return type left out, and its
# parameter list and trailing qualifiers (const, &&) left out unless
# $params.
sub shorten {
    my ($n, $depth, $params) = @_;
    return $n unless $n =~ /[(<]/;
    if ($n =~ /$QUALIFIERS/ && $-[0] > 0) {
        my $start = $-[0];
        return shorten(substr($n, 0, $start), $depth, $params) . substr($n, $start);
    }
    my $a = atoms($n) or return $n;
    unless ($params) {
        # trailing qualifiers, then the parameter list
        my $tail = join('', @$a[($#$a > 40 ? $#$a - 40 : 0) .. $#$a]);
        while (@$a && $tail =~ /(?:\s+(?:const|volatile|noexcept)|\s*&&?)\z/) {
            my $q = length $&;
            substr($tail, -$q) = '';
            $q -= length pop @$a while $q > 0;
        }
        pop @$a if @$a > 1 && $a->[-1] =~ /\A\(/ && $a->[-2] !~ /\A\s\z/;
    }
    # the return type of a template function: up to the last top-level space
    # before the name (a space inside the qualifiers after it is not one)
    my $end = $#$a;
    if ($params) { $end-- while $end > 0 && $a->[$end] !~ /\A\(/; $end = $#$a if $a->[$end] !~ /\A\(/ }
    my $last_space;
    for (my $i = $end; $i >= 0; $i--) {
        next unless $a->[$i] eq ' ' && ($a->[$i + 1] // '<') !~ /\A</;
        $last_space = $i;
        last;
    }
    splice(@$a, 0, $last_space + 1) if defined $last_space && $last_space < $end;
    my $s = join('', map { /\A[<(]/ ? collapse($_, $depth) : $_ } @$a);
    return $s eq '' ? $n : $s;
}

# A bracketed group "<...>" or "(...)" with the template argument lists in
# it nested deeper than $depth collapsed.
sub collapse {
    my ($g, $depth) = @_;
    my $open = substr($g, 0, 1);
    return '<...>' if $open eq '<' && $depth == 0;
    my $inner = substr($g, 1, -1);
    my $a = $inner =~ /[(<]/ ? atoms($inner) : undef;
    return $g unless $a;
    my $d = $open eq '<' ? $depth - 1 : $depth;
    return $open . join('', map { /\A[<(]/ ? collapse($_, $d) : $_ } @$a) . substr($g, -1);
}

# Each name of @$names as --names=short shows it: its short name while no
# other name of @$names has it, else the shortest of these that tells the
# names sharing it apart: the parameter lists, then the template arguments
# one level deeper at a time (with and without the parameter lists), then
# the full name.  Returns {name => shown name}.
sub unique_names {
    my ($names) = @_;
    my (%short, %by);
    for my $n (@$names) {
        next if exists $short{$n};
        my $s = $short{$n} = short_name($n);
        push @{$by{$s}}, $n;
    }
    for my $group (grep { @$_ > 1 } values %by) {
        my @g = do { my %seen; grep { !$seen{$_}++ } @$group };
        next if @g < 2;
        my $deepest = List::Util::max(map { tr/<// } @g);
        my @levels = ([0, 1], map { ([$_, 0], [$_, 1]) } 1 .. $deepest);
        my $shown;
        for my $l (@levels) {
            my @s = map { shorten($_, @$l) } @g;
            my %n;
            unless (grep { $n{$_}++ } @s) { $shown = \@s; last }
            last if $l->[1] && !grep { index($_, '<...>') >= 0 } @s;    # deeper shows no more
        }
        $shown //= \@g;
        @short{@g} = @$shown;
    }
    return \%short;
}

# A name as --names asks ($o->{names}: short or full).
# Short names are made unique among every label read (@LNAME), once
# the labels are all known (made again if more were read since).
my ($SHOWN, $SHOWN_FOR) = ({}, 0);
sub display_name {
    my ($o, $n) = @_;
    return $n unless $o->{names} eq 'short';
    ($SHOWN, $SHOWN_FOR) = (unique_names(\@LNAME), scalar @LNAME) if $SHOWN_FOR != @LNAME;
    return $SHOWN->{$n} // short_name($n);
}

# Whether a function's name (docs/output-format.md, "Names") is an inlined
# function's context level (--inline-frames): "g [inlined]", qualified as
# any namesake ("__mmap64 [inlined] [ld-linux-x86-64.so.2]": libc and
# ld.so both inline it). A function without a symbol is named by its
# address and qualified by its object, so "0x1139 [inlined]" is code of an
# object named `inlined`, never a level (an inlined function is named by
# its debug info's name).
sub inlined_level { $_[0] =~ / \[inlined\](?: \[[^\]]*\])*\z/ && $_[0] !~ /\A0x[0-9a-f]+ \[/ }

1;
