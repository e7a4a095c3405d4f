package KGrind::Columns;
# Forests are packed columns (strings read with vec and unpack): par (the
# parent + 1, 0 for a root; 32 bits), fn and depth (32 bits), calls, excl
# and incl (64 bits), n nodes; a perl array is 32 bytes a node and column,
# a packed column 4 or 8 (a 2.9 M-node forest: 555 MB against 104 MB).
use strict;
use warnings;
no warnings "portable";    # 64-bit pack
use Exporter 'import';
use Digest::SHA ();

our @EXPORT = qw(col pack_columns chunks columns_digest @KEEP);

# Big temporary hashes are left to the end of the process: freeing a hash of
# 10^6 keys takes the best part of a second.
our @KEEP;

my %COLUMN = (par => 'N', fn => 'N', depth => 'N', calls => 'Q>', excl => 'Q>', incl => 'Q>');

# One column unpacked into an array (par: -1 for a root), for the code
# that is not on the path of large forests.
sub col {
    my ($F, $name) = @_;
    my $c = $F->{$name};
    return $c if ref $c;
    return [map { $_ - 1 } unpack('N*', $c)] if $name eq 'par';
    return [unpack("$COLUMN{$name}*", $c)];
}

# Packs arrays into a forest's columns (par: -1 for a root).
sub pack_columns {
    my ($F, %cols) = @_;
    for my $name (keys %cols) {
        my $a = $cols{$name};
        $F->{$name} = $name eq 'par' ? pack('N*', map { $_ + 1 } @$a) : pack("$COLUMN{$name}*", @$a);
    }
    return $F;
}

# A digest of packed columns (a node count first): forests whose digests
# are equal are the same, column for column.
sub columns_digest { Digest::SHA::sha256(join('', map { pack('Q>', length) . $_ } @_)) }

# The nodes of a forest in chunks: calls $each->(first node, [values of each
# asked column]) with at most 65,536 nodes a call (bounded memory, perl's
# array speed).
sub chunks {
    my ($F, $names, $each) = @_;
    my $n = $F->{n};
    for (my $s = 0; $s < $n; $s += 65536) {
        my $len = $n - $s < 65536 ? $n - $s : 65536;
        $each->($s, map { my $w = $COLUMN{$_} eq 'N' ? 4 : 8;
                          [unpack("$COLUMN{$_}*", substr($F->{$_}, $w * $s, $w * $len))] } @$names);
    }
}

1;
