package KGrind::Export::Pprof;
# --format=pprof: the k-contexts as a gzipped profile.proto (google/pprof,
# proto/profile.proto), written with pack and core Compress::Raw::Zlib as
# it is produced (write_file).
#
# One sample per (thread, k-context): its stack is the context's path,
# innermost function first; values [calls, Ir] (Ir exclusive), then each
# event beyond Ir of the k-SF records (D1mr, ...: exclusive); a string label
# "thread" when there are several threads (k and the threads are in the
# comments).  A context that does not reach __root__ (finite k) gets a
# synthetic outermost frame "[truncated k=N]" (KGrind::Model::
# truncation_marker), so pprof never shows it as rooted.  One location per
# function, at the function's first costly line; a function with the
# functions inlined into it (`g [inlined]`, the levels of --inline-frames)
# is one location whose lines are the inline chain, innermost first, as
# pprof expects inlined frames.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Compress::Raw::Zlib qw(Z_OK WANT_GZIP);
use KGrind::Error;
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Forest qw(children_of ctx_labels);
use KGrind::Model qw(cval select_contexts export_name export_names model_head truncation_marker);
use KGrind::Events qw(context_event forest_event_names);
use KGrind::Output;
use KGrind::Sites qw(site_index level_lines);
use KGrind::Names qw(inlined_level);

# --format=pprof, written as produced (KGrind::Export::Pprof::write_file):
# each selected context's path is made when its sample is written, so
# memory is the forest's plus pprof's tables, not every context's path
# (contexts_model: O(nodes x depth) at k = inf).
sub show {
    my ($o, $S) = @_;
    my $name = export_names($o);
    my $events = @{$S->{threads}} ? forest_event_names($S->{threads}[0]{F}) : [];
    # --sites: a frame's location at the line it called the next one from
    my $I = $o->{sites} ? site_index($S) : undef;
    # the profiles' contexts have inlined levels (desc: inline frames)
    my $levels = @{$S->{P}} && $S->{P}[0]{inline} eq 'yes';
    my @threads = map {
        my $C = $_->{C};
        my $ev = sub { my ($cid) = @_; map { context_event($C, $_, $cid) } @$events };
        { tid => $_->{tid}, each_sample => $C->{cct} && !$o->{limited} && !$I ? cct_pprof_samples($C, $name, $ev, $levels) : sub {
            my ($emit) = @_;
            for my $cid (@{select_contexts($o, $C)}) {
                my $labels = ctx_labels($C, $cid);
                my $path = [@$name[@$labels]];
                $path = site_frames($I, [@LNAME[@$labels]], $path) if $I;
                $emit->($path, cval($C, 'xcalls', $cid), cval($C, 'xexcl', $cid), $ev->($cid));
            }
        } }
    } @{$S->{threads}};
    my $head = model_head($S, sub { export_name($o, $_[0]) });
    $head->{events} = $events;
    $head->{inline_frames} = $levels;
    my $ok = eval { write_file($head, \@threads, \&out); 1 };
    unless ($ok) { die $@ if ref $@; fail("pprof: " . (split /\n/, $@)[0]) }
}

