#!/usr/bin/perl
# kgrind_annotate: reads kgrind profiles (callgrind format with k-SF records,
# see docs/output-format.md), rebuilds each thread's k-Slab Forest, computes
# the k-Calling Context Forest with inv_k (IHPP thesis 3.3.3, 5.3.3) and shows
# the hottest k-contexts, the forests, annotated sources, or JSON / Graphviz /
# folded stacks.  Core Perl modules only.  See docs/annotate.md.
use strict;
use warnings;
no warnings 'recursion';
use Getopt::Long qw(GetOptionsFromArray :config no_ignore_case bundling no_auto_abbrev);
use File::Spec;
use FindBin ();
# The KGrind:: modules: next to the script in the source tree (perl/lib, or
# the build tree's link to it), else where `make install` put them.
BEGIN {
    my @dirs = ("$FindBin::RealBin/lib", '@KG_PERLLIB@');
    my ($dir) = grep { -d "$_/KGrind" } @dirs;
    unshift @INC, $dir if defined $dir;
}

my $VERSION = '@KG_VERSION@';
my $ROOT_NAME = '__root__';
my $INF = -1;    # k = inf
my $BLOCKMODE;   # the profiles are block k-SFs (mode intra or inter)

# ---------------------------------------------------------------------------
# Errors: fail() dies with a message; main() prints it and exits 2.
# ---------------------------------------------------------------------------
sub fail { die bless { msg => join('', @_) }, 'KG::Error' }
sub ferr { my ($file, $line, @m) = @_; fail("$file:$line: ", @m) }

# ---------------------------------------------------------------------------
# Labels (function names), interned across all profiles.
# ---------------------------------------------------------------------------
my (%LID, @LNAME);
sub label_id {
    my $n = $_[0];
    my $id = $LID{$n};
    return $id if defined $id;
    push @LNAME, $n;
    return $LID{$n} = $#LNAME;
}
label_id($ROOT_NAME);    # global id 0
my $ROOT = 0;

sub kstr { $_[0] == $INF ? 'inf' : $_[0] }

# ---------------------------------------------------------------------------
# Reading a profile.
# ---------------------------------------------------------------------------
my %NAME_SPACE = (ob => 'ob', cob => 'ob', fl => 'fl', fi => 'fl', fe => 'fl', cfi => 'fl', cfl => 'fl',
                  fn => 'fn', cfn => 'fn', jfi => 'fl', jfn => 'fn');
my %HEADER_KEYS = map { $_ => 1 } qw(version creator pid cmd part thread desc
    positions events summary totals);

