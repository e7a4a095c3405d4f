package KGrind::Profile;
# Reading kgrind profiles (docs/output-format.md): the callgrind header and
# body, the k-SF records, and every check that makes a bad file one clear
# error (syntax, ids, forest shape, and the numbers the file states twice).
# Also the error and label conventions the other modules share: fail()
# dies with a KG::Error that kgrind_annotate prints as one line (exit 2);
# labels (function or block names) are interned across all profiles in
# @LNAME.  Core Perl modules only.
use strict;
use warnings;
no warnings "portable";    # 64-bit vec and pack
use Exporter 'import';
use List::Util ();
use MIME::Base64 ();

our @EXPORT = qw(fail ferr label_id @LNAME $ROOT_NAME $ROOT $INF kstr printable base_name @KEEP
                 read_profile check_merge refuse_repeated_files program_of refuse_other_programs col pack_columns
                 chunks table_name body_names);

our $ROOT_NAME = '__root__';
our $INF = -1;    # k = inf

# ---------------------------------------------------------------------------
# Errors: fail() dies with a message; main() prints it and exits 2.
# ---------------------------------------------------------------------------
sub fail { die bless { msg => join('', @_) }, 'KG::Error' }
sub ferr { my ($file, $line, @m) = @_; fail("$file:$line: ", @m) }

# ---------------------------------------------------------------------------
# Labels (function names), interned across all profiles.
# ---------------------------------------------------------------------------
our @LNAME;     # label id -> name
my %LID;        # name -> label id
sub label_id {
    my $n = $_[0];
    my $id = $LID{$n};
    return $id if defined $id;
    push @LNAME, $n;
    return $LID{$n} = $#LNAME;
}
label_id($ROOT_NAME);    # global id 0
our $ROOT = 0;

sub kstr { $_[0] == $INF ? 'inf' : $_[0] }

# ---------------------------------------------------------------------------
# Reading a profile.
# ---------------------------------------------------------------------------

# The function names the callgrind body gives, fn= id -> name, from the
# text before the records (version 3's ksf-fns refers to them).
sub body_names {
    my ($text, $names) = @_;
    $names->{$1} = $2 while $text =~ /^c?fn=\((\d+)\) *([^\r\n]+)/mg;
    return $names;
}

# A ksf-fns entry's function name. Version 3: "\@<id>" is the body's name
# (id) up to its first "'" (the innermost function of that context), and
# "\@\@..." a name beginning with "\@". Returns undef for a reference the
# body does not define.
sub table_name {
    my ($entry, $version, $body) = @_;
    return $entry if $version < 3 || ord($entry) != 64;    # '@'
    return substr($entry, 1) if substr($entry, 1, 1) eq '@';
    return undef unless $entry =~ /^\@(\d{1,9})$/ && defined(my $name = $body->{$1});
    my $q = index($name, "'");
    return $q < 0 ? $name : substr($name, 0, $q);
}
my %NAME_SPACE = (ob => 'ob', cob => 'ob', fl => 'fl', fi => 'fl', fe => 'fl', cfi => 'fl', cfl => 'fl',
                  fn => 'fn', cfn => 'fn', jfi => 'fl', jfn => 'fn');
my %HEADER_KEYS = map { $_ => 1 } qw(version creator pid cmd part thread desc
    positions events summary totals);

# Version 3 ksf-nodes lines are decoded a line at a time with regex, pack
# and unpack, which work in C, so that the per-node Perl left is the tree
# structure (docs/annotate.md, "Reading version 3 records"). A node's
# shape decides which integers follow its label, and the last byte of a
# BER integer holds its low 7 bits, so the shapes' last bytes give each
# node's length and an unpack template that reads every node into six
# values: shape, calls & 7, label, calls - 7 (or 0), excl, incl.
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
# by the reader).
my $NODE_TOKEN = qr{[() ]|\d{1,18}(?:\*\d{1,18})?(?:=\d{1,18}(?:/\d{1,18})?)?};

