package KGrind::Profile;
# Reading kgrind profiles (docs/output-format.md) and every check that
# makes a bad file one clear error: read_profile reads the callgrind
# header (KGrind::Read::Header) and body (KGrind::Read::Body) and the k-SF
# records (KGrind::Read::Records), and checks the numbers the file states
# twice; the checks of profiles given together.  Core Perl modules only.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use KGrind::Error;
use KGrind::Labels;
use KGrind::Read::Header qw(check_first_line header_fields);
use KGrind::Read::Body;
use KGrind::Read::Lists qw(node_record node_lists);
use KGrind::Read::Stream qw(node_stream);
use KGrind::Read::Records qw(record_line check_merge);

our @EXPORT = qw(read_profile check_merge refuse_repeated_files program_of refuse_other_programs);

# A profile: {file, mtime, creator, pid, cmd, events, desc, k, mode,
# rolling, joined, roll, threads (the forests), blocks (block modes),
# total, and with $want_src the body's src, fnline, fnfile and calls; with
# $want_src 'sites' also call_sites}.
# $P0: the first profile of those given together, which this one must
# agree with.
sub read_profile {
    my ($file, $want_src, $P0) = @_;
    fail("$file: no such file") unless -e $file;
    fail("$file: is a directory, not a profile") if -d $file;
    open(my $fh, '<:raw', $file) or fail("$file: cannot open: $!");
    my %P = (file => $file, mtime => (stat $fh)[9], threads => [], src => {},
             fnline => {}, desc => {});
    # a gzipped profile (gzip kgrind.out.1) is read as its contents
    my $gz = gunzipped($file, $fh);
    if (defined $gz) { close $fh; open($fh, '<:raw', $gz) or fail("$file: cannot read: $!") }
    my $bytes = defined $gz ? length $$gz : -s $file;
    # the reader's state: the file's tables (fn id -> global label id, fn
    # id -> name ("name#n" for duplicates), block modes: block label ->
    # global label id, file id -> source path), the forest being read and
    # its buffered nodes, the records seen, the body's names ('fl'/'fn' ->
    # id -> name) and its position
    my $R = { file => $file, P => \%P, P0 => $P0, want_src => $want_src, want_sites => ($want_src // '') eq 'sites', fnmap => [], fnname => [],
              blkmap => [], fname => [], blkseen => {}, fnseen => {}, names => {}, thread => undef,
              bpar => [], bfn => [], bcal => [], bexc => [], binc => [], nnodes => 0, version => 0,
              first => 1, instr => 0, bytes => $bytes };
    body_start($R);
    eval {
        my $ln = 0;
        unless ($want_src) {
            ($fh, $ln) = header_fields($R, $fh);
            $R->{first} = 0;
        }
        $ln = read_lines($R, $fh, $ln);
        close $fh;
        check_complete($R, $ln);
        1;
    } or do {
        my $e = $@;
        refuse_cut_line($file, $gz) if ref $e eq 'KG::Error';
        die $e;
    };
    return \%P;
}

# kgrind ends its profile with a complete line: a file with a profile's
# first line (or a start of it) that ends inside a line was cut (a full
# disk, a copy stopped), whatever error its last line gave.
sub refuse_cut_line {
    my ($file, $gz) = @_;    # $gz: a gzipped file's contents
    open(my $fh, '<:raw', $gz // $file) or return;
    my ($lines, $last, $first, $buf, $bytes) = (0, '', undef, undef, 0);
    while (read($fh, $buf, 1 << 16)) {
        $first //= $buf;
        $lines += $buf =~ tr/\n//;
        $last = substr($buf, -1);
        $bytes += length $buf;
    }
    close $fh;
    return if !defined $first || $last eq "\n";
    my ($l1) = $first =~ /\A\s*([^\n]*)/;
    $l1 =~ tr/\r//d;
    my $head = '# callgrind format';
    return unless $l1 =~ /^(?:version:\s*\d|creator:)/ || $l1 eq $head
        || (length $l1 >= 3 && $lines == 0 && $l1 eq substr($head, 0, length $l1));
    fail("$file:" . ($lines + 1) . ": truncated: the file ends inside line " . ($lines + 1) . ", after byte $bytes"
         . ($gz ? ' of its gzipped contents' : '') . " (kgrind ends a profile with a complete line)");
}

# A gzipped file's contents (a reference to them), or undef for a file
# that does not start as gzip does.
sub gunzipped {
    my ($file, $fh) = @_;
    my $magic = '';
    read($fh, $magic, 2);
    seek($fh, 0, 0) or fail("$file: cannot read: $!");
    return undef unless $magic eq "\x1f\x8b";
    require IO::Uncompress::Gunzip;
    my $data = '';
    IO::Uncompress::Gunzip::gunzip($fh => \$data, MultiStream => 1, Strict => 1)
        or fail("$file: a gzipped file that does not decompress: $IO::Uncompress::Gunzip::GunzipError "
                . '(cut short? gunzip -t tells)');
    fail("$file: a gzipped file of no data") if $data eq '';
    return \$data;
}

# Reads the lines of $fh (line numbers after $ln); returns the last one's.
sub read_lines {
    my ($R, $fh, $ln) = @_;
    my $file = $R->{file};
    while (defined(my $l = <$fh>)) {
        $ln++;
        chomp $l;
        $l =~ tr/\r//d;
        if ($R->{first}) {
            next if $l eq '';
            $R->{first} = 0;
            check_first_line($file, $ln, $l);
        }
        if (index($l, '# ksf-nodes ') == 0) {
            ferr($file, $ln, "ksf-nodes outside a ksf-thread record") unless $R->{thread};
            ferr($file, $ln, "ksf-nodes record in a version 1 file") if $R->{version} == 1;
            if ($R->{version} >= 3) { node_stream($R, $l, $ln) } else { node_lists($R, $l, $ln) }
        }
        elsif (index($l, '# ksf-node ') == 0) { node_record($R, $l, $ln) }
        elsif (index($l, '#') == 0) { record_line($R, $l, $ln) if index($l, '# ksf-') == 0 }
        else {
            # a cost line (0-9 + - *), the body's most lines, or another body line
            my $c0 = ord $l;
            if (($c0 >= 48 && $c0 <= 57) || $c0 == 43 || $c0 == 45 || $c0 == 42) {
                cost_line_of_body($R, $l, $ln) if $R->{want_src};
            }
            else { body_line($R, $l, $ln) }
        }
    }
    return $ln;
}

# The checks at the end of the file: the records and the body are
# complete, and the numbers they state twice agree.
sub check_complete {
    my ($R, $ln) = @_;
    my ($file, $P, $T) = @$R{qw(file P thread)};
    fail("$file: the file is empty") if $R->{first};
    my $creator = $P->{creator} // '';
    if (!$R->{seen_version}) {
        # What kgrind writes at start-up, for the exit to replace.
        fail("$file: incomplete profile: the process did not exit normally under kgrind "
             . "(killed, e.g. by SIGKILL, it exec'd in a block mode, or Valgrind stopped it, "
             . "e.g. on an unsupported clone()), so it has no data")
            if defined $P->{desc}{'Incomplete profile'};
        # A start of kgrind's file (its records and totals: come after the
        # header and body), not some other callgrind-format file.
        fail("$file:$ln: truncated: the file ends at line $ln, after byte $R->{bytes}, before the k-SF records "
             . "and the 'totals:' line")
            if ($creator eq '' || $creator =~ /^kgrind/) && !$P->{totals};
        if ($creator ne '' && $creator !~ /^kgrind/) {
            fail("$file: a profile written by $creator, not by kgrind: it has no k-SF records "
                 . "(use callgrind_annotate for it)");
        }
        fail("$file: no k-SF records ('# ksf-version: 1'): not a kgrind profile with k-SF data"
             . ($creator ne '' ? " (creator: $creator)" : ''));
    }
    fail("$file:$ln: truncated after byte $R->{bytes}: thread $T->{tid} has no '# ksf-end-thread' "
         . "(opened at line $T->{line}, $R->{nnodes} of $T->{declared} nodes read)") if $T;
    fail("$file:$ln: truncated after byte $R->{bytes}: no '# ksf-end' record at the end of the k-SF records") unless $R->{seen_end};
    fail("$file:$ln: truncated after byte $R->{bytes}: no 'totals:' line at the end of the callgrind body") unless $P->{totals};
    # A block-mode run may trace no block at all (nothing of --funcs ran).
    fail("$file: no ksf-thread records") unless @{$P->{threads}} || ($P->{mode} // "func") ne "func";
    $P->{events} //= 'Ir';
    my @ev = split ' ', $P->{events};
    fail("$file: events '$P->{events}' do not include Ir") unless grep { $_ eq 'Ir' } @ev;
    check_profile_totals($P, \@ev);
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

1;
