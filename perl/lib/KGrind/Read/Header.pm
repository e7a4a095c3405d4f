package KGrind::Read::Header;
# The callgrind header of a profile: its first line, the header fields
# (creator:, pid:, cmd:, events:, positions:, desc:) and the summary: and
# totals: lines.  Without source annotation only these and the k-SF
# records are needed: header_fields takes them from the whole file with
# C-level regex scans and leaves only the records' region to be read line
# by line.  $R is the reader's state (KGrind::Profile).
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use KGrind::Error;

our @EXPORT = qw(check_first_line cost_line positions header_fields);

sub check_first_line {
    my ($file, $ln, $l) = @_;
    return if $l eq '# callgrind format' || $l =~ /^version:\s*\d/ || $l =~ /^creator:/;
    fail("$file:$ln: not a kgrind profile (expected '# callgrind format', found '" . printable($l) . "')");
}

# summary: and totals: (each at most once; checked against the records at
# the end): key -> [costs, line]
sub cost_line {
    my ($R, $key, $val, $ln) = @_;
    my ($file, $P) = @$R{qw(file P)};
    ferr($file, $ln, "a second '$key:' line") if $P->{$key};
    ferr($file, $ln, "malformed $key: line: '", printable($val), "' (expected event counts)")
        unless $val =~ /^\d{1,19}(?: \d{1,19})*\s*$/;
    $P->{$key} = [[split ' ', $val], $ln];
}

sub positions {
    my ($R, $val, $ln) = @_;
    ferr($R->{file}, $ln, "unsupported positions '$val' (kgrind writes 'line' or 'instr line')")
        unless $val =~ /^(?:instr )?line\s*$/;
    $R->{instr} = $val =~ /^instr/ ? 1 : 0;
}

# The function names the callgrind body gives, fn= id -> name, from the
# text before the records (version 3's ksf-fns refers to them).
sub body_names {
    my ($text, $names) = @_;
    $names->{$1} = $2 while $text =~ /^c?fn=\((\d+)\) *([^\r\n]+)/mg;
    return $names;
}

# Reads the rest of $fh, takes the header fields, and returns a handle on
# the k-SF records' region and the number of lines before it.
sub header_fields {
    my ($R, $fh) = @_;
    my ($file, $P) = @$R{qw(file P)};
    my $data = do { local $/; <$fh> };
    close $fh;
    fail("$file: cannot read: $!") unless defined $data;
    fail("$file: the file is empty") if $data =~ /\A\s*\z/;
    my ($l1) = $data =~ /\A\s*([^\n]*)/;
    $l1 =~ tr/\r//d;
    check_first_line($file, 1 + (substr($data, 0, $-[1]) =~ tr/\n//), $l1);
    my ($start, $end) = records_region(\$data);
    my $lines_before = substr($data, 0, $start) =~ tr/\n//;
    # version 3's function table refers to the body's names
    body_names(substr($data, 0, $start), $R->{names}{fn} //= {})
        if substr($data, $start, 40) =~ /^# ksf-version: 3\r?$/m;
    my @part_line = (0, $lines_before + (substr($data, $start, $end - $start) =~ tr/\n//));
    for my $pi (0, 1) {
        my $part = $pi ? substr($data, $end) : substr($data, 0, $start);
        # line numbers counted from the match before (a file of many
        # threads has a desc: line for each thread)
        my ($pl, $at) = ($part_line[$pi] + 1, 0);
        while ($part =~ /^(creator|pid|cmd|summary|events|positions|desc|totals):[ \t]*([^\r\n]*)/mg) {
            my ($key, $val) = ($1, $2);
            $pl += substr($part, $at, $-[0] - $at) =~ tr/\n//;
            $at = $-[0];
            if ($key eq 'totals' || $key eq 'summary') { cost_line($R, $key, $val, $pl) }
            elsif ($key eq 'desc') { $P->{desc}{$1} = $2 if $val =~ /^([^:]+):\s*(.*)$/ }
            elsif ($key eq 'positions') { positions($R, $val, $pl) }
            else { $P->{$key} //= $val }
        }
    }
    my $region = substr($data, $start, $end - $start);
    undef $data;
    open(my $rfh, '<', \$region) or fail("$file: cannot read: $!");
    return ($rfh, $lines_before);
}

# Where the k-SF records start and end in the file's text (both at its
# end when it has none).
sub records_region {
    my ($data) = @_;
    my $start = index($$data, "\n# ksf-");
    my $end = length $$data;
    if ($start >= 0) {
        $start++;
        my $e = index($$data, "\n# ksf-end\n", $start);
        $e = index($$data, "\n# ksf-end\r\n", $start) if $e < 0;
        $end = index($$data, "\n", $e + 2) + 1 if $e >= 0;
        $end = length $$data if $end <= 0;
    } else {
        $start = $end;
    }
    return ($start, $end);
}

1;
