package KGrind::Read::Records;
# The k-SF records of a profile (docs/output-format.md): "# ksf-version",
# "# ksf-options", the function table (ksf-fn, ksf-fns), the block modes'
# files and blocks (ksf-file, ksf-block), each thread's forest between
# "# ksf-thread" and "# ksf-end-thread" (its node records: KGrind::Read::Lists
# and KGrind::Read::Stream; checked by KGrind::Check::Forest when it ends),
# and "# ksf-end".  $R is the reader's state (KGrind::Profile).
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use Digest::SHA ();
use KGrind::Error;
use KGrind::Labels;
use KGrind::Columns qw(columns_digest);
use KGrind::Check::Forest;
use KGrind::Read::Lists;
use KGrind::Read::Stream;
use KGrind::Read::Events;

our @EXPORT = qw(record_line);
our @EXPORT_OK = qw(table_name check_merge);

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

# A "# ksf-" line other than the node records.
sub record_line {
    my ($R, $l, $ln) = @_;
    my ($file, $P, $version) = @$R{qw(file P version)};
    ferr($file, $ln, "k-SF record after '# ksf-end'") if $R->{seen_end};
    # a thread's records first: two lines a thread
    if (index($l, '# ksf-end-thread ') == 0 && $l =~ /^# ksf-end-thread (\d+|all)$/) {
        thread_end($R, $ln, $1);
    } elsif (index($l, '# ksf-thread ') == 0 && $l =~ /^# ksf-thread (\d+|all) nodes=(\d+) ir=(\d+)(?: fn=(\d+))?$/) {
        thread_start($R, $ln, $1, $2, $3, $4);
    } elsif ($l =~ /^# ksf-version: (\d+)$/) {
        ferr($file, $ln, "unsupported k-SF record version $1 (this kgrind_annotate reads versions 1 to 3)")
            if $1 < 1 || $1 > 3;
        $R->{version} = $1 + 0;
        $R->{seen_version} = 1;
    } elsif ($l =~ /^# ksf-options: (.*)$/) {
        options_record($R, $1, $ln);
    } elsif ($l =~ /^# ksf-fn (\d+) (.+)$/) {
        ferr($file, $ln, "ksf-fn record in a version $version file (version $version has ksf-fns)") if $version >= 2;
        ferr($file, $ln, "ksf-fn id $1 out of order (expected " . scalar(@{$R->{fnmap}}) . ")") if $1 != @{$R->{fnmap}};
        add_function($R, $ln, $2);
    } elsif (index($l, '# ksf-fns ') == 0) {
        ferr($file, $ln, "ksf-fns record in a version 1 file") if $version == 1;
        # a line repeated (its names twice, in order) would shift every later id
        ferr($file, $ln, "ksf-fns line repeats the previous one (duplicated record)")
            if defined $R->{prev_fns} && $R->{prev_fns} eq $l && index($l, "\t") >= 0;
        $R->{prev_fns} = $l;
        for my $entry (split /\t/, substr($l, 10), -1) {
            my $name = table_name($entry, $version, $R->{names}{fn});
            ferr($file, $ln, "ksf-fns: '", printable($entry), "' names no function of the callgrind body")
                unless defined $name;
            add_function($R, $ln, $name);
        }
    } elsif ($l =~ /^# ksf-file (\d+) (.+)$/) {
        ferr($file, $ln, "ksf-file in a function-mode profile") unless $P->{blocks};
        ferr($file, $ln, "ksf-file id $1 out of order (expected " . scalar(@{$R->{fname}}) . ")") if $1 != @{$R->{fname}};
        push @{$R->{fname}}, $2;
    } elsif ($l =~ /^# ksf-block /) {
        block_record($R, $l, $ln);
    } elsif (index($l, '# ksf-events ') == 0) {
        event_stream($R, $l, $ln);
    } elsif ($l eq '# ksf-end') {
        ferr($file, $ln, "ksf-end inside thread $R->{thread}{tid} (no ksf-end-thread)") if $R->{thread};
        ferr($file, $ln, "ksf-end without ksf-version") unless $R->{seen_version};
        $R->{seen_end} = $ln;
    } else {
        ferr($file, $ln, "unknown or malformed k-SF record: '", printable($l), "'");
    }
}

