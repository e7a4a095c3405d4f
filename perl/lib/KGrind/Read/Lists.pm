package KGrind::Read::Lists;
# The node records of versions 1 and 2 (docs/output-format.md): version 1's
# "# ksf-node id parent label calls excl incl" lines, one node a line, and
# version 2's "# ksf-nodes" lines, the forest as nested lists.  The nodes
# go to the thread's buffers ($R->{bpar} ...), packed into its columns by
# flush_nodes; $R is the reader's state (KGrind::Profile).
use strict;
use warnings;
no warnings "portable";    # 64-bit pack
use Exporter 'import';
use KGrind::Error;

our @EXPORT = qw(flush_nodes node_record node_lists);

# The syntax of a version 2 ksf-nodes line's tokens (their order is checked
# by the reader).
my $NODE_TOKEN = qr{[() ]|\d{1,18}(?:\*\d{1,18})?(?:=\d{1,18}(?:/\d{1,18})?)?};

# The buffered nodes packed into the thread's columns.
sub flush_nodes {
    my ($R) = @_;
    my ($T, $bpar, $bfn, $bcal, $bexc, $binc) = @$R{qw(thread bpar bfn bcal bexc binc)};
    return unless @$bpar;
    # a label past 32 bits is no known label (check_forest says so)
    for (@$bfn) { $_ = 0xFFFFFFFF if $_ > 0xFFFFFFFF }
    $T->{par} .= pack('N*', @$bpar);
    $T->{fn} .= pack('N*', @$bfn);
    $T->{calls} .= pack('Q>*', @$bcal);
    $T->{excl} .= pack('Q>*', @$bexc);
    $T->{incl} .= pack('Q>*', @$binc);
    @$bpar = @$bfn = @$bcal = @$bexc = @$binc = ();
}

# A version 1 "# ksf-node" line.
sub node_record {
    my ($R, $l, $ln) = @_;
    my ($file, $version) = @$R{qw(file version)};
    ferr($file, $ln, "ksf-node outside a ksf-thread record") unless $R->{thread};
    ferr($file, $ln, "ksf-node record in a version $version file (version $version has ksf-nodes)") if $version >= 2;
    # split + tr validation: several times faster than a capturing regex
    my (undef, undef, $id, $p, $f, $c, $x, $i, $extra) = split / /, $l;
    if (!defined $i || defined $extra || $i eq '' || index($l, '  ') >= 0
        || "$id$f$c$x$i" =~ tr/0-9//c || "$id $f $c $x $i" =~ /\d{19}/ || $p eq '' || ($p ne '-' && $p =~ tr/0-9//c)) {
        ferr($file, $ln, "malformed ksf-node record: '", printable($l), "'");
    }
    ferr($file, $ln, "ksf-node id $id out of order (expected $R->{nnodes})") if $id != $R->{nnodes};
    ferr($file, $ln, "ksf-node $id: parent $p does not precede it") if $p ne '-' && $p >= $id;
    push @{$R->{bpar}}, $p eq '-' ? 0 : $p + 1;
    push @{$R->{bfn}}, $f;
    push @{$R->{bcal}}, $c;
    push @{$R->{bexc}}, $x;
    push @{$R->{binc}}, $i;
    $R->{nnodes}++;
    flush_nodes($R) if @{$R->{bpar}} >= 65536;
}