sub read_profile {
    my ($file, $want_src, $P0) = @_;
    fail("$file: no such file") unless -e $file;
    fail("$file: is a directory, not a profile") if -d $file;
    open(my $fh, '<:raw', $file) or fail("$file: cannot open: $!");
    my %P = (file => $file, mtime => (stat $fh)[9], threads => [], src => {},
             fnline => {}, desc => {});
    my @fnmap;         # file fn id -> global label id
    my @fnname;        # file fn id -> function name (name#n for duplicates)
    my @blkmap;        # block modes: file block label -> global label id
    my @fname;         # block modes: file id -> source path
    my (%blkseen, $labmap, $intra);
    my $in_thread;     # forest being read
    # the thread's nodes, buffered, then packed into its columns (flush_nodes)
    my (@bpar, @bfn, @bcal, @bexc, @binc);
    my ($nnodes, $seen_end, $seen_version, $seen_options) = (0);
    my (%fnseen, $prev_fns);
    my $first = 1;
    my $ln = 0;
    # body state for source annotation
    my (%names);       # 'fl'/'fn' -> id -> name
    my ($cur_fl, $cur_fi, $cur_fn, $cur_thr, $after_calls, $last_line) = ('???', undef, '???', '', 0, 0);
    my ($cur_cfn, $pending_call);    # the callee of a calls= line, and that call awaiting its cost line
    my $instr = 0;    # positions: instr line (block modes): an address before the line
    my $src = $P{src};
    my $version = 0;   # of the k-SF records: 1 (ksf-fn, ksf-node) or 2 (ksf-fns, ksf-nodes)

    # A version 2 "# ksf-nodes" line: the forest as nested lists, nodes
    # "label[*calls][=excl[/incl]]", "(" right after a node opens its
    # children's list, ")" closes it, siblings are separated by a space; a
    # line break counts as a space. The open lists (@$open), the last token
    # ($last: '' at the start, 'node', '(' or ')') and whether a space
    # followed it carry over to the next line. The tokens' syntax is checked
    # for the whole line at once, their order one by one; labels, roots and
    # siblings by check_forest at the thread's end.
    my ($open, $last, $nline) = ([], '', []);
    my $flush_nodes = sub {
        return unless @bpar;
        # a label past 32 bits is no known label (check_forest says so)
        for (@bfn) { $_ = 0xFFFFFFFF if $_ > 0xFFFFFFFF }
        $in_thread->{par} .= pack('N*', @bpar);
        $in_thread->{fn} .= pack('N*', @bfn);
        $in_thread->{calls} .= pack('Q>*', @bcal);
        $in_thread->{excl} .= pack('Q>*', @bexc);
        $in_thread->{incl} .= pack('Q>*', @binc);
        @bpar = @bfn = @bcal = @bexc = @binc = ();
    };
    # A well-formed line, read with bulk operations: each run of siblings
    # (the text between two parentheses) gets its parent at once, the
    # counters of all nodes are taken by one match and packed at once.  A line whose parentheses do not fit the
    # lists open is left to the token loop of node_lists, which names the
    # error; so are lines with two separators in a row that the syntax
    # forbids.
    my $fast_line = sub {
        my ($t, $shape) = @_;
        (my $s = $shape) =~ tr/*=\/d/n/s;    # a node is an 'n'
        return 0 if $t eq '' || $s =~ /[ (][ ()]|\)[n(]|\A[ (]| \z/;    # separators the syntax forbids
        my @seg = split /([()])/, $s, -1;    # runs and parentheses, alternating
        return 0 if $seg[0] eq '' && $last eq '(';    # "()" across a line break
        my $depth = @$open;    # a ')' without '(' is the token loop's error
        for (my $i = 1; $i < @seg; $i += 2) { return 0 if $seg[$i] eq ')' && --$depth < 0; $depth++ if $seg[$i] eq '(' }
        $flush_nodes->() if @bfn;    # the token loop's nodes first
        my ($id, $top, @par) = ($nnodes, @$open ? $open->[-1] + 1 : 0);    # next node, parent + 1
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
        $in_thread->{fn} .= pack('N*', map { $_ > 0xFFFFFFFF ? 0xFFFFFFFF : $_ } unpack('(Q> x24)*', $row));
        $in_thread->{par} .= pack('N*', @par);
        $in_thread->{calls} .= join('', unpack('(x8 a8 x16)*', $row));
        $in_thread->{excl} .= join('', unpack('(x16 a8 x8)*', $row));
        $in_thread->{incl} .= join('', unpack('(x24 a8)*', $row));
        $nnodes = $id;
        my $end = substr($t, -1);
        $last = $end eq '(' ? '(' : $end eq ')' ? ')' : 'node';
        return 1;
    };
    # A version 3 "# ksf-nodes" line: base64 of whole nodes, each the BER
    # integers "shape label [calls - 7] [excl] [incl]" (shape: bits 0-2 the
    # calls, 7 if calls - 7 follows; bit 3 excl, bit 4 incl follow; bit 5 the
    # node's children follow; shape >> 6 lists close after it). Siblings come
    # in increasing order of label; a label is written less the previous
    # sibling's (a first child and a tree root as it is). The state carries
    # over to the next line: $depth lists are open, $parent_at[d] is the
    # parent + 1 of the nodes at depth d (0 for roots), $label_at[d] the
    # label of the last node at depth d (0 after a list opens: a first
    # child's label is written as it is; roots always 0), $opened whether
    # the line's last node opened a list.
    my ($depth, $opened, @parent_at, @label_at);
    my $stream_start = sub { ($depth, $opened) = (0, 0); @parent_at = @label_at = (0) };
    $stream_start->();
    my $node_stream = sub {
        my ($l, $ln) = @_;
        my $b64 = substr($l, 12);
        ferr($file, $ln, "malformed ksf-nodes record: not base64: '", printable(substr($b64, 0, 40)), "'")
            if $b64 eq '' || length($b64) % 4 || $b64 !~ m{\A[A-Za-z0-9+/]+={0,2}\z};
        my $bytes = MIME::Base64::decode_base64($b64);
        ferr($file, $ln, "ksf-nodes: the line ends inside a number") if ord(substr($bytes, -1)) >= 128;
        push @$nline, $nnodes, $ln;
        my $template = node_template($bytes);
        stream_error($file, $ln, $bytes, $nnodes, $depth) unless defined $template;    # a node cut by the line's end
        my @w = unpack($template, $bytes);
        ferr($file, $ln, "ksf-nodes: a number above 10^18") if List::Util::max(@w) >= 1e18;
        my $n = @w / 6;
        my @at = field_at($n);
        my ($shape, $delta, $calls) = map { [@w[@$_[0 .. $n - 1]]] } @at[0, 2, 1];
        for my $i (grep { $w[$_] } @{$at[3]}[0 .. $n - 1]) { $calls->[($i - 3) / 6] += $w[$i] }    # calls = 7 + (calls - 7)
        my (@par, @fn, @dep);
        my ($d, $j, $id) = ($depth, 0, $nnodes);
        for my $s (@$shape) {
            push @par, $parent_at[$d];
            push @dep, $d;
            push @fn, $label_at[$d] += $delta->[$j++];
            if ($s & 32) {
                ferr($file, $ln, "ksf-nodes: node " . ($id + $j - 1) . " both has children and closes lists") if $s >= 64;
                $parent_at[++$d] = $id + $j;
                $label_at[$d] = 0;
            } elsif ($s >= 64) {
                ferr($file, $ln, "ksf-nodes: node " . ($id + $j - 1) . " closes " . ($s >> 6) . " lists, $d are open")
                    if $s >> 6 > $d;
                $d -= $s >> 6;
                $label_at[0] = 0 unless $d;
            } elsif (!$d) {
                $label_at[0] = 0;
            }
        }
        # the first node repeating its previous sibling's label (a delta of
        # 0 after a sibling: not a root, not a first child), for check_forest
        if (!defined $in_thread->{repeat}) {
            for my $j (grep { !$delta->[$_] && $dep[$_] } 0 .. $n - 1) {
                next if $j ? $shape->[$j - 1] & 32 : $opened;
                $in_thread->{repeat} = $nnodes + $j;
                last;
            }
        }
        ($depth, $opened) = ($d, $shape->[-1] & 32);
        # a label past 32 bits is no known label (check_forest says so)
        @fn = map { $_ > 0xFFFFFFFF ? 0xFFFFFFFF : $_ } @fn if List::Util::max(@fn) > 0xFFFFFFFF;
        $in_thread->{par} .= pack('N*', @par);
        $in_thread->{fn} .= pack('N*', @fn);
        $in_thread->{depth} .= pack('N*', @dep);
        $in_thread->{calls} .= pack('Q>*', @$calls);
        $in_thread->{excl} .= pack('Q>*', @w[@{$at[4]}[0 .. $n - 1]]);
        $in_thread->{incl} .= pack('Q>*', @w[@{$at[5]}[0 .. $n - 1]]);
        $nnodes += $n;
    };
    my $node_lists = sub {
        my ($l, $ln) = @_;
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
        push @$nline, $nnodes, $ln;
        return if $fast_line->($t, $shape);
        my $spaced = $last ne '';   # the line break
        my @t = $t =~ /([() ])|(\d+)(?:\*(\d+))?(?:=(\d+)(?:\/(\d+))?)?/g;
        for (my $j = 0; $j < @t; $j += 5) {
            my $m = $t[$j];
            if (!defined $m) {
                ferr($file, $ln, "ksf-nodes: missing space before node '$t[$j + 1]'")
                    unless $spaced || $last eq '' || $last eq '(';
                push @bpar, @$open ? $open->[-1] + 1 : 0;
                push @bfn, $t[$j + 1];
                push @bcal, $t[$j + 2] // 1;
                my $x = $t[$j + 3] // 0;
                push @bexc, $x;
                push @binc, $t[$j + 4] // $x;
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
        ferr($file, $ln, "ksf-nodes: record ends with a space") if $spaced;
        $flush_nodes->() if @bpar >= 65536;
    };

    # One entry of the function table (ksf-fn, ksf-fns): ids are dense from 0.
    my $add_function = sub {
        my ($ln, $name) = @_;
        my $id = @fnmap;
        ferr($file, $ln, "ksf-fn before ksf-options") unless $seen_options;
        ferr($file, $ln, "function 0 must be $ROOT_NAME, not '" . printable($name) . "'")
            if $id == 0 && $name ne $ROOT_NAME;
        ferr($file, $ln, "function $id: $ROOT_NAME is reserved for id 0") if $id != 0 && $name eq $ROOT_NAME;
        ferr($file, $ln, "function $id has an empty name") if $name eq '';
        # The tool may give several functions the same name (mmap in
        # ld.so and in libc): the n-th one of a file is "name#n".
        $name .= '#' . $fnseen{$name} if $fnseen{$name}++;
        push @fnname, $name;
        # block modes: function names are not node labels
        push @fnmap, $P{mode} eq 'func' ? label_id($name) : 0;
    };
    my $fnline = $P{fnline};

    # summary: and totals: (each at most once; checked against the records
    # at the end): key -> [costs, line]
    my $cost_line = sub {
        my ($key, $val, $ln) = @_;
        ferr($file, $ln, "a second '$key:' line") if $P{$key};
        ferr($file, $ln, "malformed $key: line: '", printable($val), "' (expected event counts)")
            unless $val =~ /^\d{1,19}(?: \d{1,19})*\s*$/;
        $P{$key} = [[split ' ', $val], $ln];
    };
    # Without source annotation only the header fields and the k-SF records
    # are needed: slurp the file, take the header fields with C-level regex
    # scans and read only the records' region line by line.
    my $region;        # without source annotation: the records' region, in memory
    unless ($want_src) {
        my $data = do { local $/; <$fh> };
        close $fh;
        fail("$file: cannot read: $!") unless defined $data;
        fail("$file: the file is empty") if $data =~ /\A\s*\z/;
        my ($l1) = $data =~ /\A\s*([^\n]*)/;
        $l1 =~ tr/\r//d;
        my $l1n = 1 + (substr($data, 0, $-[1]) =~ tr/\n//);
        unless ($l1 eq '# callgrind format' || $l1 =~ /^version:\s*\d/ || $l1 =~ /^creator:/) {
            fail("$file:$l1n: not a kgrind profile (expected '# callgrind format', found '"
                 . printable($l1) . "')");
        }
        $first = 0;
        my $start = index($data, "\n# ksf-");
        my $end = length $data;
        if ($start >= 0) {
            $start++;
            my $e = index($data, "\n# ksf-end\n", $start);
            $e = index($data, "\n# ksf-end\r\n", $start) if $e < 0;
            $end = index($data, "\n", $e + 2) + 1 if $e >= 0;
            $end = length $data if $end <= 0;
        } else {
            $start = $end;
        }
        my $lines_before = substr($data, 0, $start) =~ tr/\n//;
        # version 3's function table refers to the body's names
        body_names(substr($data, 0, $start), $names{fn} //= {})
            if substr($data, $start, 40) =~ /^# ksf-version: 3\r?$/m;
        my @part_line = (0, $lines_before + (substr($data, $start, $end - $start) =~ tr/\n//));
        for my $pi (0, 1) {
            my $part = $pi ? substr($data, $end) : substr($data, 0, $start);
            while ($part =~ /^(creator|pid|cmd|summary|events|positions|desc|totals):[ \t]*([^\r\n]*)/mg) {
                my ($key, $val) = ($1, $2);
                my $pl = $part_line[$pi] + 1 + (substr($part, 0, $-[0]) =~ tr/\n//);
                if ($key eq 'totals' || $key eq 'summary') { $cost_line->($key, $val, $pl) }
                elsif ($key eq 'desc') { $P{desc}{$1} = $2 if $val =~ /^([^:]+):\s*(.*)$/ }
                elsif ($key eq 'positions') {
                    ferr($file, $pl, "unsupported positions '$val' (kgrind writes 'line' or 'instr line')")
                        unless $val =~ /^(?:instr )?line\s*$/;
                    $instr = $val =~ /^instr/ ? 1 : 0;
                }
                else { $P{$key} //= $val }
            }
        }
        $ln = $lines_before;
        $region = substr($data, $start, $end - $start);
        undef $data;
        open($fh, '<', \$region) or fail("$file: cannot read: $!");
    }
    while (defined(my $l = <$fh>)) {
        $ln++;
        chomp $l;
        $l =~ tr/\r//d;
        if ($first) {
            next if $l eq '';
            $first = 0;
            unless ($l eq '# callgrind format' || $l =~ /^version:\s*\d/ || $l =~ /^creator:/) {
                fail("$file:$ln: not a kgrind profile (expected '# callgrind format', found '"
                     . printable($l) . "')");
            }
        }
        if (index($l, '# ksf-nodes ') == 0) {
            ferr($file, $ln, "ksf-nodes outside a ksf-thread record") unless $in_thread;
            ferr($file, $ln, "ksf-nodes record in a version 1 file") if $version == 1;
            if ($version >= 3) { $node_stream->($l, $ln) } else { $node_lists->($l, $ln) }
            next;
        }
        if (index($l, '# ksf-node ') == 0) {
            ferr($file, $ln, "ksf-node outside a ksf-thread record") unless $in_thread;
            ferr($file, $ln, "ksf-node record in a version $version file (version $version has ksf-nodes)") if $version >= 2;
            # split + tr validation: several times faster than a capturing regex
            my (undef, undef, $id, $p, $f, $c, $x, $i, $extra) = split / /, $l;
            if (!defined $i || defined $extra || $i eq '' || index($l, '  ') >= 0
                || "$id$f$c$x$i" =~ tr/0-9//c || "$id $f $c $x $i" =~ /\d{19}/ || $p eq '' || ($p ne '-' && $p =~ tr/0-9//c)) {
                ferr($file, $ln, "malformed ksf-node record: '", printable($l), "'");
            }
            ferr($file, $ln, "ksf-node id $id out of order (expected $nnodes)") if $id != $nnodes;
            ferr($file, $ln, "ksf-node $id: parent $p does not precede it") if $p ne '-' && $p >= $id;
            push @bpar, $p eq '-' ? 0 : $p + 1;
            push @bfn, $f;
            push @bcal, $c;
            push @bexc, $x;
            push @binc, $i;
            $nnodes++;
            $flush_nodes->() if @bpar >= 65536;
            next;
        }
        if (index($l, '#') == 0) {
            next unless index($l, '# ksf-') == 0;
            ferr($file, $ln, "k-SF record after '# ksf-end'") if $seen_end;
            if ($l =~ /^# ksf-version: (\d+)$/) {
                ferr($file, $ln, "unsupported k-SF record version $1 (this kgrind_annotate reads versions 1 to 3)")
                    if $1 < 1 || $1 > 3;
                $version = $1 + 0;
                $seen_version = 1;
            } elsif ($l =~ /^# ksf-options: (.*)$/) {
                ferr($file, $ln, "ksf-options before ksf-version") unless $seen_version;
                my %o;
                for my $kv (split / /, $1) {
                    $kv =~ /^([\w-]+)=(\S+)$/ or ferr($file, $ln, "malformed ksf-options field '", printable($kv), "'");
                    $o{$1} = $2;
                }
                for my $need (qw(k mode rolling joined)) {
                    ferr($file, $ln, "ksf-options lacks '$need='") unless defined $o{$need};
                }
                ferr($file, $ln, "bad k value '$o{k}' in ksf-options") unless $o{k} =~ /^(?:\d+|inf)$/;
                ferr($file, $ln, "bad mode '$o{mode}' in ksf-options") unless $o{mode} =~ /^(?:func|intra|inter)$/;
                for my $yn (qw(rolling joined)) {
                    ferr($file, $ln, "bad $yn value '$o{$yn}' in ksf-options") unless $o{$yn} =~ /^(?:yes|no)$/;
                }
                ferr($file, $ln, "bad roll-loops value '$o{'roll-loops'}' in ksf-options")
                    if defined $o{'roll-loops'} && $o{'roll-loops'} !~ /^(?:yes|no)$/;
                $P{k} = $o{k} eq 'inf' ? $INF : $o{k} + 0;
                @P{qw(mode rolling joined)} = @o{qw(mode rolling joined)};
                $P{roll} = $o{'roll-loops'} // 'no';
                $intra = $o{mode} eq 'intra';
                $labmap = $o{mode} eq 'func' ? \@fnmap : \@blkmap;
                $P{blocks} = [] if $o{mode} ne 'func';
                check_merge($P0, \%P) if $P0;
                $seen_options = 1;
            } elsif ($l =~ /^# ksf-fn (\d+) (.+)$/) {
                ferr($file, $ln, "ksf-fn record in a version $version file (version $version has ksf-fns)") if $version >= 2;
                ferr($file, $ln, "ksf-fn id $1 out of order (expected " . scalar(@fnmap) . ")") if $1 != @fnmap;
                $add_function->($ln, $2);
            } elsif (index($l, '# ksf-fns ') == 0) {
                ferr($file, $ln, "ksf-fns record in a version 1 file") if $version == 1;
                # a line repeated (its names twice, in order) would shift every later id
                ferr($file, $ln, "ksf-fns line repeats the previous one (duplicated record)")
                    if defined $prev_fns && $prev_fns eq $l && index($l, "\t") >= 0;
                $prev_fns = $l;
                for my $entry (split /\t/, substr($l, 10), -1) {
                    my $name = table_name($entry, $version, $names{fn});
                    ferr($file, $ln, "ksf-fns: '", printable($entry), "' names no function of the callgrind body")
                        unless defined $name;
                    $add_function->($ln, $name);
                }
            } elsif ($l =~ /^# ksf-file (\d+) (.+)$/) {
                ferr($file, $ln, "ksf-file in a function-mode profile") unless $P{blocks};
                ferr($file, $ln, "ksf-file id $1 out of order (expected " . scalar(@fname) . ")") if $1 != @fname;
                push @fname, $2;
            } elsif ($l =~ /^# ksf-block /) {
                ferr($file, $ln, "ksf-block in a function-mode profile") unless $P{blocks};
                my ($lab, $addr, $bf, $off, $bfile, $bline, $cnt, $name) =
                    $l =~ /^# ksf-block (\d+) 0x([0-9a-fA-F]+) (\d+) (\d+) (\d+) (\d+) (\d+) (.+)$/
                    or ferr($file, $ln, "malformed ksf-block record: '", printable($l), "'");
                ferr($file, $ln, "ksf-block label $lab out of order (expected " . scalar(@blkmap) . ")") if $lab != @blkmap;
                ferr($file, $ln, "ksf-block 0 must be $ROOT_NAME") if $lab == 0 && $name ne $ROOT_NAME;
                ferr($file, $ln, "ksf-block $lab: $ROOT_NAME is reserved for label 0") if $lab != 0 && $name eq $ROOT_NAME;
                ferr($file, $ln, "ksf-block $lab: unknown function id $bf") unless defined $fnname[$bf];
                ferr($file, $ln, "ksf-block $lab: unknown file id $bfile") unless defined $fname[$bfile];
                $name .= '#' . $blkseen{$name} if $blkseen{$name}++;
                my $g = label_id($name);
                push @blkmap, $g;
                push @{$P{blocks}}, { id => $g, addr => hex($addr), fn => $fnname[$bf], offset => $off + 0,
                                      file => $fname[$bfile], line => $bline + 0, count => $cnt + 0 } if $lab;
            } elsif ($l =~ /^# ksf-thread (\d+|all) nodes=(\d+) ir=(\d+)(?: fn=(\d+))?$/) {
                ferr($file, $ln, "ksf-thread before ksf-options") unless $seen_options;
                ferr($file, $ln, "ksf-thread $1 inside thread $in_thread->{tid}") if $in_thread;
                my ($ttid, $tn, $tir, $tfn) = ($1, $2, $3, $4);
                ferr($file, $ln, "ksf-thread $ttid: intra-mode forests need fn=") if $intra && !defined $tfn;
                ferr($file, $ln, "ksf-thread $ttid: fn= only in intra mode") if !$intra && defined $tfn;
                my $tfname;
                if (defined $tfn) {
                    $tfname = $fnname[$tfn];
                    ferr($file, $ln, "ksf-thread $ttid: unknown function id $tfn") unless defined $tfname;
                }
                ferr($file, $ln, "thread $ttid" . (defined $tfname ? ", function $tfname," : '') . " appears twice")
                    if grep { $_->{tid} eq $ttid && ($_->{fname} // '') eq ($tfname // '') } @{$P{threads}};
                @bpar = @bfn = @bcal = @bexc = @binc = ();
                $in_thread = { tid => $ttid, declared => $tn + 0, ir => $tir + 0, par => '', fn => '',
                               calls => '', excl => '', incl => '', preorder => 1, line => $ln, (defined $tfname ? (fname => $tfname) : ()) };
                $nnodes = 0;
                ($open, $last, $nline) = ([], '', []);
                $stream_start->();
            } elsif ($l =~ /^# ksf-end-thread (\d+|all)$/) {
                ferr($file, $ln, "ksf-end-thread $1 without ksf-thread") unless $in_thread;
                ferr($file, $ln, "ksf-end-thread $1 closes thread $in_thread->{tid}") if $1 ne $in_thread->{tid};
                my $unclosed = $version >= 3 ? $depth : @$open;
                ferr($file, $ln, "ksf-nodes: $unclosed list(s) not closed" . ($version < 3 ? " with ')'" : ''))
                    if $unclosed;
                $flush_nodes->();
                $in_thread->{n} = $nnodes;
                # where node v was read: version 1, one line a node; version 2,
                # the line whose first node (@$nline: first node, line) is the
                # last one <= v
                my ($t0, $nl, $tid) = ($in_thread->{line}, $nline, $1);
                my $where = $version == 1 ? sub { ($t0 + 1 + $_[0], "ksf-node $_[0]") } : sub {
                    my $v = shift;
                    my $i = 0;
                    $i += 2 while $i + 2 < @$nl && $nl->[$i + 2] <= $v;
                    ($nl->[$i + 1], "ksf-nodes: node $v");
                };
                my $bad = sub { my ($v, $msg) = @_; my ($l, $what) = $where->($v); ferr($file, $l, "$what$msg") };
                # the index of children and slab roots: only check_counters' slab checks need it
                my $slabs = $P{k} != $INF && $P{k} > 0;
                my @index = check_forest($in_thread, $labmap, $intra, $labmap != \@fnmap, $bad, $slabs);
                ferr($file, $ln, "thread $tid declares nodes=$in_thread->{declared} but has $nnodes nodes")
                    if $nnodes != $in_thread->{declared};
                ferr($file, $ln, "thread $tid has no nodes") if $nnodes == 0;
                check_counters($in_thread, $P{k}, $labmap != \@fnmap, @index, $bad, $file);
                $in_thread->{n} = $nnodes;
                delete $in_thread->{declared};
                push @{$P{threads}}, $in_thread;
                undef $in_thread;
            } elsif ($l eq '# ksf-end') {
                ferr($file, $ln, "ksf-end inside thread $in_thread->{tid} (no ksf-end-thread)") if $in_thread;
                ferr($file, $ln, "ksf-end without ksf-version") unless $seen_version;
                $seen_end = $ln;
            } else {
                ferr($file, $ln, "unknown or malformed k-SF record: '", printable($l), "'");
            }
            next;
        }
        # ---- callgrind body ----
        next if $l eq '';
        my $c0 = ord $l;
        if (($c0 >= 48 && $c0 <= 57) || $c0 == 43 || $c0 == 45 || $c0 == 42) {   # 0-9 + - *
            # Without source annotation the body's costs are not needed: only
            # the k-SF records are (and they are checked strictly).
            next unless $want_src;
            my ($pos, $ir) = $instr
                ? $l =~ /^(?:0x[0-9a-fA-F]+|[+-]?\d+|\*) ([+-]?\d+|\*)(?: (\d+))?(?: \d+)*\s*$/
                : $l =~ /^([+-]?\d+|\*)(?: (\d+))?(?: \d+)*\s*$/
                or ferr($file, $ln, "malformed cost line: '", printable($l), "'");
            my $p0 = ord $pos;
            my $line = $pos eq '*' ? $last_line
                     : ($p0 == 43 || $p0 == 45) ? $last_line + $pos : $pos;
            $last_line = $line;     # relative positions follow every cost line, calls' too
            if ($after_calls) {     # inclusive cost of a call, or a jump's source
                # the call graph between contexts: "caller\0callee" -> [calls, inclusive Ir]
                if ($pending_call) { my $e = $P{calls}{$pending_call->[0]} //= [0, 0]; $e->[0] += $pending_call->[1]; $e->[1] += $ir // 0 }
                ($after_calls, $pending_call) = (0, undef);
                next;
            }
            next unless $ir;
            my $sf = $cur_fi // $cur_fl;
            $src->{$cur_thr}{$sf}{$line} += $ir;
            my $base = base_name($cur_fn);
            my $h = $fnline->{$cur_thr}{$sf} //= {};
            $h->{$base} = $line if !defined $h->{$base} || $line < $h->{$base};
            next;
        }
        my $eq = index($l, '=');
        if ($eq > 0 && $eq <= 5) {
            my $key = substr($l, 0, $eq);
            if (my $space = $NAME_SPACE{$key}) {
                next unless $want_src;
                my $name = substr($l, $eq + 1);
                if (ord($name) == 40) {    # '(' id ')' [name]
                    my $close = index($name, ')');
                    my $id = substr($name, 1, $close - 1);
                    ferr($file, $ln, "malformed $key= line: '", printable($l), "'")
                        if $close < 2 || $id =~ tr/0-9//c;
                    $name = substr($name, $close + 1);
                    $name = substr($name, 1) while ord($name) == 32;
                    if ($name ne '') { $names{$space}{$id} = $name }
                    else {
                        $name = $names{$space}{$id};
                        ferr($file, $ln, "$key=($id) used before its name was given") unless defined $name;
                    }
                }
                if    ($key eq 'fn') { $cur_fn = $name; $cur_fi = undef; $P{fnfile}{base_name($name)} //= $cur_fl }
                elsif ($key eq 'cfn') { $cur_cfn = $name }
                elsif ($key eq 'fl') { $cur_fl = $name; $cur_fi = undef }
                elsif ($key eq 'fi' || $key eq 'fe') { $cur_fi = $name eq $cur_fl ? undef : $name }
                next;
            }
            if ($key eq 'calls' || $key eq 'jump' || $key eq 'jcnd') {
                next unless $want_src;
                # count (jcnd: taken/executed), then the target position
                my $count = $key eq 'jcnd' ? '\d+/\d+' : '\d+';
                ferr($file, $ln, "malformed $key= line: '", printable($l), "'")
                    unless substr($l, $eq + 1) =~ /^$count(?: (?:0x[0-9a-fA-F]+|[+-]?\d+|\*))*\s*$/;
                $after_calls = 1;
                $pending_call = ["$cur_fn\0$cur_cfn", (substr($l, $eq + 1) =~ /^(\d+)/)[0]] if $key eq 'calls' && defined $cur_cfn;
                next;
            }
        }
        if ($l =~ /^(\w[\w ]*):\s*(.*)$/) {
            my ($key, $val) = ($1, $2);
            if ($key eq 'creator') { $P{creator} = $val }
            elsif ($key eq 'pid') { $P{pid} = $val }
            elsif ($key eq 'cmd') { $P{cmd} = $val }
            elsif ($key eq 'thread') { $cur_thr = $val }
            elsif ($key eq 'part') { $cur_thr = '' }
            elsif ($key eq 'summary' || $key eq 'totals') { $cost_line->($key, $val, $ln) }
            elsif ($key eq 'events') {
                $P{events} = $val;
            } elsif ($key eq 'positions') {
                ferr($file, $ln, "unsupported positions '$val' (kgrind writes 'line' or 'instr line')")
                    unless $val =~ /^(?:instr )?line\s*$/;
                $instr = $val =~ /^instr/ ? 1 : 0;
            } elsif ($key eq 'desc') {
                $P{desc}{$1} = $2 if $val =~ /^([^:]+):\s*(.*)$/;
            } elsif (!$HEADER_KEYS{$key}) {
                # other callgrind header lines are allowed
            }
            next;
        }
        ferr($file, $ln, "unrecognized line: '", printable($l), "'");
    }
    close $fh;
    fail("$file: the file is empty") if $first;
    my $creator = $P{creator} // '';
    if (!$seen_version) {
        # What kgrind writes at start-up, for the exit to replace.
        fail("$file: incomplete profile: the process did not exit normally under kgrind "
             . "(killed, e.g. by SIGKILL, it exec'd in a block mode, or Valgrind stopped it, "
             . "e.g. on an unsupported clone()), so it has no data")
            if defined $P{desc}{'Incomplete profile'};
        if ($creator ne '' && $creator !~ /^kgrind/) {
            fail("$file: a profile written by $creator, not by kgrind: it has no k-SF records "
                 . "(use callgrind_annotate for it)");
        }
        fail("$file: no k-SF records ('# ksf-version: 1'): not a kgrind profile with k-SF data"
             . ($creator ne '' ? " (creator: $creator)" : ''));
    }
    fail("$file:$ln: truncated: thread $in_thread->{tid} has no '# ksf-end-thread' "
         . "(opened at line $in_thread->{line}, $nnodes of $in_thread->{declared} nodes read)") if $in_thread;
    fail("$file:$ln: truncated: no '# ksf-end' record at the end of the k-SF records") unless $seen_end;
    fail("$file:$ln: truncated: no 'totals:' line at the end of the callgrind body") unless $P{totals};
    # A block-mode run may trace no block at all (nothing of --funcs ran).
    fail("$file: no ksf-thread records") unless @{$P{threads}} || ($P{mode} // "func") ne "func";
    $P{events} //= 'Ir';
    my @ev = split ' ', $P{events};
    fail("$file: events '$P{events}' do not include Ir") unless grep { $_ eq 'Ir' } @ev;
    check_profile_totals(\%P, \@ev);
    return \%P;
}

# The totals a profile states several times must agree: summary: and
# totals: (the Ir column), and in function mode the threads' ir= (every
# instruction is charged to a thread's forest), and the desc: lines' k,
# mode and k-SF sizes with the records.
sub check_profile_totals {
    my ($P, $events) = @_;
    my ($ir_col) = grep { $events->[$_] eq 'Ir' } 0 .. $#$events;
    my $file = $P->{file};
    for my $key (qw(summary totals)) {
        next unless $P->{$key};
        my ($costs, $ln) = @{$P->{$key}};
        ferr($file, $ln, "$key: has " . @$costs . " counts for " . @$events . " events")
            if @$costs != @$events;
        $P->{"${key}_ir"} = $costs->[$ir_col] + 0;
    }
    my $total = $P->{totals_ir};
    ferr($file, $P->{summary}[1], "summary: says Ir $P->{summary_ir}, but totals: (line $P->{totals}[1]) says $total")
        if $P->{summary} && $P->{summary_ir} != $total;
    $P->{total} = $total;
    return unless $P->{mode} eq 'func';
    my $sum = 0;
    $sum += $_->{ir} for @{$P->{threads}};
    ferr($file, $P->{totals}[1], "totals: says Ir $total, but the threads' ksf-thread ir= sum to $sum") if $sum != $total;
    for my $T (@{$P->{threads}}) {
        my $d = $P->{desc}{"thread $T->{tid}"} // next;
        ferr($file, $T->{line}, "thread $T->{tid} has $T->{n} k-SF nodes, but its desc: line says '$d'")
            if $d =~ /^k-SF nodes (\d+)$/ && $1 != $T->{n};
    }
    my $dk = $P->{desc}{k};
    fail("$file: desc: k: $dk disagrees with the k-SF records' k=" . kstr($P->{k}))
        if defined $dk && $dk ne kstr($P->{k});
}

# Big temporary hashes are left to the end of the process: freeing a hash of
# 10^6 keys takes the best part of a second.
our @KEEP;

# Forests are packed columns (strings read with vec and unpack): par (the
# parent + 1, 0 for a root; 32 bits), fn and depth (32 bits), calls, excl
# and incl (64 bits), n nodes; a perl array is 32 bytes a node and column,
# a packed column 4 or 8 (a 2.9 M-node forest: 555 MB against 104 MB).
# col() unpacks one column into an array (par: -1 for a root), for the code
# that is not on the path of large forests.
my %COLUMN = (par => 'N', fn => 'N', depth => 'N', calls => 'Q>', excl => 'Q>', incl => 'Q>');
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

# Checks a forest read from node records (pre-order, parents before their
# children, parent -1 for a root): known labels, which it maps from the
# file's ids to global label ids, one tree per root label, __root__ only at
# the first tree's root (intra forests: nowhere), distinct labels among
# siblings; sets the nodes' depths. $blocks: labels are block labels.
# $bad->(v, message) reports an error at node v. With $slabs, returns the
# index of the children (by "parent label") and of the R trees' roots (by
# label) that check_counters uses; without, siblings are checked by sorting
# (parent, label) pairs, which takes less memory than a hash.
sub check_forest {
    my ($F, $labmap, $intra, $blocks, $bad, $slabs) = @_;
    my $repeat = delete $F->{repeat};
    return check_read_forest(@_, $repeat) if defined $F->{depth} && !$slabs && one_to_one($labmap);
    my ($depth, $fnout, $roots, %child, %rootlab, @pairs) = ('', '', 0);
    push @KEEP, \%child;
    chunks($F, [qw(par fn)], sub {
        my ($s, $par, $fn) = @_;
        my @g = map_labels($labmap, $fn, $s, $blocks, $bad);
        my @d;
        for my $i (0 .. $#$par) {
            my ($v, $p, $g) = ($s + $i, $par->[$i] - 1, $g[$i]);
            if ($p < 0) {
                check_root($v, $g, $intra, \%rootlab, $bad);
                $d[$i] = 0;
                $roots++;
            } else {
                $bad->($v, " must be a root") if $v == 0;
                if ($slabs) {
                    $bad->($v, ": '$LNAME[$g]' appears twice among the children of node $p") if defined $child{"$p $g"};
                    $child{"$p $g"} = $v;
                } else {
                    push @pairs, $p * 4294967296 + $g;
                }
                $d[$i] = $p >= $s ? $d[$p - $s] + 1 : vec($depth, $p, 32) + 1;
            }
        }
        $depth .= pack('N*', @d);
        $fnout .= pack('N*', @g);
    });
    if (@pairs) {
        @pairs = sort { $a <=> $b } @pairs;
        my %twice;
        for my $i (1 .. $#pairs) { $twice{$pairs[$i]} = 1 if $pairs[$i] == $pairs[$i - 1] }
        undef @pairs;
        if (%twice) {    # the first node whose (parent, label) an earlier sibling has
            my %seen;
            chunks($F, [qw(par)], sub {
                my ($s, $par) = @_;
                for my $i (0 .. $#$par) {
                    my ($v, $p) = ($s + $i, $par->[$i] - 1);
                    next if $p < 0;
                    my $g = vec($fnout, $v, 32);
                    my $key = $p * 4294967296 + $g;
                    next unless $twice{$key};
                    $bad->($v, ": '$LNAME[$g]' appears twice among the children of node $p") if $seen{$key}++;
                }
            });
        }
    }
    $F->{fn} = $fnout;
    $F->{depth} = $depth;
    $F->{roots} = $roots;
    return (\%child, \%rootlab);
}

# The global labels of nodes s, s + 1, ... labelled @$fn in the file; an
# id the table does not have is an error.
sub map_labels {
    my ($labmap, $fn, $s, $blocks, $bad) = @_;
    my @g = @$labmap[@$fn];
    return @g if List::Util::max(@$fn) < @$labmap;    # every id below the table's size has a label
    for my $i (grep { !defined $g[$_] } 0 .. $#g) {
        $bad->($s + $i, $blocks ? ": block label $fn->[$i] has no ksf-block record" : ": unknown function id $fn->[$i]");
    }
    return @g;
}

# The checks of a tree's root v labelled g: __root__ at the first tree's
# root only (intra forests: nowhere), each other root label once
# ($rootlab: label -> root).
sub check_root {
    my ($v, $g, $intra, $rootlab, $bad) = @_;
    if ($v == 0 && $intra) {
        # intra forests: the first tree is rooted at the function's first block
        $bad->($v, ": an intra-mode forest cannot be rooted at $ROOT_NAME") if $g == $ROOT;
        return;
    }
    $bad->($v, " must be the root of the first tree, labelled $ROOT_NAME") if $v == 0 && $g != $ROOT;
    $bad->($v, ": only the first tree may be rooted at $ROOT_NAME") if $v != 0 && $g == $ROOT;
    $bad->($v, ": a second tree rooted at '$LNAME[$g]'") if defined $rootlab->{$g};
    $rootlab->{$g} = $v if $v != 0;
}

# check_forest for a forest whose reader set the depths and found the
# first node with a sibling's label ($repeat: version 3, where
# siblings come in increasing order of label, so that a repeated label
# follows its twin): the same checks in the same order, per node only the
# labels' mapping; the roots one by one.
sub check_read_forest {
    my ($F, $labmap, $intra, $blocks, $bad, $slabs, $repeat) = @_;
    my ($fnout, $roots, %rootlab) = ('', 0);
    chunks($F, [qw(fn depth)], sub {
        my ($s, $fn, $depth) = @_;
        my @g = map_labels($labmap, $fn, $s, $blocks, $bad);
        for my $i (grep { !$depth->[$_] } 0 .. $#$depth) {
            check_root($s + $i, $g[$i], $intra, \%rootlab, $bad);
            $roots++;
        }
        $fnout .= pack('N*', @g);
    });
    if (defined $repeat) {
        my $g = vec($fnout, $repeat, 32);
        $bad->($repeat, ": '$LNAME[$g]' appears twice among the children of node " . (vec($F->{par}, $repeat, 32) - 1));
    }
    $F->{fn} = $fnout;
    $F->{roots} = $roots;
    return ({}, \%rootlab);
}

# Whether no two of a label map's ids are the same label.
sub one_to_one {
    my ($labmap) = @_;
    my %seen;
    return !grep { defined && $seen{$_}++ } @$labmap;
}

# The numbers a forest states twice must agree (docs/output-format.md,
# section 3): a node's inclusive Ir is at least its exclusive Ir (its calls
# may be 0: in a forked child, the frames active at the fork); the exclusive Ir of the nodes sums to the
# thread's ir=, which is the inclusive Ir of __root__ in function mode; with a finite k > 0 the top region (depth < k) of the trees
# in R holds no cost, and each of its nodes counts exactly the activations
# of the slab nodes (depth >= k, in any tree) whose path from depth k is its
# root path (Listing 3.2 increments both).
sub check_counters {
    my ($F, $K, $blocks, $child, $rootlab, $bad, $file) = @_;
    my $sum = 0;
    chunks($F, [qw(excl incl)], sub {
        my ($s, $exc, $inc) = @_;
        for my $i (grep { $inc->[$_] < $exc->[$_] } 0 .. $#$exc) {
            $bad->($s + $i, ": inclusive Ir $inc->[$i] is below its exclusive Ir $exc->[$i]");
        }
        $sum += List::Util::sum0(@$exc);
    });
    my $thread = "ksf-thread $F->{tid}" . (defined $F->{fname} ? " fn $F->{fname}" : '');
    ferr($file, $F->{line}, "$thread: ir=$F->{ir}, but its nodes' exclusive Ir sums to $sum") if $sum != $F->{ir};
    # function mode: the root activation includes the whole thread
    my $inc0 = vec($F->{incl}, 0, 64);
    ferr($file, $F->{line}, "$thread: ir=$F->{ir}, but the inclusive Ir of its $ROOT_NAME node is $inc0")
        if !$blocks && $inc0 != $F->{ir};
    return if $K == $INF || $K == 0;
    my ($par, $fn, $cal, $exc, $inc, $depth) = map { col($F, $_) } qw(par fn calls excl incl depth);
    my (@twin, @slab_calls, @in_first);    # a slab node's top-region copy; the calls of a copy's slab nodes
    for my $v (0 .. $#$par) {
        my ($p, $d) = ($par->[$v], $depth->[$v]);
        $in_first[$v] = $p < 0 ? $v == 0 : $in_first[$p];
        next if $d < $K;
        my $t = $d == $K ? $rootlab->{$fn->[$v]} : $child->{"$twin[$p] $fn->[$v]"};
        $bad->($v, ": no copy of its slab in the top region of the tree rooted at '$LNAME[slab_label($F, $v, $K)]'")
            unless defined $t;
        $twin[$v] = $t;
        $slab_calls[$t] += $cal->[$v];
    }
    for my $v (0 .. $#$par) {
        next if $depth->[$v] >= $K || $in_first[$v];
        $bad->($v, ": a top-region copy holds cost (Ir $exc->[$v], incl $inc->[$v])") if $exc->[$v] || $inc->[$v];
        my $want = $slab_calls[$v] // 0;
        $bad->($v, ": calls=$cal->[$v], but the slab nodes it copies count $want activations") if $cal->[$v] != $want;
    }
}

# The label of the depth-k ancestor of node v (the root label of its slab's copy).
sub slab_label {
    my ($F, $v, $K) = @_;
    $v = vec($F->{par}, $v, 32) - 1 while vec($F->{depth}, $v, 32) > $K;
    return vec($F->{fn}, $v, 32);
}

sub printable {
    my $s = shift;
    $s =~ s/[^\x20-\x7e]/?/g;
    $s = substr($s, 0, 60) . '...' if length $s > 63;
    return $s;
}

# The activated function of a body context name "c'a'e".
sub base_name { my $n = shift; my $i = index($n, "'"); $i < 0 ? $n : substr($n, 0, $i) }


# A profile given twice (by the same or another path) would be joined with
# itself, doubling every count: refused.  (Two runs' files with the same
# contents are two runs, and are joined.)
sub refuse_repeated_files {
    my ($files) = @_;
    my %seen;
    for my $f (@$files) {
        my ($dev, $ino) = stat $f;
        next unless defined $ino;    # read_profile reports it
        my $first = $seen{"$dev $ino"};
        fail("$f: " . ($first eq $f ? "given twice" : "the same file as $first")
             . ": a profile joined with itself would double every count") if defined $first;
        $seen{"$dev $ino"} = $f;
    }
}

# The program a profile ran: its cmd:'s executable by file name, so the
# same program run with other arguments, or by another path (./app,
# build/app), is the same program.  Undef when the file names no command.
sub program_of {
    my ($P) = @_;
    my ($exe) = split ' ', $P->{cmd} // '';
    return undef unless defined $exe && $exe ne '';
    $exe =~ s{.*/}{};
    return $exe;
}