sub options_record {
    my ($R, $fields, $ln) = @_;
    my ($file, $P) = @$R{qw(file P)};
    ferr($file, $ln, "ksf-options before ksf-version") unless $R->{seen_version};
    my %o;
    for my $kv (split / /, $fields) {
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
    $P->{k} = $o{k} eq 'inf' ? $INF : $o{k} + 0;
    @$P{qw(mode rolling joined)} = @o{qw(mode rolling joined)};
    $P->{roll} = $o{'roll-loops'} // 'no';
    # which frames the contexts are made of (desc: inline frames; profiles
    # from before the option have no line: physical frames)
    $P->{inline} = $P->{desc}{'inline frames'} // 'no';
    fail("$file: bad desc: inline frames: value '" . printable($P->{inline}) . "' (yes or no)")
        unless $P->{inline} =~ /^(?:yes|no)$/;
    $P->{ksf_events} = events_option($R, $o{events}, $ln) if defined $o{events};
    ferr($file, $ln, "bad events-incl value '$o{'events-incl'}' in ksf-options")
        if defined $o{'events-incl'} && ($o{'events-incl'} ne 'yes' || !defined $o{events});
    $P->{ksf_events_incl} = defined $o{'events-incl'};
    $R->{intra} = $o{mode} eq 'intra';
    $R->{labmap} = $o{mode} eq 'func' ? $R->{fnmap} : $R->{blkmap};
    $P->{blocks} = [] if $o{mode} ne 'func';
    check_merge($R->{P0}, $P) if $R->{P0};
    $R->{seen_options} = 1;
}

# Profiles given together must agree on k, mode, rolling, roll-loops and
# inline frames.
sub check_merge {
    my ($P0, $P) = @_;
    for my $f (qw(k mode rolling roll inline)) {
        next if $P->{$f} eq $P0->{$f};
        my ($a, $b) = $f eq 'k' ? (kstr($P0->{k}), kstr($P->{k})) : ($P0->{$f}, $P->{$f});
        my $n = $f eq 'roll' ? 'roll-loops' : $f eq 'inline' ? 'inline-frames' : $f;
        fail("cannot merge $P0->{file} ($n=$a) with $P->{file} ($n=$b): "
             . ($f eq 'roll' ? "profiles must have the same loop rolling"
                : $f eq 'inline' ? "profiles must have the same frames (inlined levels or physical frames only)"
                : "profiles must have the same k, mode and recursion rolling"));
    }
}

# One entry of the function table (ksf-fn, ksf-fns): ids are dense from 0.
sub add_function {
    my ($R, $ln, $name) = @_;
    my $file = $R->{file};
    my $id = @{$R->{fnmap}};
    ferr($file, $ln, "ksf-fn before ksf-options") unless $R->{seen_options};
    ferr($file, $ln, "function 0 must be $ROOT_NAME, not '" . printable($name) . "'")
        if $id == 0 && $name ne $ROOT_NAME;
    ferr($file, $ln, "function $id: $ROOT_NAME is reserved for id 0") if $id != 0 && $name eq $ROOT_NAME;
    ferr($file, $ln, "function $id has an empty name") if $name eq '';
    # The tool may give several functions the same name (mmap in
    # ld.so and in libc): the n-th one of a file is "name#n".
    $name .= '#' . $R->{fnseen}{$name} if $R->{fnseen}{$name}++;
    push @{$R->{fnname}}, $name;
    # block modes: function names are not node labels
    push @{$R->{fnmap}}, $R->{P}{mode} eq 'func' ? label_id($name) : 0;
}

sub block_record {
    my ($R, $l, $ln) = @_;
    my ($file, $P, $blkmap) = @$R{qw(file P blkmap)};
    ferr($file, $ln, "ksf-block in a function-mode profile") unless $P->{blocks};
    my ($lab, $addr, $bf, $off, $bfile, $bline, $cnt, $name) =
        $l =~ /^# ksf-block (\d+) 0x([0-9a-fA-F]+) (\d+) (\d+) (\d+) (\d+) (\d+) (.+)$/
        or ferr($file, $ln, "malformed ksf-block record: '", printable($l), "'");
    ferr($file, $ln, "ksf-block label $lab out of order (expected " . scalar(@$blkmap) . ")") if $lab != @$blkmap;
    ferr($file, $ln, "ksf-block 0 must be $ROOT_NAME") if $lab == 0 && $name ne $ROOT_NAME;
    ferr($file, $ln, "ksf-block $lab: $ROOT_NAME is reserved for label 0") if $lab != 0 && $name eq $ROOT_NAME;
    ferr($file, $ln, "ksf-block $lab: unknown function id $bf") unless defined $R->{fnname}[$bf];
    ferr($file, $ln, "ksf-block $lab: unknown file id $bfile") unless defined $R->{fname}[$bfile];
    $name .= '#' . $R->{blkseen}{$name} if $R->{blkseen}{$name}++;
    my $g = label_id($name);
    push @$blkmap, $g;
    push @{$P->{blocks}}, { id => $g, addr => hex($addr), fn => $R->{fnname}[$bf], offset => $off + 0,
                            file => $R->{fname}[$bfile], line => $bline + 0, count => $cnt + 0 } if $lab;
}

sub thread_start {
    my ($R, $ln, $ttid, $tn, $tir, $tfn) = @_;
    my ($file, $P) = @$R{qw(file P)};
    ferr($file, $ln, "ksf-thread before ksf-options") unless $R->{seen_options};
    ferr($file, $ln, "ksf-thread $ttid inside thread $R->{thread}{tid}") if $R->{thread};
    ferr($file, $ln, "ksf-thread $ttid: intra-mode forests need fn=") if $R->{intra} && !defined $tfn;
    ferr($file, $ln, "ksf-thread $ttid: fn= only in intra mode") if !$R->{intra} && defined $tfn;
    my $tfname;
    if (defined $tfn) {
        $tfname = $R->{fnname}[$tfn];
        ferr($file, $ln, "ksf-thread $ttid: unknown function id $tfn") unless defined $tfname;
    }
    ferr($file, $ln, "thread $ttid" . (defined $tfname ? ", function $tfname," : '') . " appears twice")
        if $R->{thread_seen}{$ttid . "\0" . ($tfname // '')}++;
    @{$R->{$_}} = () for qw(bpar bfn bcal bexc binc);
    $R->{thread} = { tid => $ttid, declared => $tn + 0, ir => $tir + 0, par => '', fn => '',
                     calls => '', excl => '', incl => '', preorder => 1, line => $ln,
                     (defined $tfname ? (fname => $tfname) : ()) };
    $R->{nnodes} = 0;
    @$R{qw(open last nline)} = ([], '', []);
    stream_start($R);
}

sub thread_end {
    my ($R, $ln, $tid) = @_;
    my ($file, $P, $T, $version) = @$R{qw(file P thread version)};
    ferr($file, $ln, "ksf-end-thread $tid without ksf-thread") unless $T;
    ferr($file, $ln, "ksf-end-thread $tid closes thread $T->{tid}") if $tid ne $T->{tid};
    my $unclosed = $version >= 3 ? $R->{depth} : @{$R->{open}};
    ferr($file, $ln, "ksf-nodes: $unclosed list(s) not closed" . ($version < 3 ? " with ')'" : ''))
        if $unclosed;
    flush_nodes($R);
    my $nnodes = $T->{n} = $R->{nnodes};
    # a thread whose record is an earlier one's, column for column and with
    # the same Ir (a program's many threads doing the same work), passes the
    # same checks into the same columns: the earlier one's are taken.  A
    # thread that is one first line (KGrind::Read::Stream) has its key by the line.
    my $first = delete $T->{first_line};
    my $key = $first && $first->{nnodes} == $nnodes ? ($first->{key}{$T->{ir}} //= thread_key($T)) : thread_key($T);
    if (my $same = $R->{same_thread}{$key}) {
        delete $T->{repeat};
        @$T{keys %$same} = values %$same;
        ferr($file, $ln, "thread $tid declares nodes=$T->{declared} but has $nnodes nodes")
            if $nnodes != $T->{declared};
    } else {
        # where node v was read: version 1, one line a node; version 2,
        # the line whose first node (@$nl: first node, line) is the
        # last one <= v
        my ($t0, $nl) = ($T->{line}, $R->{nline});
        my $where = $version == 1 ? sub { ($t0 + 1 + $_[0], "ksf-node $_[0]") } : sub {
            my $v = shift;
            my $i = 0;
            $i += 2 while $i + 2 < @$nl && $nl->[$i + 2] <= $v;
            ($nl->[$i + 1], "ksf-nodes: node $v");
        };
        my $bad = sub { my ($v, $msg) = @_; my ($l, $what) = $where->($v); ferr($file, $l, "$what$msg") };
        # the index of children and slab roots: only check_counters' slab checks need it
        my $slabs = $P->{k} != $INF && $P->{k} > 0;
        my $blocks = $R->{labmap} != $R->{fnmap};
        my @index = check_forest($T, $R->{labmap}, $R->{intra}, $blocks, $bad, $slabs,
                                 $R->{labmap_state} //= {});
        ferr($file, $ln, "thread $tid declares nodes=$T->{declared} but has $nnodes nodes")
            if $nnodes != $T->{declared};
        ferr($file, $ln, "thread $tid has no nodes") if $nnodes == 0;
        check_counters($T, $P->{k}, $blocks, @index, $bad, $file);
        # the checked columns' digest, for KGrind::Model::same_forest_key,
        # and of its tree's shape, for KGrind::Forest::inv_k_contexts
        $T->{digest} = columns_digest($T->{n}, @$T{qw(par fn depth calls excl incl)});
        $T->{shape} = columns_digest($T->{n}, @$T{qw(par fn depth)});
        $R->{same_thread}{$key} = { map { exists $T->{$_} ? ($_ => $T->{$_}) : () } qw(fn depth roots digest shape) };
    }
    events_end($R, $ln, $T, $nnodes);
    delete $T->{declared};
    push @{$P->{threads}}, $T;
    undef $R->{thread};
}

# The key of a thread's record as read: its Ir, first repeated label and columns.
sub thread_key {
    my ($T) = @_;
    return Digest::SHA::sha256(join('', map { defined $_ ? pack('Q>', length) . $_ : 'u' }
                                   $T->{ir}, $T->{repeat}, @$T{qw(par fn depth calls excl incl)}));
}

1;
