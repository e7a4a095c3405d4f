package KGrind::Names;
# --names=short: a demangled C++ name without its parameter list, return type
# and trailing qualifiers, each template argument list collapsed to "<...>"
# (as KCachegrind's "Shorten Templates"):
#   std::vector<int, std::allocator<int> >::push_back(int const&)  ->  std::vector<...>::push_back
#   Shape::area() const -> Shape::area      operator<<(std::ostream&, P const&) -> operator<<
#   f(int) [libx.so] -> f [libx.so]         (namesakes stay apart)
# Names without brackets (C functions, __root__, 0x401136) are unchanged.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';

our @EXPORT_OK = qw(short_name display_name);

my %CLOSE = ('(' => ')', '<' => '>', '[' => ']', '{' => '}');

# "operator" and its symbol, one atom: its brackets are not brackets.
my $OPERATOR = qr{operator(?:\s*(?:new|delete)(?:\[\])?|\(\)|\[\]|->\*?|<=>|<<=?|>>=?|&&|\|\||\+\+|--
                             |[-+*/%^&|~!=<>,]=?|\s+[^()<]+)}x;

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

sub short_name {
    my ($n) = @_;
    return $n unless $n =~ /[(<]/;
    if ($n =~ /$QUALIFIERS/ && $-[0] > 0) {
        my $start = $-[0];
        return short_name(substr($n, 0, $start)) . substr($n, $start);
    }
    my $a = atoms($n) or return $n;
    # trailing qualifiers, then the parameter list
    while (@$a && (join('', @$a) =~ /(?:\s+(?:const|volatile|noexcept)|\s*&&?)\z/)) {
        my $q = length $&;
        $q -= length pop @$a while $q > 0;
    }
    pop @$a if @$a > 1 && $a->[-1] =~ /\A\(/ && $a->[-2] !~ /\A\s\z/;
    # the return type of a template function: up to the last top-level space
    my ($last_space) = grep { $a->[$_] eq " " && ($a->[$_ + 1] // "<") !~ /\A</ } reverse 0 .. $#$a;
    splice(@$a, 0, $last_space + 1) if defined $last_space && $last_space < $#$a;
    my $s = join('', map { /\A</ ? '<...>' : $_ } @$a);
    return $s eq '' ? $n : $s;
}

# A name as --names asks ($o->{names}: short or full).
sub display_name { my ($o, $n) = @_; $o->{names} eq 'short' ? short_name($n) : $n }

1;
