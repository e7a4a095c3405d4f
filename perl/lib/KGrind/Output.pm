package KGrind::Output;
# The output, written as it is produced: every format is printed after the
# whole input was read and checked (KGrind::Model::build), so bad input
# still prints nothing; memory is then that of the forests, not of the
# output.  A reader that leaves (EPIPE) stops the writing: out() dies with
# a KG::Closed, which kgrind_annotate takes as success.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use KGrind::Error;
use KGrind::Format qw(utf8_clean);

our @EXPORT = qw(out out_lines flush_out written);

my $OUT = '';             # not written yet
my $OUT_LENGTH = 0;       # its length: `length $OUT` counts a character string's characters, O(n)
my $OUT_CLEAN = 0;        # names' bytes made UTF-8 (text and folded: their pieces are whole lines)

# Whether the output's bytes are made UTF-8 as they are written
# (utf8_clean), for the formats that do not clean their names themselves.
sub clean_output { $OUT_CLEAN = $_[0] }

sub out {
    for (@_) {
        $OUT .= $_;
        $OUT_LENGTH += length;
    }
    flush_out() if $OUT_LENGTH >= 1 << 20;
}

sub flush_out {
    return if $OUT eq '';
    $OUT = utf8_clean($OUT) if $OUT_CLEAN;
    unless (print STDOUT $OUT) {
        die bless({}, 'KG::Closed') if $!{EPIPE};    # the reader left: stop, status 0
        fail("cannot write the output: $!");
    }
    $OUT = '';
    $OUT_LENGTH = 0;
}

# Writes the lines gathered so far (each with its newline) and forgets them.
sub out_lines { my ($lines) = @_; out(map { "$_\n" } @$lines); @$lines = () }

# What a writer, $write->(\%model, $fh, \%options), writes, as a string;
# its errors make one line ("FORMAT: message").
sub written {
    my ($write, $model, $o) = @_;
    my $out = '';
    open(my $fh, '>:raw', \$out) or fail("cannot write to memory: $!");
    my $ok = eval { $write->($model, $fh, $o); 1 };
    unless ($ok) { die $@ if ref $@; fail("$o->{format}: " . (split /\n/, $@)[0]) }
    close $fh;
    return $out;
}

1;
