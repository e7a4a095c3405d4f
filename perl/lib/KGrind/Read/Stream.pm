package KGrind::Read::Stream;
# The node records of version 3 (docs/output-format.md): "# ksf-nodes"
# lines of base64, decoded a line at a time with regex, pack and unpack,
# which work in C, so that the per-node Perl left is the tree structure
# (docs/annotate.md, "Reading version 3 records").  $R is the reader's
# state (KGrind::Profile).
use strict;
use warnings;
no warnings "portable";    # 64-bit pack
use Exporter 'import';
use List::Util ();
use MIME::Base64 ();
use KGrind::Error;

our @EXPORT = qw(stream_start node_stream);

# A node's shape decides which integers follow its label, and the last
# byte of a BER integer holds its low 7 bits, so the shapes' last bytes
# give each node's length and an unpack template that reads every node
# into six values: shape, calls & 7, label, calls - 7 (or 0), excl, incl.
my (%SHAPE_FIELDS, @LENGTH_CLASS);
for my $b (0 .. 127) {
    my ($c7, $e, $i) = (($b & 7) == 7, $b & 8, $b & 16);
    $LENGTH_CLASS[!!$c7 + !!$e + !!$i] .= sprintf('\\x%02x', $b);
    # ".0" reads 0; "(w@0w)" reads excl twice (incl = excl); "X%3C" the shape's last byte mod 8
    $SHAPE_FIELDS{chr $b} = 'wX%3Cw' . ($c7 ? 'w' : '.0') . ($e ? ($i ? 'ww' : '(w@0w)') : ($i ? '.0w' : '.0.0'));
}
# the shapes' last bytes of a line's nodes, in the string of the integers' last bytes
my $NODE_SHAPES = qr/(?|([$LENGTH_CLASS[0]]).|([$LENGTH_CLASS[1]])..|([$LENGTH_CLASS[2]])...|([$LENGTH_CLASS[3]])....)/s;