# The syntax of a version 2 ksf-nodes line's tokens (their order is checked
# by the reader).
my $NODE_TOKENS = qr{(?:[() ]|\d{1,18}(?:\*\d{1,18})?(?:=\d{1,18}(?:/\d{1,18})?)?)*};

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
    my ($par, $fnv, $cal, $exc, $inc);
    my ($nnodes, $seen_end, $seen_version, $seen_options, $seen_totals) = (0);
    my (%fnseen);
    my $first = 1;
    my $ln = 0;
    # body state for source annotation
    my (%names);       # 'fl'/'fn' -> id -> name
    my ($cur_fl, $cur_fi, $cur_fn, $cur_thr, $after_calls, $last_line) = ('???', undef, '???', '', 0, 0);
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
    my $node_lists = sub {
        my ($l, $ln) = @_;
        my $t = substr($l, 12);
        unless ($t =~ /\A$NODE_TOKENS\z/o) {
            $t =~ /\A$NODE_TOKENS/o;
            ferr($file, $ln, "malformed ksf-nodes record at column " . (13 + $+[0]) . ": '",
                 printable(substr($t, $+[0])), "'");
        }
        push @$nline, $nnodes, $ln;
        my $spaced = $last ne '';   # the line break
        my @t = $t =~ /([() ])|(\d+)(?:\*(\d+))?(?:=(\d+)(?:\/(\d+))?)?/g;
        for (my $j = 0; $j < @t; $j += 5) {
            my $m = $t[$j];
            if (!defined $m) {
                ferr($file, $ln, "ksf-nodes: missing space before node '$t[$j + 1]'")
                    unless $spaced || $last eq '' || $last eq '(';
                push @$par, @$open ? $open->[-1] : -1;
                push @$fnv, $t[$j + 1];
                push @$cal, ($t[$j + 2] // 1) + 0;
                my $x = ($t[$j + 3] // 0) + 0;
                push @$exc, $x;
                push @$inc, defined $t[$j + 4] ? $t[$j + 4] + 0 : $x;
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
        for my $part (substr($data, 0, $start), substr($data, $end)) {
            while ($part =~ /^(creator|pid|cmd|summary|events|positions|desc|totals):[ \t]*([^\r\n]*)/mg) {
                my ($key, $val) = ($1, $2);
                if ($key eq 'totals') { $seen_totals = 1 }
                elsif ($key eq 'desc') { $P{desc}{$1} = $2 if $val =~ /^([^:]+):\s*(.*)$/ }
                elsif ($key eq 'positions') {
                    my $pl = 1 + (substr($part, 0, $-[0]) =~ tr/\n//);
                    ferr($file, $pl, "unsupported positions '$val' (kgrind writes 'line' or 'instr line')")
                        unless $val =~ /^(?:instr )?line\s*$/;
                    $instr = $val =~ /^instr/ ? 1 : 0;
                }
                else { $P{$key} //= $val }
            }
        }
        $ln = substr($data, 0, $start) =~ tr/\n//;
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
            $node_lists->($l, $ln);
            next;
        }
        if (index($l, '# ksf-node ') == 0) {
            ferr($file, $ln, "ksf-node outside a ksf-thread record") unless $in_thread;
            ferr($file, $ln, "ksf-node record in a version 2 file (version 2 has ksf-nodes)") if $version == 2;
            # split + tr validation: several times faster than a capturing regex
            my (undef, undef, $id, $p, $f, $c, $x, $i, $extra) = split / /, $l;
            if (!defined $i || defined $extra || $i eq '' || index($l, '  ') >= 0
                || "$id$f$c$x$i" =~ tr/0-9//c || $p eq '' || ($p ne '-' && $p =~ tr/0-9//c)) {
                ferr($file, $ln, "malformed ksf-node record: '", printable($l), "'");
            }
            ferr($file, $ln, "ksf-node id $id out of order (expected $nnodes)") if $id != $nnodes;
            ferr($file, $ln, "ksf-node $id: parent $p does not precede it") if $p ne '-' && $p >= $id;
            push @$par, $p eq '-' ? -1 : $p + 0;
            push @$fnv, $f;
            push @$cal, $c + 0;
            push @$exc, $x + 0;
            push @$inc, $i + 0;
            $nnodes++;
            next;
        }
        if (index($l, '#') == 0) {
            next unless index($l, '# ksf-') == 0;
            ferr($file, $ln, "k-SF record after '# ksf-end'") if $seen_end;
            if ($l =~ /^# ksf-version: (\d+)$/) {
                ferr($file, $ln, "unsupported k-SF record version $1 (this kgrind_annotate reads versions 1 and 2)")
                    if $1 != 1 && $1 != 2;
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
                ferr($file, $ln, "ksf-fn record in a version 2 file (version 2 has ksf-fns)") if $version == 2;
                ferr($file, $ln, "ksf-fn id $1 out of order (expected " . scalar(@fnmap) . ")") if $1 != @fnmap;
                $add_function->($ln, $2);
            } elsif (index($l, '# ksf-fns ') == 0) {
                ferr($file, $ln, "ksf-fns record in a version 1 file") if $version == 1;
                $add_function->($ln, $_) for split /\t/, substr($l, 10), -1;
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
                ($par, $fnv, $cal, $exc, $inc) = ([], [], [], [], []);
                $in_thread = { tid => $ttid, declared => $tn + 0, ir => $tir + 0, par => $par, fn => $fnv,
                               calls => $cal, excl => $exc, incl => $inc,
                               preorder => 1, line => $ln, (defined $tfname ? (fname => $tfname) : ()) };
                $nnodes = 0;
                ($open, $last, $nline) = ([], '', []);
            } elsif ($l =~ /^# ksf-end-thread (\d+|all)$/) {
                ferr($file, $ln, "ksf-end-thread $1 without ksf-thread") unless $in_thread;
                ferr($file, $ln, "ksf-end-thread $1 closes thread $in_thread->{tid}") if $1 ne $in_thread->{tid};
                ferr($file, $ln, "ksf-nodes: " . scalar(@$open) . " list(s) not closed with ')'") if @$open;
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
                check_forest($in_thread, $labmap, $intra, $labmap != \@fnmap, $file, $where);
                ferr($file, $ln, "thread $tid declares nodes=$in_thread->{declared} but has $nnodes nodes")
                    if $nnodes != $in_thread->{declared};
                ferr($file, $ln, "thread $tid has no nodes") if $nnodes == 0;
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
            if ($after_calls) { $after_calls = 0; next; }   # inclusive cost of a call, or a jump's source
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
            elsif ($key eq 'summary') { $P{summary} = $val }
            elsif ($key eq 'totals') { $seen_totals = 1 }
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
             . "(killed, e.g. by SIGKILL, or it exec'd without --trace-children=yes), so it has no data")
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
    fail("$file:$ln: truncated: no 'totals:' line at the end of the callgrind body") unless $seen_totals;
    # A block-mode run may trace no block at all (nothing of --funcs ran).
    fail("$file: no ksf-thread records") unless @{$P{threads}} || ($P{mode} // "func") ne "func";
    $P{events} //= 'Ir';
    my @ev = split ' ', $P{events};
    fail("$file: events '$P{events}' do not include Ir") unless grep { $_ eq 'Ir' } @ev;
    return \%P;
}

# Big temporary hashes are left to the end of the process: freeing a hash of
# 10^6 keys takes the best part of a second.
my @KEEP;

# Checks a forest read from node records (pre-order, parents before their
# children, parent -1 for a root): known labels, which it maps from the
# file's ids to global label ids, one tree per root label, __root__ only at
# the first tree's root (intra forests: nowhere), distinct labels among
# siblings; sets the nodes' depths. $blocks: labels are block labels.
# $where->(v) gives the line and the name
# of node v for the message.
sub check_forest {
    my ($F, $labmap, $intra, $blocks, $file, $where) = @_;
    my ($par, $fn) = @$F{qw(par fn)};
    my (@depth, %sib, %rootlab);
    $#depth = $#$par;
    push @KEEP, \%sib;
    my $bad = sub { my ($v, $msg) = @_; my ($ln, $what) = $where->($v); ferr($file, $ln, "$what$msg") };
    for my $v (0 .. $#$par) {
        my $p = $par->[$v];
        my $g = $labmap->[$fn->[$v]];
        $bad->($v, $blocks ? ": block label $fn->[$v] has no ksf-block record" : ": unknown function id $fn->[$v]")
            unless defined $g;
        if ($p < 0) {
            if ($v == 0 && $intra) {
                # intra forests: the first tree is rooted at the function's first block
                $bad->($v, ": an intra-mode forest cannot be rooted at $ROOT_NAME") if $g == $ROOT;
            } else {
                $bad->($v, " must be the root of the first tree, labelled $ROOT_NAME") if $v == 0 && $g != $ROOT;
                $bad->($v, ": only the first tree may be rooted at $ROOT_NAME") if $v != 0 && $g == $ROOT;
                $bad->($v, ": a second tree rooted at '$LNAME[$g]'") if $rootlab{$g}++;
            }
            $depth[$v] = 0;
        } else {
            $bad->($v, " must be a root") if $v == 0;
            $bad->($v, ": '$LNAME[$g]' appears twice among the children of node $p") if $sib{"$p $g"}++;
            $depth[$v] = $depth[$p] + 1;
        }
        $fn->[$v] = $g;
    }
    $F->{depth} = \@depth;
}

sub printable {
    my $s = shift;
    $s =~ s/[^\x20-\x7e]/?/g;
    $s = substr($s, 0, 60) . '...' if length $s > 63;
    return $s;
}

# The activated function of a body context name "c'a'e".
sub base_name { my $n = shift; my $i = index($n, "'"); $i < 0 ? $n : substr($n, 0, $i) }

# ---------------------------------------------------------------------------
# Forests: join (Def. 4*, Listing 5.7) and inv_k (Def. 6, Fig. 3.8, Listing 5.8).
# ---------------------------------------------------------------------------
sub join_forests {
    my ($tid, @F) = @_;
    return $F[0] if @F == 1;
    my (@par, @fn, @cal, @exc, @inc, @depth, %root, %child, %first);
    my $ir = 0;
    for my $F (@F) {
        $ir += $F->{ir};
        my ($p, $f, $c, $x, $i) = @$F{qw(par fn calls excl incl)};
        my @map;
        for my $v (0 .. $F->{n} - 1) {
            my $lab = $f->[$v];
            my ($key, $u);
            # the first trees (node 0: __root__, or an intra forest's first
            # block) are joined with each other, not with the R trees
            if ($p->[$v] < 0) { $u = $root{($v == 0 ? 'F' : 'R') . $lab} }
            else { $key = "$map[$p->[$v]] $lab"; $u = $child{$key} }
            unless (defined $u) {
                push @fn, $lab; push @cal, 0; push @exc, 0; push @inc, 0;
                $u = $#fn;
                if (defined $key) { push @par, $map[$p->[$v]]; push @depth, $depth[$map[$p->[$v]]] + 1; $child{$key} = $u }
                else { push @par, -1; push @depth, 0; $root{($v == 0 ? 'F' : 'R') . $lab} = $u; $first{$u} = 1 if $v == 0 }
            }
            $cal[$u] += $c->[$v]; $exc[$u] += $x->[$v]; $inc[$u] += $i->[$v];
            $map[$v] = $u;
        }
    }
    return { tid => $tid, ir => $ir, n => scalar(@fn), par => \@par, fn => \@fn, calls => \@cal,
             excl => \@exc, incl => \@inc, depth => \@depth, preorder => 0, firstroots => \%first };
}

# Whether root v of forest F is the root of a first tree (never cleared).
sub first_root { my ($F, $v) = @_; $F->{firstroots} ? $F->{firstroots}{$v} : $v == 0 }

# Children lists in creation order (natural order).
sub children_of {
    my ($par) = @_;
    my (@kids, @roots);
    for my $v (0 .. $#$par) {
        my $p = $par->[$v];
        if ($p < 0) { push @roots, $v } else { push @{$kids[$p]}, $v }
    }
    return (\@roots, \@kids);
}

sub preorder {
    my ($F) = @_;
    return [0 .. $F->{n} - 1] if $F->{preorder};
    my ($roots, $kids) = children_of($F->{par});
    my @out;
    my @stack = reverse @$roots;
    while (@stack) {
        my $v = pop @stack;
        push @out, $v;
        push @stack, reverse @{$kids->[$v]} if $kids->[$v];
    }
    return \@out;
}

# inv_kk of forest F recorded with k = K (Def. 6, Fig. 3.8, Listing 5.8).
# Every node v contributes the reversed suffix of at most kk+1 labels of its
# root path; every node of that chain carries v's counters, except that the
# top region (depth < K) of every tree not rooted at __root__ contributes
# zero counters (its path only).  The chains are joined by label.
#
# Implementation: each chain is packed into a big-endian string (labels + 1,
# a 0 terminator, the node's pre-order position); one C-level sort groups
# equal prefixes, and a linear scan creates each k-CCF node once (a trie of
# sorted strings: no hash lookups).  cfirst[] keeps, per k-CCF node, the
# first pre-order position whose chain passes through it: the order in
# which the thesis's join creates the nodes (--tree-order=natural).
# Counters are summed at the chain ends, then into the ancestors.
sub inv_k {
    my ($F, $kk, $K, $natural, $tree) = @_;
    return inv_k_contexts($F, $kk, $K) unless $tree || $natural;
    my ($par, $fn, $cal, $exc, $inc, $depth) = @$F{qw(par fn calls excl incl depth)};
    my $ord = preorder($F);
    my $maxbytes = $kk == $INF ? 1e18 : 4 * $kk;
    my $clear = $K == $INF ? 0 : $K;
    my $n0 = $F->{n};
    my @roottree;    # per node: its tree is rooted at __root__ (never cleared)
    my @chain;       # per node: its packed reversed chain (labels + 1)
    for my $v (0 .. $n0 - 1) {    # parents have smaller ids
        my $p = $par->[$v];
        if ($p < 0) {
            $roottree[$v] = first_root($F, $v);
            $chain[$v] = pack('N', $fn->[$v] + 1);
        } else {
            $roottree[$v] = $roottree[$p];
            $chain[$v] = pack('N', $fn->[$v] + 1) . substr($chain[$p], 0, $maxbytes);
        }
    }
    my @keys;
    $#keys = $n0 - 1;
    my $i = 0;
    for my $v (@$ord) {
        $keys[$i] = $chain[$v] . pack('NN', 0, $i);
        $i++;
    }
    undef @chain;
    @keys = sort @keys;
    my (@cpar, @cfn, @cfirst, @xcal, @xexc, @xinc, @prev);
    my $prevkey = '';
    for my $key (@keys) {
        my $len = (length($key) >> 2) - 2;     # labels in this chain
        # common prefix (in labels) with the previous chain, at C speed
        my $j = 0;
        if (($prevkey ^ $key) =~ /\A(?:\0\0\0\0)*/) { $j = $+[0] >> 2 }
        my $plen = $prevkey eq '' ? 0 : (length($prevkey) >> 2) - 2;
        $j = $plen if $j > $plen;
        $j = $len if $j > $len;
        my $pos = unpack('N', substr($key, -4));
        if ($natural) { for my $t (0 .. $j - 1) { $cfirst[$prev[$t]] = $pos if $pos < $cfirst[$prev[$t]] } }
        $#prev = $j - 1;
        for my $t ($j .. $len - 1) {
            push @cfn, unpack('N', substr($key, 4 * $t, 4)) - 1;
            push @cpar, $t ? $prev[$t - 1] : -1;
            push @cfirst, $pos;
            push @prev, $#cfn;
        }
        $prevkey = $key;
        my $v = $ord->[$pos];
        next if !$roottree[$v] && $depth->[$v] < $clear;    # Fig. 3.8: cleared top region
        my $cid = $prev[-1];
        $xcal[$cid] += $cal->[$v]; $xexc[$cid] += $exc->[$v]; $xinc[$cid] += $inc->[$v];
    }
    undef @keys;
    my $n = @cfn;
    $#xcal = $#xexc = $#xinc = $n - 1;
    my @ctx = grep { defined $xcal[$_] } 0 .. $n - 1;
    return { n => $n, par => \@cpar, fn => \@cfn, ($natural ? (first => \@cfirst) : ()), ctx => \@ctx,
             xcalls => \@xcal, xexcl => \@xexc, xincl => \@xinc };
}

# inv_k without the k-CCF's trees, for the outputs that need only its node
# count and its contexts (the text table, source annotation, folded stacks):
# the same sorted chains, but each chain's labels are kept as its context's
# path and only the number of new prefixes is counted.  Context ids follow
# the sorted chains; every output sorts contexts by key and path anyway.
sub inv_k_contexts {
    my ($F, $kk, $K) = @_;
    my ($par, $fn, $cal, $exc, $inc, $depth) = @$F{qw(par fn calls excl incl depth)};
    my $maxbytes = $kk == $INF ? 1e18 : 4 * $kk;
    my $clear = $K == $INF ? 0 : $K;
    my $n0 = $F->{n};
    my (@chain, @bucket, @roottree);
    $#chain = $n0 - 1;
    # key: chain, a 0 label, the node id (top bit set: cleared top region)
    my @plab = map { pack('N', $_ + 1) } 0 .. $#LNAME;
    for my $v (0 .. $n0 - 1) {    # parents have smaller ids
        my $p = $par->[$v];
        my $g = $fn->[$v];
        if ($p < 0) {
            my $rt = $roottree[$v] = first_root($F, $v);
            push @{$bucket[$g]}, ($chain[$v] = $plab[$g]) . pack('NN', 0, !$rt && 0 < $clear ? $v | 0x80000000 : $v);
        } elsif ($roottree[$v] = $roottree[$p]) {
            push @{$bucket[$g]}, ($chain[$v] = $plab[$g] . substr($chain[$p], 0, $maxbytes)) . pack('NN', 0, $v);
        } else {
            push @{$bucket[$g]}, ($chain[$v] = $plab[$g] . substr($chain[$p], 0, $maxbytes))
                . pack('NN', 0, $depth->[$v] < $clear ? $v | 0x80000000 : $v);
        }
    }
    undef @chain;
    undef @roottree;
    # the keys sorted: bucketed by their first label (the activated function),
    # then one C-level sort per bucket (fewer comparisons than one big sort)
    # cchain: a context's sort key (its chain is all but the last 8 bytes)
    my (@xcal, @xexc, @xinc, @cchain);
    my ($n, $prev, $plen, $have) = (0, '', 0, 0);
    for my $key (map { $_ ? sort @$_ : () } @bucket) {
        my $len = length($key) - 8;            # bytes of this chain's labels
        ($prev ^ $key) =~ /\A(?:\0\0\0\0)*/;
        my $j = $+[0];                          # common prefix with the previous key
        if ($j < $len || $len != $plen) {       # a new chain: count its new k-CCF nodes
            $j = $plen if $j > $plen;
            $n += ($len - $j) >> 2;
            $plen = $len;
            $have = 0;
        }
        $prev = $key;
        my $v = vec($key, ($len >> 2) + 1, 32);    # the last word (big-endian)
        next if $v >= 0x80000000;              # Fig. 3.8: cleared top region
        if ($have) {
            $xcal[-1] += $cal->[$v]; $xexc[-1] += $exc->[$v]; $xinc[-1] += $inc->[$v];
        } else {
            push @cchain, $key; push @xcal, $cal->[$v]; push @xexc, $exc->[$v]; push @xinc, $inc->[$v];
            $have = 1;
        }
    }
    undef @bucket;
    return { n => $n, chain => \@cchain, ctx => [0 .. $#cchain], xcalls => \@xcal, xexcl => \@xexc,
             xincl => \@xinc };
}

# The k-CCF node counters (each chain's counters on all its nodes): the
# chain ends' sums, summed into their ancestors.  Only trees need them.
sub ccf_counters {
    my ($C) = @_;
    return $C if $C->{calls};
    my $n = $C->{n};
    my $cpar = $C->{par};
    my @ccal = map { $_ // 0 } @{$C->{xcalls}};
    my @cexc = map { $_ // 0 } @{$C->{xexcl}};
    my @cinc = map { $_ // 0 } @{$C->{xincl}};
    for (my $c = $n - 1; $c > 0; $c--) {
        my $p = $cpar->[$c];
        next if $p < 0;
        $ccal[$p] += $ccal[$c]; $cexc[$p] += $cexc[$c]; $cinc[$p] += $cinc[$c];
    }
    @$C{qw(calls excl incl)} = (\@ccal, \@cexc, \@cinc);
    return $C;
}

# Path of context cid, outermost caller first.
sub ctx_path {
    my ($C, $cid) = @_;
    return [map { $LNAME[$_ - 1] } reverse unpack('N*', substr($C->{chain}[$cid], 0, -8))] if $C->{chain};
    my @p;
    while ($cid >= 0) { push @p, $LNAME[$C->{fn}[$cid]]; $cid = $C->{par}[$cid] }
    return \@p;
}

# ---------------------------------------------------------------------------
# Options.
# ---------------------------------------------------------------------------
my $USAGE = <<"EOT";
usage: kgrind_annotate [options] kgrind.out.<pid> [more profiles...] [source files...]

  --sort=Ir|calls|inclusive   sort key for contexts and tree children [Ir]
  --threshold=<0-100>         show contexts until this cumulative share [99]
  --top=<N>                   show at most N contexts (0: no limit) [40]
  --k=<N>|inf                 show the N-CCF (N <= the recorded k) [recorded k]
  --thread=<tid>|all          select one thread's forest [all]
  --join-threads              join all threads' forests into one
  --ksf                       print the k-Slab Forest (thesis style)
  --kccf                      print the k-Calling Context Forest (thesis style)
  --costs=yes|no              print Ir next to tree nodes [yes]
  --tree-order=sorted|natural sibling order in trees: by the sort key then
                              name, or the order of the file / of inv_k [sorted]
  --auto=yes|no               annotate the source files of the hottest contexts [no]
  --context=<N>               source lines of context around costly lines [8]
  -I, --include=<dir>         add a directory to the source search path
  --format=FORMAT             output format [text]:
      text        the hottest k-contexts of each thread (and what --ksf,
                  --kccf, --auto, --show-blocks ask for)
      json        everything: contexts, k-CCF, k-SF (docs/output-format.md)
      dot         Graphviz graph of the hottest contexts
      folded      flame-graph stacks: "a;b;c <exclusive Ir>"
      pprof       gzipped profile.proto for go tool pprof (binary; redirect it)
      speedscope  speedscope's JSON file format, one profile per thread
  --show-blocks               block modes: the table of all basic blocks
  --blocks-disasm             block modes: --show-blocks with each block's
                              instructions (objdump), targets named by block
  --version, -h/--help
Profiles given together are joined (k-SF join); their k and mode must agree.
Arguments ending in a source suffix (.c .cpp .h ...) are source files to annotate.
Exit status: 0 success, 2 bad usage or bad input.
EOT

sub is_source { $_[0] =~ /\.(?:c|cc|cpp|cxx|c\+\+|C|h|hh|hpp|hxx|H|inl|ipp|s|S|f|f90|F90|rs|go|m|mm)$/ }

sub parse_options {
    my @args = ([], []);
    my @argv = @_;
    my %o = (sort => 'Ir', threshold => 99, top => 40, costs => 'yes', 'tree-order' => 'sorted',
             auto => 'no', context => 8, include => [], format => 'text', thread => 'all');
    my @warn;
    {
        local $SIG{__WARN__} = sub { push @warn, $_[0] };
        # positional arguments in order: --vs starts the NEW side of --diff
        my $ok = GetOptionsFromArray(\@argv, \%o, 'sort=s', 'threshold=s', 'top=s', 'k=s', 'thread=s',
            'join-threads', 'ksf', 'kccf', 'costs=s', 'tree-order=s', 'auto=s', 'context=s',
            'include|I=s@', 'format=s', 'version', 'help|h', 'show-blocks', 'blocks-disasm',
            'names=s', 'callers', 'diff', 'normalize', 'fail-above=s',
            'vs' => sub { $o{vs}++ }, '<>' => sub { push @{$args[$o{vs} ? 1 : 0]}, "$_[0]" });
        push @{$args[$o{vs} ? 1 : 0]}, @argv;    # after '--'
        unless ($ok) {
            my $m = $warn[0] // "bad options\n";
            chomp $m;
            $m =~ s/^Unknown option: (.*)$/unknown option '--$1'/;
            fail("$m (see kgrind_annotate --help)");
        }
    }
    return \%o if $o{help} || $o{version};
    $o{'show-blocks'} = 1 if $o{'blocks-disasm'};
    my %sorts = (ir => 'Ir', calls => 'calls', inclusive => 'inclusive', incl => 'inclusive');
    $o{sort} = $sorts{lc $o{sort}} // fail("bad --sort value '$o{sort}' (Ir, calls or inclusive)");
    fail("bad --threshold value '$o{threshold}' (a percentage 0-100)")
        unless $o{threshold} =~ /^\d+(?:\.\d*)?$/ && $o{threshold} <= 100;
    fail("bad --top value '$o{top}' (a non-negative integer)") unless $o{top} =~ /^\d+$/;
    fail("bad --context value '$o{context}' (a non-negative integer)") unless $o{context} =~ /^\d+$/;
    fail("bad --k value '$o{k}' (a non-negative integer or inf)")
        if defined $o{k} && $o{k} !~ /^(?:\d+|inf)$/;
    fail("bad --thread value '$o{thread}' (a thread id or all)") unless $o{thread} =~ /^(?:\d+|all)$/;
    fail("bad --format value '$o{format}' (text, json, dot, folded, pprof or speedscope)")
        unless $o{format} =~ /^(?:text|json|dot|folded|pprof|speedscope)$/;
    # short names where people read them, full ones where programs do
    $o{names} //= $o{format} =~ /^(?:text|dot)$/ ? 'short' : 'full';
    fail("bad --names value '$o{names}' (short or full)") unless $o{names} =~ /^(?:short|full)$/;
    fail("--vs separates the two sides of --diff (--diff BASE... --vs NEW...)") if $o{vs} && !$o{diff};
    fail("--vs given twice") if ($o{vs} // 0) > 1;
    fail("--fail-above, --normalize: only with --diff") if !$o{diff} && ($o{normalize} || defined $o{'fail-above'});
    fail("bad --fail-above value '$o{'fail-above'}' (a percentage)")
        if defined $o{'fail-above'} && $o{'fail-above'} !~ /^\d+(?:\.\d*)?$/;
    fail("--callers: only with --format=folded") if $o{callers} && $o{format} ne 'folded';
    for my $yn (qw(costs auto)) {
        fail("bad --$yn value '$o{$yn}' (yes or no)") unless $o{$yn} =~ /^(?:yes|no)$/;
    }
    fail("bad --tree-order value '$o{'tree-order'}' (sorted or natural)")
        unless $o{'tree-order'} =~ /^(?:sorted|natural)$/;
    if ($o{diff}) {
        my ($base, $new) = @args;
        ($base, $new) = ([$base->[0]], [$base->[1]]) if !$o{vs} && @$base == 2;
        fail("--diff needs two profiles, BASE and NEW (several a side: --diff BASE... --vs NEW...)")
            unless @$base && @$new && defined $base->[0] && defined $new->[0];
        fail("--diff: no source annotation (source files given: $_)") for grep { is_source($_) } @$base, @$new;
        fail("--diff: --format=$o{format} is not a diff format (text, json or folded)")
            unless $o{format} =~ /^(?:text|json|folded)$/;
        @o{qw(base new profiles sources)} = ($base, $new, [@$base, @$new], []);
        return \%o;
    }
    my (@profiles, @sources);
    for my $a (map { @$_ } @args) {
        if (is_source($a)) { push @sources, $a }
        else { push @profiles, $a }
    }
    fail("no profile given (usage: kgrind_annotate [options] kgrind.out.<pid> ...; see --help)") unless @profiles;
    $o{profiles} = \@profiles;
    $o{sources} = \@sources;
    return \%o;
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

# ---------------------------------------------------------------------------
# Main computation: everything is built before anything is printed.
# ---------------------------------------------------------------------------
sub analyse {
    my ($o) = @_;
    # pprof and speedscope name each function's file and first line: the body has them
    my $want_src = $o->{auto} eq 'yes' || @{$o->{sources}} || $o->{format} =~ /^(?:pprof|speedscope)$/;
    my @P;
    for my $f (@{$o->{profiles}}) { push @P, read_profile($f, $want_src, $P[0]) }
    my $P0 = $P[0];
    check_merge($P0, $_) for @P[1 .. $#P];
    my $K = $P0->{k};
    my $kk = $K;
    if (defined $o->{k}) {
        $kk = $o->{k} eq 'inf' ? $INF : $o->{k} + 0;
        if ($K != $INF && ($kk == $INF || $kk > $K)) {
            fail("--k=$o->{k} is above the recorded k=$K of $P0->{file}: "
                 . "a k-SF only holds contexts of length up to k+1 (profile again with a larger --k)");
        }
    }
    # threads: merge same tids across files; join all when asked or when any file was joined
    my $join = $o->{'join-threads'} || grep { $_->{joined} eq 'yes' } @P;
    # intra mode: one forest per (thread, function); the key is "tid\0function"
    my (%by, @order, %fname);
    for my $P (@P) {
        for my $T (@{$P->{threads}}) {
            my $tid = $join ? 'all' : $T->{tid};
            my $key = defined $T->{fname} ? "$tid\0$T->{fname}" : $tid;
            $fname{$key} = $T->{fname};
            push @order, $key unless $by{$key};
            push @{$by{$key}}, $T;
        }
    }
    my $tid_of = sub { (split /\0/, $_[0])[0] };
    my @tids = do { my %s; grep { !$s{$_}++ } map { $tid_of->($_) } @order };
    if ($o->{thread} ne 'all') {
        if (!grep { $_ eq $o->{thread} } @tids) {
            fail("thread $o->{thread}: " . ($join ? "threads are joined in this profile (only thread 'all')"
                : "no such thread in " . join(', ', map { $_->{file} } @P)
                  . " (threads: " . join(', ', @tids) . ")"));
        }
        @order = grep { $tid_of->($_) eq $o->{thread} } @order;
    }
    # the k-CCF's trees are built only for the outputs that show them
    my $tree = $o->{kccf} || $o->{format} eq 'json' || $o->{format} eq 'dot';
    my @threads;
    my %pos;
    @pos{@order} = 0 .. $#order;
    my $tnum = sub { my $t = $tid_of->($_[0]); $t eq 'all' ? 0 : $t };
    for my $key (sort { $tnum->($a) <=> $tnum->($b) || $pos{$a} <=> $pos{$b} } @order) {
        my $tid = $tid_of->($key);
        my $F = join_forests($tid, @{$by{$key}});
        my $C = inv_k($F, $kk, $K, $o->{'tree-order'} eq 'natural', $tree);
        push @threads, { tid => $tid, F => $F, C => $C, ir => $F->{ir},
                         (defined $fname{$key} ? (fname => $fname{$key}) : ()) };
    }
    my $total = 0;
    $total += $_->{summary} // 0 for @P;
    my %S = (P => \@P, K => $K, kk => $kk, threads => \@threads, total => $total, joined => $join,
             ntids => scalar(@tids));
    fail("--show-blocks/--blocks-disasm: $P0->{file} is a function-mode profile (no basic blocks; "
         . "profile with --mode=intra or --mode=inter)") if $o->{'show-blocks'} && $P0->{mode} eq 'func';
    if ($P0->{mode} ne 'func') {
        $BLOCKMODE = 1;
        # the block table, merged by name over the profiles (counts summed)
        my %b;
        for my $P (@P) {
            for my $B (@{$P->{blocks}}) {
                if (my $x = $b{$B->{id}}) { $x->{count} += $B->{count} }
                else { $b{$B->{id}} = { %$B, name => $LNAME[$B->{id}], obj => $P } }
            }
        }
        $S{blocks} = [sort { $b->{count} <=> $a->{count} || $a->{addr} <=> $b->{addr} || $a->{name} cmp $b->{name} }
                      values %b];
    }
    push @KEEP, \%S;    # lives until the process exits: never freed piece by piece
    # source data of the selected threads
    if ($want_src) {
        my %tsel = map { $_ => 1 } @order;
        my (%src, %fnl);
        for my $P (@P) {
            for my $t (keys %{$P->{src}}) {
                next unless $t eq '' || $join || $tsel{$t};
                for my $f (keys %{$P->{src}{$t}}) {
                    my $h = $P->{src}{$t}{$f};
                    $src{$f}{$_} += $h->{$_} for keys %$h;
                    my $g = $P->{fnline}{$t}{$f};
                    for my $fn (keys %$g) {
                        $fnl{$f}{$fn} = $g->{$fn} if !defined $fnl{$f}{$fn} || $g->{$fn} < $fnl{$f}{$fn};
                    }
                }
            }
        }
        $S{src} = \%src;
        $S{fnline} = \%fnl;
    }
    return \%S;
}

# Sorting helpers: key of a context / node by --sort.
sub key_arrays {
    my ($sort, $C, $ctx) = @_;
    return $ctx ? ($sort eq 'calls' ? $C->{xcalls} : $sort eq 'inclusive' ? $C->{xincl} : $C->{xexcl})
                : ($sort eq 'calls' ? $C->{calls} : $sort eq 'inclusive' ? $C->{incl} : $C->{excl});
}

# Contexts sorted by the key (descending), then by path.  With a limit,
# only the contexts that can be among the first `limit` are fully sorted.
# Guttman-Rosler transform: one plain (C) string sort.
sub sorted_contexts {
    my ($o, $C, $limit) = @_;
    my $key = key_arrays($o->{sort}, $C, 1);
    my @ids = @{$C->{ctx}};
    if ($limit && @ids > $limit) {
        # the limit-th largest key, in one pass: a buffer of the largest keys
        # seen, cut back to `limit` whenever it holds 4 * limit
        my @buf = sort { $b <=> $a } map { $key->[$_] } @ids[0 .. $limit - 1];
        my $min = $buf[-1];
        for my $cid (@ids[$limit .. $#ids]) {
            next if $key->[$cid] <= $min;
            push @buf, $key->[$cid];
            if (@buf >= 4 * $limit) {
                @buf = (sort { $b <=> $a } @buf)[0 .. $limit - 1];
                $min = $buf[-1];
            }
        }
        my $cut = (sort { $b <=> $a } @buf)[$limit - 1];
        @ids = grep { $key->[$_] >= $cut } @ids;
    }
    my $max = 0;
    for (@ids) { $max = $key->[$_] if $key->[$_] > $max }
    my $w = length $max;
    my ($cpar, $cfn, $cch) = @$C{qw(par fn chain)};
    my @s;
    for my $cid (@ids) {
        my $s = sprintf('%0*d', $w, $max - $key->[$cid]);
        if ($cch) { $s .= "\0" . $LNAME[$_ - 1] for reverse unpack('N*', substr($cch->[$cid], 0, -8)) }
        else {
            my $u = $cid;
            while ($u >= 0) { $s .= "\0" . $LNAME[$cfn->[$u]]; $u = $cpar->[$u] }
        }
        push @s, "$s\0\0\0$cid";
    }
    @s = sort @s;
    return [map { substr($_, rindex($_, "\0") + 1) } @s];
}

# Children (or roots) in display order.
sub tree_kids {
    my ($o, $T) = @_;
    my ($roots, $kids) = children_of($T->{par});
    if ($o->{'tree-order'} eq 'natural' && (my $first = $T->{first})) {
        my $srt = sub { [sort { $first->[$a] <=> $first->[$b] } @{$_[0]}] };
        $roots = $srt->($roots);
        for my $k (@$kids) { $k = $srt->($k) if $k && @$k > 1 }
    } elsif ($o->{'tree-order'} eq 'sorted') {
        my $key = key_arrays($o->{sort}, $T, 0);
        my $fn = $T->{fn};
        my $srt = sub { [sort { $key->[$b] <=> $key->[$a] || $LNAME[$fn->[$a]] cmp $LNAME[$fn->[$b]] } @{$_[0]}] };
        $roots = $srt->($roots);
        for my $k (@$kids) { $k = $srt->($k) if $k && @$k > 1 }
    }
    return ($roots, $kids);
}

sub has_costs {
    my ($T) = @_;
    for my $v (0 .. $T->{n} - 1) { return 1 if $T->{excl}[$v] || $T->{incl}[$v] }
    return 0;
}

# Function names get "()" (thesis style); block names ({foo+12 at prog4.c:14}
# and __root__) are printed as they are.
sub fmt_name { my $n = shift; $n =~ /\)\z/ || $BLOCKMODE ? $n : "$n()" }

sub print_tree {
    my ($o, $T, $out) = @_;
    my ($roots, $kids) = tree_kids($o, $T);
    my $costs = $o->{costs} eq 'yes' && has_costs($T);
    my ($fn, $cal, $exc, $inc) = @$T{qw(fn calls excl incl)};
    my @stack = map { [$_, 0] } reverse @$roots;
    while (@stack) {
        my ($v, $d) = @{pop @stack};
        my $l = ('  ' x $d) . '| ' . fmt_name($LNAME[$fn->[$v]]) . ",$cal->[$v]";
        $l .= "  [Ir $exc->[$v], incl $inc->[$v]]" if $costs;
        push @$out, $l;
        push @stack, map { [$_, $d + 1] } reverse @{$kids->[$v]} if $kids->[$v];
    }
}

sub pct { my ($a, $b) = @_; $b ? sprintf('%.2f%%', 100 * $a / $b) : '-' }

sub commify { my $n = reverse shift; $n =~ s/(\d{3})(?=\d)/$1,/g; scalar reverse $n }

# Contexts to show in the table: --threshold (cumulative share of the sort
# key over all contexts) and --top.
sub shown_contexts {
    my ($o, $C, $sorted) = @_;
    my $key = key_arrays($o->{sort}, $C, 1);
    my $sum = 0;
    $sum += $key->[$_] for @{$C->{ctx}};
    my @show;
    my $cum = 0;
    for my $cid (@$sorted) {
        last if $o->{top} && @show >= $o->{top};
        last if $sum && $o->{threshold} < 100 && 100 * $cum / $sum >= $o->{threshold};
        push @show, $cid;
        $cum += $key->[$cid];
    }
    return (\@show, $sum);
}

sub ctx_str { join(' > ', @{ctx_path(@_)}) }

# ---------------------------------------------------------------------------
# Text output.
# ---------------------------------------------------------------------------
sub out_text {
    my ($o, $S) = @_;
    my @out;
    my $rule = '-' x 80;
    my @P = @{$S->{P}};
    my $P0 = $P[0];
    push @out, $rule;
    push @out, (@P > 1 ? 'Profile data files: ' : 'Profile data file: ') . join(', ', map { $_->{file} } @P)
        . ' (creator: ' . ($P0->{creator} // '?') . ')';
    push @out, $rule;
    my %cmds = map { ($_->{cmd} // '?') => 1 } @P;
    push @out, sprintf('%-22s%s', 'Command:', join(' | ', sort keys %cmds));
    push @out, sprintf('%-22s%s', 'PID:', join(', ', map { $_->{pid} // '?' } @P));
    push @out, sprintf('%-22s%s', 'K value:', kstr($S->{kk}) . ($S->{kk} != $S->{K} ? ' (recorded k: ' . kstr($S->{K}) . ')' : ''));
    if ($BLOCKMODE) {
        push @out, sprintf('%-22s%s', 'Mode:', $P0->{mode} . ($P0->{mode} eq 'intra'
            ? ' (basic blocks, one k-SF per thread and function)' : ' (basic blocks, one k-SF per thread)')
            . ($P0->{roll} eq 'yes' ? ', loops rolled' : ', loops not rolled'));
    } else {
        push @out, sprintf('%-22s%s', 'Mode:', $P0->{mode} . ($P0->{rolling} eq 'yes' ? ', simple recursion rolled' : ', simple recursion unrolled'));
    }
    my $nthr = 0;
    if ($BLOCKMODE) { my %t; $t{$_->{tid}} = 1 for map { @{$_->{threads}} } @P; $nthr = keys %t }
    else { $nthr += @{$_->{threads}} for @P }
    my $tool_joined = grep { $_->{joined} eq 'yes' } @P;
    my $thr_desc = $tool_joined ? 'joined when profiling (thread all)'
                 : $S->{joined} ? "$nthr, joined by kgrind_annotate (thread all)"
                 : "$nthr, " . ($BLOCKMODE ? $S->{ntids} : scalar(@{$S->{threads}})) . ' shown';
    push @out, sprintf('%-22s%s', 'Threads:', $thr_desc);
    push @out, sprintf('%-22s%s', 'Events:', 'Ir');
    push @out, sprintf('%-22s%s', 'Total Ir:', commify($S->{total}));
    push @out, '', 'No basic block of a traced function ran: the block modes trace the functions of '
        . '--funcs (by default the main executable\'s); pass --funcs to trace library code.'
        if $BLOCKMODE && !grep { $_->{F}{n} > ($P0->{mode} eq 'inter' ? 1 : 0) } @{$S->{threads}};
    for my $t (@{$S->{threads}}) {
        push @out, sprintf('%-22s%s', "Thread $t->{tid}" . (defined $t->{fname} ? ", $t->{fname}: " : ':'),
            'Ir ' . commify($t->{ir})
            . ", k-SF nodes $t->{F}{n}, " . kstr($S->{kk}) . "-CCF nodes $t->{C}{n}");
    }
    my @hot;    # contexts shown, for source annotation
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my $want_src = $o->{auto} eq 'yes' || @{$o->{sources}};
        my $sorted = sorted_contexts($o, $C, $want_src ? 0 : $o->{top});
        my ($show, $sum) = shown_contexts($o, $C, $sorted);
        push @hot, [$t, $sorted];
        push @out, '', $rule;
        push @out, sprintf('Hottest %s-contexts, thread %s: %d of %d shown (sorted by %s; threshold %s%%%s)',
            kstr($S->{kk}) . ($BLOCKMODE ? ' block' : ''), forest_desc($t), scalar(@$show), scalar(@{$C->{ctx}}), $o->{sort}, $o->{threshold},
            $o->{top} ? ", top $o->{top}" : '');
        push @out, $rule;
        my $pk = $o->{sort} eq 'calls' ? '%calls' : $o->{sort} eq 'inclusive' ? '%incl' : '%Ir';
        my $den = $o->{sort} eq 'calls' ? $sum : $t->{ir};
        push @out, sprintf('%15s %8s %15s %12s  %s', 'Ir', $pk, 'incl Ir', 'calls', 'context');
        my $key = key_arrays($o->{sort}, $C, 1);
        for my $cid (@$show) {
            push @out, sprintf('%15s %8s %15s %12s  %s', commify($C->{xexcl}[$cid]), pct($key->[$cid], $den),
                commify($C->{xincl}[$cid]), commify($C->{xcalls}[$cid]), ctx_str($C, $cid));
        }
        if ($o->{ksf}) {
            push @out, '', $rule, "DUMP of K-SF (k=" . kstr($S->{K}) . ", thread " . forest_desc($t) . ", $t->{F}{n} nodes)", $rule;
            print_tree($o, $t->{F}, \@out);
        }
        if ($o->{kccf}) {
            push @out, '', $rule, "DUMP of K-CCF (k=" . kstr($S->{kk}) . ", thread " . forest_desc($t) . ", $C->{n} nodes)", $rule;
            print_tree($o, ccf_counters($C), \@out);
        }
    }
    show_blocks($o, $S, \@out) if $o->{'show-blocks'};
    annotate_sources($o, $S, \@hot, \@out) if $o->{auto} eq 'yes' || @{$o->{sources}};
    return join("\n", @out) . "\n";
}

# ---------------------------------------------------------------------------
# Block modes: the table of all blocks (--show-blocks) and their
# instructions (--blocks-disasm, thesis Listing 4.15).
# ---------------------------------------------------------------------------
sub show_blocks {
    my ($o, $S, $out) = @_;
    my $rule = '-' x 80;
    my $B = $S->{blocks};
    push @$out, '', $rule, 'All basic blocks: ' . scalar(@$B) . ' (sorted by execution count, then address)', $rule;
    my $dis = $o->{'blocks-disasm'} ? disasm_blocks($S) : undef;
    push @$out, @{$dis->{notes}} if $dis;
    push @$out, sprintf('%12s  %-18s  %s', 'count', 'address', 'block [function, file:line]');
    for my $b (@$B) {
        push @$out, sprintf('%12s  %-18s  %s [%s, %s:%d]', commify($b->{count}), sprintf('0x%x', $b->{addr}),
                            $b->{name}, $b->{fn}, $b->{file}, $b->{line});
        next unless $dis;
        my $ins = $dis->{blocks}{$b->{id}};
        push @$out, $ins ? ('  Disassembly:', map { "    $_" } @$ins) : '  Disassembly: not available';
    }
}

# The object file of each block's function: the profile's ob= line above the
# function's fn= lines in the callgrind body; without one (or for a function
# the body does not name), the cmd: executable, relative paths taken from the
# profile's directory.
sub object_of_fns {
    my ($P) = @_;
    return $P->{fnob} if $P->{fnob};
    my %fnob;
    my (%name, $ob);
    if (open(my $fh, '<:raw', $P->{file})) {
        while (my $l = <$fh>) {
            last if index($l, '# ksf-') == 0;
            next unless $l =~ /^(c?ob|c?fn|fl|fi|fe|cfi|cfl)=(?:\((\d+)\))?[ ]*([^\r\n]*)$/;
            my ($key, $id, $n) = ($1, $2, $3);
            my $sp = $key =~ /ob/ ? 'ob' : $key =~ /fn/ ? 'fn' : 'fl';
            if (defined $id) { if ($n ne '') { $name{$sp}{$id} = $n } else { $n = $name{$sp}{$id} // '' } }
            if ($key eq 'ob') { $ob = $n }
            elsif ($key eq 'fn' && defined $ob && $ob ne '???') { $fnob{base_name($n)} //= $ob }
        }
        close $fh;
    }
    return $P->{fnob} = \%fnob;
}

sub exe_of {
    my ($P) = @_;
    my ($exe) = split ' ', $P->{cmd} // '';
    return undef unless defined $exe && $exe ne '';
    return $exe if File::Spec->file_name_is_absolute($exe);
    my (undef, $dir) = File::Spec->splitpath(File::Spec->rel2abs($P->{file}));
    return File::Spec->catfile($dir, $exe);
}

sub disasm_blocks {
    my ($S) = @_;
    my (@notes, %ins);
    my $ok = `objdump --version 2>/dev/null`;
    unless ($? == 0 && $ok) {
        return { notes => ['-- objdump not found: no disassembly of the blocks'], blocks => {} };
    }
    # blocks by object file
    my %byobj;
    for my $b (@{$S->{blocks}}) {
        my $ob = object_of_fns($b->{obj})->{$b->{fn}} // exe_of($b->{obj});
        push @{$byobj{$ob // '?'}}, $b;
    }
    for my $ob (sort keys %byobj) {
        unless ($ob ne '?' && -f $ob) {
            push @notes, "-- object file '$ob' not found: no disassembly of its " . scalar(@{$byobj{$ob}}) . ' block(s)';
            next;
        }
        # function symbols: name -> [address, size]
        my %sym;
        my $q = $ob; $q =~ s/'/'\\''/g;
        for my $l (`objdump -t '$q' 2>/dev/null`) {
            next unless $l =~ /^([0-9a-f]+) .{7} (\S+)\t([0-9a-f]+)\s+(?:\.hidden\s+)?(\S+)\s*$/;
            my ($a, $sec, $sz, $n) = (hex $1, $2, hex $3, $4);
            next unless substr($l, 23, 1) eq 'F' || $sz;
            $sym{$n} //= [$a, $sz];
        }
        my (%fnblocks, %target);
        for my $b (@{$byobj{$ob}}) {
            my $s = $sym{$b->{fn}};
            unless ($s) { push @notes, "-- $b->{name}: no symbol '$b->{fn}' in '$ob': no disassembly"; next }
            $b->{faddr} = $s->[0] + $b->{offset};
            $target{$b->{faddr}} = $b->{name};
            push @{$fnblocks{$b->{fn}}}, $b;
        }
        for my $fn (sort keys %fnblocks) {
            my ($start, $size) = @{$sym{$fn}};
            my @bl = sort { $a->{faddr} <=> $b->{faddr} } @{$fnblocks{$fn}};
            my $stop = $start + ($size || 1);
            $stop = $bl[-1]{faddr} + 64 if $stop <= $bl[-1]{faddr};
            my @lines = `objdump -d -M intel --no-show-raw-insn --start-address=0x@{[sprintf '%x', $start]} --stop-address=0x@{[sprintf '%x', $stop]} '$q' 2>/dev/null`;
            my @insn;    # [address, text]
            for my $l (@lines) {
                next unless $l =~ /^\s*([0-9a-f]+):\s+(\S.*?)\s*$/;
                push @insn, [hex $1, $2];
            }
            for my $i (0 .. $#bl) {
                my $b = $bl[$i];
                my $next = $i < $#bl ? $bl[$i + 1]{faddr} : $stop;
                my @out;
                for my $x (@insn) {
                    next if $x->[0] < $b->{faddr};
                    last if $x->[0] >= $next && @out;
                    my $t = $x->[1];
                    $t =~ s/\b([0-9a-f]+) <[^>]*>/defined $target{hex $1} ? $target{hex $1} : $&/ge;
                    push @out, $t;
                    # a block ends at its first jump, call or return
                    last if $x->[1] =~ /^(?:(?:bnd|notrack|rep[a-z]*)\s+)*(?:j[a-z]+|call[a-z]*|ret[a-z]*|hlt|ud2)\b/;
                }
                $ins{$b->{id}} = \@out if @out;
            }
        }
    }
    return { notes => \@notes, blocks => \%ins };
}

# "1" or, for an intra forest, "1, function foo".
sub forest_desc { my $t = shift; $t->{tid} . (defined $t->{fname} ? ", function $t->{fname}" : '') }

# ---------------------------------------------------------------------------
# Source annotation.
# ---------------------------------------------------------------------------
sub find_source {
    my ($o, $name, $P0) = @_;
    my @cand;
    if (File::Spec->file_name_is_absolute($name)) { push @cand, $name }
    else {
        push @cand, $name;
        my ($vol, $dir) = File::Spec->splitpath($P0->{file});
        push @cand, File::Spec->catfile($dir, $name) if $dir ne '';
    }
    (my $rel = $name) =~ s{^/+}{};
    my @parts = File::Spec->splitdir($rel);
    for my $d (@{$o->{include}}) {
        for my $i (0 .. $#parts) { push @cand, File::Spec->catfile($d, @parts[$i .. $#parts]) }
    }
    for my $c (@cand) { return $c if -f $c && -r _ }
    return undef;
}

sub annotate_sources {
    my ($o, $S, $hot, $out) = @_;
    my $src = $S->{src} // {};
    my $fnline = $S->{fnline} // {};
    my $rule = '-' x 80;
    my $P0 = $S->{P}[0];
    my $pmtime = (sort { $a <=> $b } map { $_->{mtime} // 0 } @{$S->{P}})[0];
    # files: explicit ones, and with --auto the files of the functions in the shown tables
    my @files;
    my %seen;
    for my $s (@{$o->{sources}}) {
        my ($match) = grep { $_ eq $s } keys %$src;
        ($match) = sort grep { m{(?:^|/)\Q$s\E$} || $s =~ m{(?:^|/)\Q$_\E$} } keys %$src unless $match;
        push @files, [$s, $match];
        $seen{$match // $s} = 1;
    }
    if ($o->{auto} eq 'yes') {
        my %fns;
        for my $h (@$hot) {
            my ($t, $sorted) = @$h;
            my ($show) = shown_contexts($o, $t->{C}, $sorted);
            $fns{$LNAME[ctx_fn($t->{C}, $_)]} = 1 for @$show;
        }
        for my $f (sort keys %$src) {
            next if $seen{$f} || $f eq '???';
            next unless grep { $fns{$_} } keys %{$fnline->{$f} // {}};
            push @files, [$f, $f];
            $seen{$f} = 1;
        }
    }
    # hottest contexts of each function, over the shown threads
    my %byfn;
    for my $h (@$hot) {
        my ($t, $sorted) = @$h;
        my $C = $t->{C};
        for my $cid (@$sorted) {
            my $fname = $LNAME[ctx_fn($C, $cid)];
            my $l = $byfn{$fname} //= [];
            push @$l, [$t, $cid] if @$l < 5;
        }
    }
    for my $e (@files) {
        my ($name, $key) = @$e;
        my $lines = $key ? $src->{$key} : {};
        my $path = find_source($o, $key // $name, $P0);
        $path //= find_source($o, $name, $P0) if $key && $key ne $name;
        push @$out, '', $rule;
        unless ($path) {
            push @$out, "-- Source file '" . ($key // $name) . "' not found"
                . (@{$o->{include}} ? ' (searched -I ' . join(', ', @{$o->{include}}) . ')' : ' (add its directory with -I)');
            next;
        }
        push @$out, "-- Annotated source: $path", $rule;
        my @text;
        if (open(my $fh, '<:raw', $path)) { @text = <$fh>; close $fh; chomp @text }
        else { pop @$out; push @$out, "-- Source file '$path' cannot be read: $!"; next }
        my $smtime = (stat $path)[9];
        push @$out, "WARNING: source file '$path' is newer than the profile '$P0->{file}': the annotation may be wrong"
            if defined $smtime && defined $pmtime && $smtime > $pmtime;
        my %first;    # line -> [functions starting there]
        for my $fn (sort keys %{$fnline->{$key // ''} // {}}) { push @{$first{$fnline->{$key}{$fn}}}, $fn }
        push @$out, sprintf('%15s  %s', 'Ir', 'source line');
        my %want;
        for my $l (keys %$lines, keys %first) {
            $want{$_} = 1 for ($l - $o->{context}) .. ($l + $o->{context});
        }
        my $n = @text;
        my $prev = 0;
        for my $i (1 .. $n) {
            next unless $want{$i};
            push @$out, "-- line $i " . ('-' x 40) if $i != $prev + 1;
            $prev = $i;
            if ($first{$i}) {
                for my $fn (@{$first{$i}}) {
                    next unless $byfn{$fn};
                    my $k = kstr($S->{kk});
                    push @$out, sprintf('%15s  // hottest %s-contexts of %s:', '', $k, $fn);
                    for my $h (@{$byfn{$fn}}) {
                        my ($t, $cid) = @$h;
                        my $C = $t->{C};
                        push @$out, sprintf('%15s  //   %s: Ir %s (%s), incl %s, calls %s%s', '', ctx_str($C, $cid),
                            commify($C->{xexcl}[$cid]), pct($C->{xexcl}[$cid], $t->{ir}),
                            commify($C->{xincl}[$cid]), commify($C->{xcalls}[$cid]),
                            @{$S->{threads}} > 1 ? ", thread $t->{tid}" : '');
                    }
                }
            }
            my $ir = $lines->{$i};
            push @$out, sprintf('%15s  %s', defined $ir ? commify($ir) : '.', $text[$i - 1]);
        }
        my @beyond = grep { $_ > $n } sort { $a <=> $b } keys %$lines;
        push @$out, "-- " . scalar(@beyond) . " line(s) with cost beyond the end of the file (last: $beyond[-1]): "
            . "the source probably changed since the profile" if @beyond;
    }
}

# Root (activated function) of context cid in the CCF.
sub base_root { my ($C, $cid) = @_; $cid = $C->{par}[$cid] while $C->{par}[$cid] >= 0; $cid }
# Activated function (label id) of context cid.
sub ctx_fn {
    my ($C, $cid) = @_;
    return unpack('N', $C->{chain}[$cid]) - 1 if $C->{chain};
    return $C->{fn}[base_root($C, $cid)];
}

# ---------------------------------------------------------------------------
# JSON output.
# ---------------------------------------------------------------------------
sub js {
    my $s = shift;
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/([\x00-\x1f\x7f])/sprintf('\\u%04x', ord $1)/ge;
    return "\"$s\"";
}

sub json_tree {
    my ($o, $T, $kidkey) = @_;
    my ($roots, $kids) = tree_kids($o, $T);
    my ($fn, $cal, $exc, $inc) = @$T{qw(fn calls excl incl)};
    my $rec;
    $rec = sub {
        my $v = shift;
        my $s = '{"name":' . js($LNAME[$fn->[$v]]) . ',"calls":' . $cal->[$v] . ',"Ir":' . $exc->[$v]
              . ',"inclusive":' . $inc->[$v];
        $s .= ",\"$kidkey\":[" . join(',', map { $rec->($_) } @{$kids->[$v]}) . ']' if $kids->[$v];
        return $s . '}';
    };
    my $r = '[' . join(',', map { $rec->($_) } @$roots) . ']';
    undef $rec;
    return $r;
}

sub out_json {
    my ($o, $S) = @_;
    my @P = @{$S->{P}};
    my $P0 = $P[0];
    my $kj = sub { $_[0] == $INF ? '"inf"' : $_[0] };
    my $pid = $P0->{pid} // 0;
    $pid = 0 unless $pid =~ /^\d+$/;
    my $s = '{"version":1,"tool":"kgrind","creator":' . js($P0->{creator} // '') . ',"files":['
        . join(',', map { js($_->{file}) } @P) . '],"cmd":' . js($P0->{cmd} // '') . ",\"pid\":$pid,\"pids\":["
        . join(',', map { ($_->{pid} // '') =~ /^\d+$/ ? $_->{pid} : 0 } @P) . '],"k":' . $kj->($S->{kk})
        . ',"recorded_k":' . $kj->($S->{K}) . ',"mode":' . js($P0->{mode}) . ',"rolling":'
        . ($P0->{rolling} eq 'yes' ? 'true' : 'false') . ',"joined":' . ($S->{joined} ? 'true' : 'false')
        . ',"events":["Ir"],"total":{"Ir":' . $S->{total} . '},"sort":' . js($o->{sort});
    if ($BLOCKMODE) {
        $s .= ',"roll_loops":' . ($P0->{roll} eq 'yes' ? 'true' : 'false') . ',"blocks":['
            . join(',', map { '{"name":' . js($_->{name}) . ',"address":' . js(sprintf('0x%x', $_->{addr}))
                . ',"count":' . $_->{count} . ',"function":' . js($_->{fn}) . ',"offset":' . $_->{offset}
                . ',"file":' . js($_->{file}) . ',"line":' . $_->{line} . '}' } @{$S->{blocks}}) . ']';
    }
    $s .= ',"threads":[';
    my @th;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my $tid = $t->{tid} eq 'all' ? '"all"' : $t->{tid};
        my $sorted = sorted_contexts($o, $C);
        my $ctx = join(',', map {
            '{"path":[' . join(',', map { js($_) } @{ctx_path($C, $_)}) . '],"calls":' . $C->{xcalls}[$_]
            . ',"Ir":' . $C->{xexcl}[$_] . ',"inclusive":' . $C->{xincl}[$_] . '}'
        } @$sorted);
        push @th, "{\"tid\":$tid," . (defined $t->{fname} ? '"function":' . js($t->{fname}) . ',' : '') . "\"Ir\":$t->{ir},\"ksf_nodes\":$t->{F}{n},\"kccf_nodes\":$C->{n},"
            . "\"contexts\":[$ctx],\"kccf\":" . json_tree($o, ccf_counters($C), 'callers') . ',"ksf":' . json_tree($o, $t->{F}, 'children') . '}';
    }
    return $s . join(',', @th) . "]}\n";
}

# ---------------------------------------------------------------------------
# Folded stacks and Graphviz.
# ---------------------------------------------------------------------------
sub out_folded {
    my ($o, $S) = @_;
    my %sum;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        for my $cid (@{$C->{ctx}}) {
            next unless $C->{xexcl}[$cid];
            $sum{join(';', map { my $x = $_; $x =~ s/[;\s]+/_/g; $x } @{ctx_path($C, $cid)})} += $C->{xexcl}[$cid];
        }
    }
    return join('', map { "$_ $sum{$_}\n" } sort keys %sum);
}

sub dq { my $s = shift; $s =~ s/(["\\])/\\$1/g; $s =~ s/\n/\\n/g; "\"$s\"" }

sub out_dot {
    my ($o, $S) = @_;
    my @out = ('digraph kgrind {', '  rankdir=LR;', '  node [shape=box, style=filled, fontname="Helvetica"];',
               '  label=' . dq('hottest ' . kstr($S->{kk}) . "-contexts of $S->{P}[0]{file} (sorted by $o->{sort}); "
                   . 'arrows go from caller to callee') . ';');
    for my $t (@{$S->{threads}}) {
        my $C = ccf_counters($t->{C});
        my $sorted = sorted_contexts($o, $C, $o->{top});
        my ($show) = shown_contexts($o, $C, $sorted);
        my (%node, %edge, %hotend);
        for my $cid (@$show) {
            $hotend{$cid} = 1;
            my $u = $cid;
            while ($u >= 0) { $node{$u} = 1; my $p = $C->{par}[$u]; $edge{"$u $p"} = 1 if $p >= 0; $u = $p }
        }
        my $tt = $t->{tid};
        push @out, "  subgraph \"cluster_t$tt\" {", '    label=' . dq("thread $tt") . ';';
        for my $u (sort { $a <=> $b } keys %node) {
            my $share = $t->{ir} ? $C->{excl}[$u] / $t->{ir} : 0;
            my $col = sprintf('#ff%02x%02x', 255 - int(200 * $share), 255 - int(200 * $share));
            push @out, sprintf('    "t%s_%d" [label=%s, fillcolor="%s"%s];', $tt, $u,
                dq(fmt_name($LNAME[$C->{fn}[$u]]) . "\ncalls $C->{calls}[$u]\nIr $C->{excl}[$u] / incl $C->{incl}[$u]"),
                $col, $hotend{$u} ? ', penwidth=2' : '');
        }
        for my $e (sort keys %edge) {
            my ($u, $p) = split ' ', $e;
            push @out, sprintf('    "t%s_%d" -> "t%s_%d" [label="%s"];', $tt, $u, $tt, $p, $C->{calls}[$u]);
        }
        push @out, '  }';
    }
    return join("\n", @out, '}') . "\n";
}

# ---------------------------------------------------------------------------
# The exporters (perl/lib/KGrind/Export/*.pm) share one interface,
# write(\%model, $out_fh, \%options), over the model below: the selected
# threads' k-contexts with names as --names asks.
# ---------------------------------------------------------------------------
my %EXPORTER = (pprof => 'KGrind::Export::Pprof', speedscope => 'KGrind::Export::Speedscope');

sub load_module {
    my ($module) = @_;
    (my $file = "$module.pm") =~ s{::}{/}g;
    eval { require $file; 1 } or fail("cannot load $module (kgrind_annotate's modules are not installed "
                                      . "with it?): " . (split /\n/, $@)[0]);
    return $module;
}

sub display_name { my ($o, $n) = @_; $o->{names} eq 'short' ? KGrind::Names::short_name($n) : $n }

# Each function's source file and first costly line, from the callgrind body.
sub function_sources {
    my ($S) = @_;
    my %src;
    for my $P (@{$S->{P}}) {
        for my $fn (keys %{$P->{fnfile} // {}}) {
            my $file = $P->{fnfile}{$fn};
            next if $src{$fn} || $file eq '???';
            $src{$fn} = { file => $file, line => ($S->{fnline}{$file}{$fn} // 0) + 0 };
        }
    }
    return \%src;
}

sub export_model {
    my ($o, $S) = @_;
    my $P0 = $S->{P}[0];
    my $name = sub { display_name($o, $_[0]) };
    my @threads;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        push @threads, { tid => $t->{tid}, Ir => $t->{ir} + 0, contexts => [map {
            { path => [map { $name->($_) } @{ctx_path($C, $_)}], calls => $C->{xcalls}[$_] + 0,
              Ir => $C->{xexcl}[$_] + 0, inclusive => $C->{xincl}[$_] + 0 }
        } @{sorted_contexts($o, $C)}] };
    }
    my $src = function_sources($S);
    my %sources = map { ($name->($_) => $src->{$_}) } keys %$src;
    my ($program) = split ' ', $P0->{cmd} // '';
    my $k = kstr($S->{kk});
    return { k => $k, recorded_k => kstr($S->{K}), root => $ROOT_NAME, total => $S->{total},
             files => [map { $_->{file} } @{$S->{P}}], cmd => $P0->{cmd} // '', program => $program,
             creator => $P0->{creator} // '', exporter => "kgrind_annotate\@$VERSION", threads => \@threads, sources => \%sources,
             comments => ["kgrind k-contexts (k=$k) of " . join(', ', map { $_->{file} } @{$S->{P}})
                          . ': one sample per thread and context',
                          $k eq 'inf' ? 'stacks are full calling contexts'
                          : "a stack whose outermost frame is [truncated k=$k] lacks its outer callers"] };
}

sub run_exporter {
    my ($module, $model, $o) = @_;
    my $out = '';
    open(my $fh, '>:raw', \$out) or fail("cannot write to memory: $!");
    my $ok = eval { load_module($module)->can('write')->($model, $fh, $o); 1 };
    unless ($ok) { die $@ if ref $@; fail("$o->{format}: " . (split /\n/, $@)[0]) }
    close $fh;
    return $out;
}

sub export {
    my ($o, $S) = @_;
    fail("--format=$o->{format}: function-mode profiles only ($S->{P}[0]{file} has mode $S->{P}[0]{mode})")
        if $BLOCKMODE;
    return run_exporter($EXPORTER{$o->{format}}, export_model($o, $S), $o);
}

# ---------------------------------------------------------------------------
sub main {
    my $o = parse_options(@_);
    if ($o->{help}) { print $USAGE; return 0 }
    if ($o->{version}) { print "kgrind_annotate $VERSION\n"; return 0 }
    load_module('KGrind::Names');
    my $S = analyse($o);
    my $text = $EXPORTER{$o->{format}} ? export($o, $S)
             : $o->{format} eq 'json' ? out_json($o, $S)
             : $o->{format} eq 'dot' ? out_dot($o, $S)
             : $o->{format} eq 'folded' ? out_folded($o, $S)
             : out_text($o, $S);
    binmode STDOUT, ':raw';
    local $SIG{PIPE} = 'IGNORE';
    print $text or ($!{EPIPE} ? return 0 : fail("cannot write the output: $!"));
    close STDOUT or ($!{EPIPE} ? return 0 : fail("cannot write the output: $!"));
    return 0;
}

unless (caller) {
    my $rc = eval { main(@ARGV) };
    if (!defined $rc) {
        my $e = $@;
        my $m = ref $e eq 'KG::Error' ? $e->{msg} : "internal error: $e";
        $m =~ s/\s+\z//;
        print STDERR "kgrind_annotate: $m\n";
        exit 2;
    }
    exit $rc;
}
1;