# A version 2 "# ksf-nodes" line: the forest as nested lists, nodes
# "label[*calls][=excl[/incl]]", "(" right after a node opens its
# children's list, ")" closes it, siblings are separated by a space; a
# line break counts as a space. The open lists ($R->{open}), the last token
# ($R->{last}: '' at the start, 'node', '(' or ')') and whether a space
# followed it carry over to the next line. The tokens' syntax is checked
# for the whole line at once, their order one by one; labels, roots and
# siblings by check_forest at the thread's end.
sub node_lists {
    my ($R, $l, $ln) = @_;
    my $file = $R->{file};
    my $t = substr($l, 12);
    # tokens removed, nothing may remain (a regex over the whole line
    # would hit Perl's recursion limit on long lines); checked on the
    # line with each number squeezed to one 'd' (a quarter of its length)
    (my $shape = $t) =~ tr/0-9/d/s;
    (my $rest = $shape) =~ s/d(?:\*d)?(?:=d(?:\/d)?)?|[() ]+//g;
    if ($rest ne '' || $t =~ /\d{19}/) {
        my $col = 0;
        $col = pos($t) while $t =~ /\G$NODE_TOKEN/gco;
        $col = $-[0] if $t =~ /\d{19}/ && $-[0] < $col;
        ferr($file, $ln, "malformed ksf-nodes record at column " . (13 + $col) . ": '",
             printable(substr($t, $col)), "'");
    }
    push @{$R->{nline}}, $R->{nnodes}, $ln;
    return if fast_line($R, $t, $shape);
    my ($open, $last, $nnodes) = @$R{qw(open last nnodes)};
    my ($bpar, $bfn, $bcal, $bexc, $binc) = @$R{qw(bpar bfn bcal bexc binc)};
    my $spaced = $last ne '';   # the line break
    my @t = $t =~ /([() ])|(\d+)(?:\*(\d+))?(?:=(\d+)(?:\/(\d+))?)?/g;
    for (my $j = 0; $j < @t; $j += 5) {
        my $m = $t[$j];
        if (!defined $m) {
            ferr($file, $ln, "ksf-nodes: missing space before node '$t[$j + 1]'")
                unless $spaced || $last eq '' || $last eq '(';
            push @$bpar, @$open ? $open->[-1] + 1 : 0;
            push @$bfn, $t[$j + 1];
            push @$bcal, $t[$j + 2] // 1;
            my $x = $t[$j + 3] // 0;
            push @$bexc, $x;
            push @$binc, $t[$j + 4] // $x;
            $nnodes++;
            ($last, $spaced) = ('node', 0);
        } elsif ($m eq ' ') {
            ferr($file, $ln, "ksf-nodes: misplaced space") if $spaced || $last eq '(' || $last eq '';
            $spaced = 1;
        } elsif ($m eq '(') {
            ferr($file, $ln, "ksf-nodes: '(' does not follow a node") unless $last eq 'node' && !$spaced;
            push @$open, $nnodes - 1;
            ($last, $spaced) = ('(', 0);
        } else {
            ferr($file, $ln, "ksf-nodes: ')' without '('") unless @$open;
            ferr($file, $ln, "ksf-nodes: empty list '()'") if $last eq '(';
            pop @$open;
            ($last, $spaced) = (')', 0);
        }
    }
    @$R{qw(last nnodes)} = ($last, $nnodes);
    ferr($file, $ln, "ksf-nodes: record ends with a space") if $spaced;
    flush_nodes($R) if @$bpar >= 65536;
}

# A well-formed version 2 line, read with bulk operations: each run of
# siblings (the text between two parentheses) gets its parent at once, the
# counters of all nodes are taken by one match and packed at once.  A line
# whose parentheses do not fit the lists open is left to the token loop of
# node_lists, which names the error; so are lines with two separators in a
# row that the syntax forbids.  Returns whether it read the line.
sub fast_line {
    my ($R, $t, $shape) = @_;
    my ($open, $T) = @$R{qw(open thread)};
    (my $s = $shape) =~ tr/*=\/d/n/s;    # a node is an 'n'
    return 0 if $t eq '' || $s =~ /[ (][ ()]|\)[n(]|\A[ (]| \z/;    # separators the syntax forbids
    my @seg = split /([()])/, $s, -1;    # runs and parentheses, alternating
    return 0 if $seg[0] eq '' && $R->{last} eq '(';    # "()" across a line break
    my $depth = @$open;    # a ')' without '(' is the token loop's error
    for (my $i = 1; $i < @seg; $i += 2) { return 0 if $seg[$i] eq ')' && --$depth < 0; $depth++ if $seg[$i] eq '(' }
    flush_nodes($R) if @{$R->{bfn}};    # the token loop's nodes first
    my ($id, $top, @par) = ($R->{nnodes}, @$open ? $open->[-1] + 1 : 0);    # next node, parent + 1
    for (my $i = 0; $i < @seg; $i += 2) {
        my $run = $seg[$i];
        if ($run ne '') {
            my $k = $run =~ tr/n//;
            push @par, ($top) x $k;
            $id += $k;
        }
        last if $i + 1 == @seg;
        if ($seg[$i + 1] eq '(') { push @$open, $id - 1; $top = $id }
        else { pop @$open; $top = @$open ? $open->[-1] + 1 : 0 }
    }
    my @f = $t =~ /(\d+)(?:\*(\d+))?(?:=(\d+)(?:\/(\d+))?)?/g;    # label, calls, excl, incl
    for (my $j = 0; $j < @f; $j += 4) { $f[$j + 1] //= 1; $f[$j + 3] //= $f[$j + 2] //= 0 }
    my $row = pack('(Q>Q>Q>Q>)*', @f);
    # a label past 32 bits is no known label (check_forest says so)
    $T->{fn} .= pack('N*', map { $_ > 0xFFFFFFFF ? 0xFFFFFFFF : $_ } unpack('(Q> x24)*', $row));
    $T->{par} .= pack('N*', @par);
    $T->{calls} .= join('', unpack('(x8 a8 x16)*', $row));
    $T->{excl} .= join('', unpack('(x16 a8 x8)*', $row));
    $T->{incl} .= join('', unpack('(x24 a8)*', $row));
    $R->{nnodes} = $id;
    my $end = substr($t, -1);
    $R->{last} = $end eq '(' ? '(' : $end eq ')' ? ')' : 'node';
    return 1;
}

1;
