package KGrind::Format;
# The formatting every output shares: numbers with thousands separators,
# shares, names made valid UTF-8, and strings quoted for JSON and DOT.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';

our @EXPORT = qw(commify pct utf8_clean js dq frame_name);

sub commify {
    return "$_[0]" if length $_[0] <= 3;    # no comma (most counts of small forests)
    my $n = reverse shift;
    $n =~ s/(\d{3})(?=\d)/$1,/g;
    scalar reverse $n;
}

sub pct { my ($a, $b) = @_; $b ? sprintf('%.2f%%', 100 * $a / $b) : '-' }

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

# A string as a JSON string: UTF-8 (utf8_clean), quotes, backslashes and
# control characters escaped.
sub js {
    my $s = utf8_clean(shift);
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/([\x00-\x1f\x7f])/sprintf('\\u%04x', ord $1)/ge;
    return "\"$s\"";
}

# A string as a DOT string, as it is: the callers whose strings may hold
# bytes that are not UTF-8 pass them through utf8_clean first.
sub dq { my $s = shift; $s =~ s/(["\\])/\\$1/g; $s =~ s/\n/\\n/g; "\"$s\"" }

# A tree node's name: function names get "()" (thesis style) unless they
# have a parameter list (C++: "Shape::area() const", "f(int) [libx.so]");
# block names ({foo+12 at prog4.c:14} and __root__, $blocks) are printed
# as they are.
sub frame_name {
    my ($n, $blocks) = @_;
    $blocks || $n =~ /\)(?:\s+(?:const|volatile|noexcept)|\s*&&?)*(?:\s\[[^\[\]]*\]|#\d+)*\z/ ? $n : "$n()";
}

1;
