package KGrind::Export::Pprof;
# --format=pprof: the k-contexts as a gzipped profile.proto (google/pprof,
# proto/profile.proto), written with pack and core IO::Compress::Gzip.
#
# One sample per (thread, k-context): its stack is the context's path,
# innermost function first; values [calls, Ir] (Ir exclusive); string labels
# "thread" and "k".  A context that does not reach __root__ (finite k) gets
# a synthetic outermost frame "[truncated k=N]", so pprof never shows it as
# rooted.  One location per function, at the function's first costly line.
use strict;
use warnings;
use IO::Compress::Gzip qw(gzip $GzipError);

# Field numbers of profile.proto.
my %PROFILE = (sample_type => 1, sample => 2, mapping => 3, location => 4, function => 5,
               string_table => 6, period_type => 11, period => 12, comment => 13,
               default_sample_type => 14);

sub varint {
    my ($v) = @_;
    my $s = '';
    while ($v >= 0x80) { $s .= chr(($v & 0x7f) | 0x80); $v >>= 7 }
    return $s . chr($v);
}

# A varint field (wire type 0); proto3 leaves zero values out.
sub f_int { my ($field, $v) = @_; $v ? varint($field << 3) . varint($v) : '' }
# A length-delimited field (wire type 2): strings, messages, packed lists.
sub f_bytes { my ($field, $b) = @_; varint(($field << 3) | 2) . varint(length $b) . $b }
sub f_packed { my ($field, @v) = @_; f_bytes($field, join('', map { varint($_) } @v)) }

# The string table: index 0 is "".
sub new_strings { my %id = ('' => 0); return { id => \%id, list => [''] } }
sub str_id {
    my ($S, $s) = @_;
    my $id = $S->{id}{$s};
    return $id if defined $id;
    push @{$S->{list}}, $s;
    return $S->{id}{$s} = $#{$S->{list}};
}

sub truncation_frame { my ($k) = @_; "[truncated k=$k]" }

# Frames of a context, outermost first: its path, plus the truncation
# marker when the path does not start at __root__.
sub frames_of {
    my ($data, $path) = @_;
    return $path if $data->{k} eq 'inf' || $path->[0] eq $data->{root};
    return [truncation_frame($data->{k}), @$path];
}

sub write {
    my ($data, $fh, $opts) = @_;
    my $S = new_strings();
    my (%fid, @functions);
    my $function_id = sub {
        my ($name) = @_;
        return $fid{$name} if $fid{$name};
        my $src = $data->{sources}{$name} // {};
        my $id = @functions + 1;
        push @functions, f_int(1, $id) . f_int(2, str_id($S, $name)) . f_int(3, str_id($S, $name))
            . f_int(4, str_id($S, $src->{file} // '')) . f_int(5, $src->{line} // 0);
        return $fid{$name} = $id;
    };
    my @samples;
    for my $t (@{$data->{threads}}) {
        my $labels = f_bytes(3, f_int(1, str_id($S, 'thread')) . f_int(2, str_id($S, "$t->{tid}")))
                   . f_bytes(3, f_int(1, str_id($S, 'k')) . f_int(2, str_id($S, "$data->{k}")));
        for my $c (@{$t->{contexts}}) {
            my @loc = reverse map { $function_id->($_) } @{frames_of($data, $c->{path})};
            push @samples, f_packed(1, @loc) . f_packed(2, $c->{calls}, $c->{Ir}) . $labels;
        }
    }
    # one location per function, same id
    my @locations = map {
        my $src = $data->{sources}{$_} // {};
        f_int(1, $fid{$_}) . f_int(2, 1) . f_bytes(4, f_int(1, $fid{$_}) . f_int(2, $src->{line} // 0))
    } sort { $fid{$a} <=> $fid{$b} } keys %fid;
    my $mapping = f_int(1, 1) . f_int(5, str_id($S, $data->{program} // '')) . f_int(7, 1) . f_int(8, 1)
                . f_int(9, 1);
    my $value_type = sub { f_int(1, str_id($S, $_[0])) . f_int(2, str_id($S, $_[1])) };
    my $sample_types = f_bytes($PROFILE{sample_type}, $value_type->('calls', 'count'))
                     . f_bytes($PROFILE{sample_type}, $value_type->('Ir', 'count'));
    my $period_type = f_bytes($PROFILE{period_type}, $value_type->('Ir', 'count'));
    my @comments = map { str_id($S, $_) } @{$data->{comments} // []};
    my $default = str_id($S, 'Ir');
    my $raw = $sample_types
        . join('', map { f_bytes($PROFILE{sample}, $_) } @samples)
        . f_bytes($PROFILE{mapping}, $mapping)
        . join('', map { f_bytes($PROFILE{location}, $_) } @locations)
        . join('', map { f_bytes($PROFILE{function}, $_) } @functions)
        . join('', map { f_bytes($PROFILE{string_table}, $_) } @{$S->{list}})
        . $period_type . f_int($PROFILE{period}, 1)
        . (@comments ? f_packed($PROFILE{comment}, @comments) : '')
        . f_int($PROFILE{default_sample_type}, $default);
    my $gz;
    gzip(\$raw => \$gz) or die "gzip: $GzipError\n";
    print $fh $gz;
}

1;