# Profiles of different programs are not joined (or compared, $what says
# how): one line naming both commands; --force joins them anyway.
sub refuse_other_programs {
    my ($what, @P) = @_;
    my ($first) = grep { defined program_of($_) } @P or return;
    for my $P (@P) {
        my $prog = program_of($P);
        next if !defined $prog || $prog eq program_of($first);
        my ($a, $b) = map { (split ' ', $_->{cmd})[0] } $first, $P;
        fail("$first->{file} is a profile of $a, $P->{file} of $b: profiles of different programs "
             . "are not $what (--force does it anyway)");
    }
}

# Profiles given together must agree on k, mode, rolling and roll-loops.
sub check_merge {
    my ($P0, $P) = @_;
    for my $f (qw(k mode rolling roll)) {
        next if $P->{$f} eq $P0->{$f};
        my ($a, $b) = $f eq 'k' ? (kstr($P0->{k}), kstr($P->{k})) : ($P0->{$f}, $P->{$f});
        my $n = $f eq 'roll' ? 'roll-loops' : $f;
        fail("cannot merge $P0->{file} ($n=$a) with $P->{file} ($n=$b): "
             . ($f eq 'roll' ? "profiles must have the same loop rolling"
                : "profiles must have the same k, mode and recursion rolling"));
    }
}

1;