# Every context of a calling context tree as pprof samples, in preorder:
# a node's stack is its location before its parent's stack, so each is
# one concatenation (making every context's path was O(nodes x depth) in
# Perl: 119.7 s against 32.7 s for cc1plus's 2.9 M-node CCT).
sub cct_pprof_samples {
    my ($C, $name, $ev, $levels) = @_;
    return sub {
        my (undef, $emit_stack, $location_of) = @_;
        my ($roots, $kids) = children_of(col($C->{F}, 'par'));
        my $fn = col($C->{F}, 'fn');
        # [node, its parent's stack, the parent's location (names), the
        # stack below that location]: an inlined node joins its parent's
        # location.
        my @todo = map { [$_, '', undef, ''] } reverse @$roots;
        while (my $e = pop @todo) {
            my ($v, $parent_stack, $parent_group, $parent_callers) = @$e;
            my $n = $name->[$fn->[$v]];
            my ($group, $callers) = $levels && $parent_group && inlined($n) ? ("$parent_group\n$n", $parent_callers)
                                                                            : ($n, $parent_stack);
            my $stack = $location_of->($group) . $callers;
            $emit_stack->($stack, cval($C, 'xcalls', $v), cval($C, 'xexcl', $v), $ev->($v));
            push @todo, map { [$_, $stack, $group, $callers] } reverse @{$kids->[$v] // []};
        }
    };
}

# An inlined level's name, with --sites its call line after a tab.
sub inlined { inlined_level($_[0] =~ s/\t\d+\z//r) }

# --sites: each frame but the last as "name\tline" where the profile gives
# the one line it called the next frame from (KGrind::Sites); its
# location's line is that line (a location per call line, all of one
# function), else the function's first line.
sub site_frames {
    my ($I, $path, $names) = @_;
    my $lines = level_lines($I, $path);
    return [(map { @{$lines->[$_]} == 1 ? "$names->[$_]\t$lines->[$_][0]" : $names->[$_] } 0 .. $#$lines), $names->[-1]];
}

# A path's locations (outermost first): each function with the inlined
# levels after it (where $levels: the profile has them), their names
# joined by newlines.
sub location_groups {
    my ($path, $levels) = @_;
    my @groups;
    for my $n (@$path) {
        if ($levels && @groups && inlined($n) && $groups[-1] !~ /\A\[truncated k=/) { $groups[-1] .= "\n$n" }
        else { push @groups, $n }
    }
    return \@groups;
}

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


# Frames of a context, outermost first: its path, plus the truncation
# marker when the path does not start at __root__.
sub frames_of {
    my ($data, $path) = @_;
    return $path if $data->{k} eq 'inf' || $path->[0] eq $data->{root};
    return [truncation_marker($data->{k}), @$path];
}

# The profile written piece by piece with $put, gzipped as it goes.
# $threads: [{tid, each_sample}], each_sample calling its first argument
# with each sample's frames (outermost first), calls, Ir and the events of
# $data->{events} (beyond Ir, if any), in order; or,
# for stacks that share their callers' part (a calling context tree), its
# second with the stack already encoded, innermost first, each frame's
# location by its third (a frame name's location id as a varint).  The
# sample types come first, then each sample as it is given, then the
# tables the samples refer to (mapping, locations, functions, strings):
# profile.proto's readers resolve ids after reading the whole message
# (a message's fields may come in any order, repeated ones interleaved).
# Memory is the tables', bounded by the distinct functions.
sub write_file {
    my ($data, $threads, $put) = @_;
    my $z = gzip_stream($put);
    my $S = new_strings();
    my $value_type = sub { f_int(1, str_id($S, $_[0])) . f_int(2, str_id($S, $_[1])) };
    $z->(join('', map { f_bytes($PROFILE{sample_type}, $value_type->($_, 'count')) }
                  'calls', 'Ir', @{$data->{events} // []}));
    # one location per function with its inlined levels (names joined by
    # newlines), its id kept as its varint (the samples repeat it); one
    # function per name
    my (%location, @groups);
    my $location = sub {
        push @groups, $_[0];
        return $location{$_[0]} = varint(scalar @groups);
    };
    for my $t (@$threads) {
        # a label only where it tells samples apart (pprof draws a tag box
        # for each label on every node): the thread, when there are several;
        # k and the threads are in the comments
        my $labels = @$threads > 1 ? f_bytes(3, f_int(1, str_id($S, 'thread')) . f_int(2, str_id($S, "$t->{tid}"))) : '';
        my $emit_stack = sub {
            my ($stack, @values) = @_;    # calls, Ir, events
            $z->(f_bytes($PROFILE{sample}, f_bytes(1, $stack) . f_packed(2, @values) . $labels));
        };
        my $location_of = sub { $location{$_[0]} // $location->($_[0]) };
        $t->{each_sample}->(sub {
            my ($path, @values) = @_;
            $emit_stack->(join('', reverse map { $location_of->($_) } @{location_groups(frames_of($data, $path), $data->{inline_frames})}),
                          @values);
        }, $emit_stack, $location_of);
    }
    $z->(f_bytes($PROFILE{mapping}, f_int(1, 1) . f_int(5, str_id($S, $data->{program} // '')) . f_int(7, 1)
                 . f_int(8, 1) . f_int(9, 1)));
    my (%function, @names);
    for my $i (1 .. @groups) {
        my @lines = reverse split /\n/, $groups[$i - 1];    # innermost first
        my $lines = join '', map {
            my ($fname, $line) = split /\t/;    # a call line with --sites
            my $id = $function{$fname} //= do { push @names, $fname; scalar @names };
            f_bytes(4, f_int(1, $id) . f_int(2, $line // ($data->{sources}{$fname} // {})->{line} // 0))
        } @lines;
        $z->(f_bytes($PROFILE{location}, f_int(1, $i) . f_int(2, 1) . $lines));
    }
    $z->(f_bytes($PROFILE{function}, function($S, $_, $names[$_ - 1], $data->{sources}{$names[$_ - 1]} // {})))
        for 1 .. @names;
    my @comments = map { str_id($S, $_) } @{$data->{comments} // []};
    my $default = str_id($S, 'Ir');
    my $period_type = $value_type->('Ir', 'count');
    $z->(f_bytes($PROFILE{string_table}, $_)) for @{$S->{list}};    # every string is known now
    $z->(f_bytes($PROFILE{period_type}, $period_type) . f_int($PROFILE{period}, 1)
         . (@comments ? f_packed($PROFILE{comment}, @comments) : '')
         . f_int($PROFILE{default_sample_type}, $default));
    $z->(undef);
}

# A function message: id, name (also as system name), file, first line.
sub function {
    my ($S, $id, $name, $src) = @_;
    return f_int(1, $id) . f_int(2, str_id($S, $name)) . f_int(3, str_id($S, $name))
         . f_int(4, str_id($S, $src->{file} // '')) . f_int(5, $src->{line} // 0);
}

# A writer of one gzip stream through $put: called with bytes, then with
# undef to end the stream.  Deflated in pieces of $GZIP_PIECE bytes (each
# call to zlib has a cost); the header's time is 0, so the output is
# reproducible.
my $GZIP_PIECE = 1 << 16;
sub gzip_stream {
    my ($put) = @_;
    my ($zlib, $status) = Compress::Raw::Zlib::Deflate->new(-WindowBits => WANT_GZIP, -AppendOutput => 0);
    die "gzip: $status\n" unless $status == Z_OK;
    my $raw = '';
    return sub {
        $raw .= $_[0] if defined $_[0];
        return if defined $_[0] && length $raw < $GZIP_PIECE;
        my ($out, $end) = ('', '');
        $zlib->deflate($raw, $out) == Z_OK or die "gzip: " . $zlib->msg . "\n";
        $raw = '';
        unless (defined $_[0]) { $zlib->flush($end) == Z_OK or die "gzip: " . $zlib->msg . "\n" }
        $put->($out . $end) if length $out || length $end;
    };
}

1;