# The unpack template that reads a line's bytes (holding whole BER
# integers) into six values a node, or undef when its last node is cut.
sub node_template {
    my ($bytes) = @_;
    (my $last_bytes = $bytes) =~ tr/\x80-\xff//d;    # one byte an integer
    my $template = join '', @SHAPE_FIELDS{$last_bytes =~ /$NODE_SHAPES/g};
    return ($template =~ tr/w//) - ($template =~ tr/@//) == length $last_bytes ? $template : undef;
}
# Where field f of node i is among a line's values (6 i + f): six lists
# for at least n nodes (made for the most nodes a line had so far; a line
# uses their first n).
our @FIELD_AT = ([]) x 6;
sub field_at {
    my ($n) = @_;
    @FIELD_AT = map { my $f = $_; [map { 6 * $_ + $f } 0 .. $n - 1] } 0 .. 5 if @{$FIELD_AT[0]} < $n;
    return @FIELD_AT;
}

# A line whose last node is cut: the error the node-by-node reading meets
# first (a number too large, a node both opening and closing lists or
# closing more than are open, then the cut node), with $open lists open.
sub stream_error {
    my ($file, $ln, $bytes, $nnodes, $open) = @_;
    my @v = unpack('w*', $bytes);
    ferr($file, $ln, "ksf-nodes: a number above 10^18") if List::Util::max(@v) >= 1e18;
    my $i = 0;
    while ($i < @v) {
        my $shape = $v[$i];
        $i += 2 + (($shape & 7) == 7) + ($shape & 8 ? 1 : 0) + ($shape & 16 ? 1 : 0);
        if ($shape & 32) {
            ferr($file, $ln, "ksf-nodes: node $nnodes both has children and closes lists") if $shape >= 64;
            $open++;
        } elsif ($shape >= 64) {
            my $closes = $shape >> 6;
            ferr($file, $ln, "ksf-nodes: node $nnodes closes $closes lists, $open are open") if $closes > $open;
            $open -= $closes;
        }
        $nnodes++;
    }
    ferr($file, $ln, "ksf-nodes: the line ends inside node " . ($nnodes - 1));
}

# The syntax of a version 2 ksf-nodes line's tokens (their order is checked

# A line's nodes: base64 of whole nodes, each the BER integers "shape
# label [calls - 7] [excl] [incl]" (shape: bits 0-2 the calls, 7 if
# calls - 7 follows; bit 3 excl, bit 4 incl follow; bit 5 the node's
# children follow; shape >> 6 lists close after it). Siblings come in
# increasing order of label; a label is written less the previous
# sibling's (a first child and a tree root as it is). The state carries
# over to the next line: $R->{depth} lists are open, parent_at[d] is the
# parent + 1 of the nodes at depth d (0 for roots), label_at[d] the label
# of the last node at depth d (0 after a list opens: a first child's
# label is written as it is; roots always 0), $R->{opened} whether the
# line's last node opened a list.
sub stream_start { my ($R) = @_; @$R{qw(depth opened parent_at label_at)} = (0, 0, [0], [0]) }

# What a thread's first line left (its columns, the reader's state after
# it), by the line: many threads doing the same work start with the same
# line, often their only one, and decode it once.
my @FIRST_LINE_STATE = qw(par fn depth calls excl incl repeat);

sub node_stream {
    my ($R, $l, $ln) = @_;
    my $T = $R->{thread};
    # a thread's first line is read from the state stream_start made
    return stream_line($R, $l, $ln) if $R->{nnodes} || $R->{depth} || $T->{par} ne '' || defined $T->{repeat};
    if (my $c = $R->{first_lines}{$l}) {
        push @{$R->{nline}}, 0, $ln;
        @$T{@FIRST_LINE_STATE} = @{$c->{T}};
        delete $T->{repeat} unless defined $T->{repeat};
        @$R{qw(depth opened nnodes)} = @$c{qw(depth opened nnodes)};
        @{$R->{parent_at}} = @{$c->{parent_at}};
        @{$R->{label_at}} = @{$c->{label_at}};
        $T->{first_line} = $c;    # for KGrind::Read::Records::thread_end
        return;
    }
    stream_line($R, $l, $ln);
    $T->{first_line} = $R->{first_lines}{$l} = {
        T => [@$T{@FIRST_LINE_STATE}], depth => $R->{depth}, opened => $R->{opened}, nnodes => $R->{nnodes},
        parent_at => [@{$R->{parent_at}}], label_at => [@{$R->{label_at}}] };
}

sub stream_line {
    my ($R, $l, $ln) = @_;
    my ($file, $nnodes, $parent_at, $label_at) = @$R{qw(file nnodes parent_at label_at)};
    my $b64 = substr($l, 12);
    ferr($file, $ln, "malformed ksf-nodes record: not base64: '", printable(substr($b64, 0, 40)), "'")
        if $b64 eq '' || length($b64) % 4 || $b64 !~ m{\A[A-Za-z0-9+/]+={0,2}\z};
    my $bytes = MIME::Base64::decode_base64($b64);
    ferr($file, $ln, "ksf-nodes: the line ends inside a number") if ord(substr($bytes, -1)) >= 128;
    push @{$R->{nline}}, $nnodes, $ln;
    my $template = node_template($bytes);
    stream_error($file, $ln, $bytes, $nnodes, $R->{depth}) unless defined $template;    # a node cut by the line's end
    my @w = unpack($template, $bytes);
    ferr($file, $ln, "ksf-nodes: a number above 10^18") if List::Util::max(@w) >= 1e18;
    my $n = @w / 6;
    my @at = field_at($n);
    my ($shape, $delta, $calls) = map { [@w[@$_[0 .. $n - 1]]] } @at[0, 2, 1];
    for my $i (grep { $w[$_] } @{$at[3]}[0 .. $n - 1]) { $calls->[($i - 3) / 6] += $w[$i] }    # calls = 7 + (calls - 7)
    my (@par, @fn, @dep);
    my ($d, $j, $id) = ($R->{depth}, 0, $nnodes);
    for my $s (@$shape) {
        push @par, $parent_at->[$d];
        push @dep, $d;
        push @fn, $label_at->[$d] += $delta->[$j++];
        if ($s & 32) {
            ferr($file, $ln, "ksf-nodes: node " . ($id + $j - 1) . " both has children and closes lists") if $s >= 64;
            $parent_at->[++$d] = $id + $j;
            $label_at->[$d] = 0;
        } elsif ($s >= 64) {
            ferr($file, $ln, "ksf-nodes: node " . ($id + $j - 1) . " closes " . ($s >> 6) . " lists, $d are open")
                if $s >> 6 > $d;
            $d -= $s >> 6;
            $label_at->[0] = 0 unless $d;
        } elsif (!$d) {
            $label_at->[0] = 0;
        }
    }
    my $T = $R->{thread};
    # the first node repeating its previous sibling's label (a delta of
    # 0 after a sibling: not a root, not a first child), for check_forest
    if (!defined $T->{repeat}) {
        for my $j (grep { !$delta->[$_] && $dep[$_] } 0 .. $n - 1) {
            next if $j ? $shape->[$j - 1] & 32 : $R->{opened};
            $T->{repeat} = $nnodes + $j;
            last;
        }
    }
    @$R{qw(depth opened)} = ($d, $shape->[-1] & 32);
    # a label past 32 bits is no known label (check_forest says so)
    @fn = map { $_ > 0xFFFFFFFF ? 0xFFFFFFFF : $_ } @fn if List::Util::max(@fn) > 0xFFFFFFFF;
    $T->{par} .= pack('N*', @par);
    $T->{fn} .= pack('N*', @fn);
    $T->{depth} .= pack('N*', @dep);
    $T->{calls} .= pack('Q>*', @$calls);
    $T->{excl} .= pack('Q>*', @w[@{$at[4]}[0 .. $n - 1]]);
    $T->{incl} .= pack('Q>*', @w[@{$at[5]}[0 .. $n - 1]]);
    $R->{nnodes} += $n;
}

1;
