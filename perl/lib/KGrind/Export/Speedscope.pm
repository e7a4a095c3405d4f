package KGrind::Export::Speedscope;
# --format=speedscope: speedscope's file format
# (https://www.speedscope.app/file-format-schema.json; the types are in
# speedscope's src/lib/file-format-spec.ts).  One profile per thread, unit
# "none" (instructions):
# - "sampled" (write, and write_file's each_sample): a sample per k-context
#   with exclusive Ir (or --event), its stack the context's path, outermost
#   first, weighed by that count.  A context that does not reach __root__ (finite k)
#   starts with the frame "[truncated k=N]", as in the pprof export.  The
#   samples are in path order, so the "Time Order" view draws the contexts
#   sharing callers side by side.  Its size is the sum of the stacks' depths.
# - "evented" (write_file's each_event; write_evented_ccts: whole CCTs): an
#   open event per tree node at its start and a close event at its start
#   plus its inclusive Ir, so the size is linear in the nodes.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use JSON::PP ();
use KGrind::Labels;
use KGrind::Columns;
use KGrind::Forest qw(children_of);
use KGrind::Model qw(export_name export_names model_sources contexts_model);
use KGrind::Output;
use KGrind::Export::Pprof ();

sub frames_of { KGrind::Export::Pprof::frames_of(@_) }

# The samples of a thread of the model: [[frame names], Ir], sorted by
# their names (contexts without Ir left out: speedscope draws weights, not
# calls); the frame ids are given in the order of the model's contexts.
sub model_samples {
    my ($data, $t, $frame_id) = @_;
    my $e = $data->{event} // 'Ir';    # --event: weighed by that event
    my @samples = sort { $a->[2] cmp $b->[2] } map {
        my $frames = frames_of($data, $_->{path});
        $frame_id->($_) for @$frames;
        [$frames, $_->{$e}, join("\0", @$frames)]
    } grep { $_->{$e} } @{$t->{contexts}};
    return \@samples;
}

# --format=speedscope: the evented profiles of whole CCTs, else the
# sampled profiles of the contexts model (contexts_model).
sub show {
    my ($o, $S) = @_;
    return write_evented_ccts($o, $S) if !$o->{limited} && !$o->{sites} && $S->{kk} == $INF && ($o->{event} // 'Ir') eq 'Ir'
                                         && !grep { !$_->{C}{cct} } @{$S->{threads}};
    out(written(\&write, contexts_model($o, $S), $o));
}

# --format=speedscope of calling context trees without a limit: an
# "evented" profile per tree, written as produced (a sampled profile lists
# every node's whole stack: O(nodes x depth), 490 MB for cc1plus's 2.9 M
# nodes).  A preorder walk opens each node with Ir below it at its start,
# spends its exclusive Ir, walks its callees in the tree's order (first
# call first) and closes it at its start plus its inclusive Ir (computed
# here from the exclusive counters: the events nest exactly).  The frames
# are numbered in the order in which the walk first names them.
sub write_evented_ccts {
    my ($o, $S) = @_;
    my @name = @{export_names($o)};
    my (%fid, @names, @lfid, @threads);
    my $frame_id = sub { $lfid[$_[0]] //= $fid{$name[$_[0]]} //= do { push @names, $name[$_[0]]; $#names } };
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my ($par, $fn) = (col($C->{F}, 'par'), col($C->{F}, 'fn'));
        my @excl = @{col($C->{F}, 'excl')};
        my @incl = @excl;
        for (my $v = $#$par; $v >= 0; $v--) { $incl[$par->[$v]] += $incl[$v] if $par->[$v] >= 0 }    # children have larger ids
        my ($roots, $kids) = children_of($par);
        my $end = 0;
        $end += $incl[$_] for @$roots;
        push @threads, { tid => $t->{tid}, end => $end, each_event => sub {
            my ($emit) = @_;
            my $at = 0;
            my @todo = reverse grep { $incl[$_] } @$roots;
            while (@todo) {
                my $v = pop @todo;
                if ($v < 0) { $emit->('C', $frame_id->($fn->[-1 - $v]), $at); next }
                $emit->('O', $frame_id->($fn->[$v]), $at);
                $at += $excl[$v];
                push @todo, -1 - $v, reverse grep { $incl[$_] } @{$kids->[$v] // []};
            }
        } };
    }
    my $data = { k => kstr($INF), files => [map { $_->{file} } @{$S->{P}}], exporter => $KGrind::Model::EXPORTER,
                 sources => model_sources($S, sub { export_name($o, $_[0]) }) };
    write_file($data, \@threads, \@names, \&out);
}

sub write {
    my ($data, $fh, $opts) = @_;
    my (%fid, @names);
    my $frame_id = sub { $fid{$_[0]} //= do { push @names, $_[0]; $#names } };
    my @threads = map {
        my $samples = model_samples($data, $_, $frame_id);
        { tid => $_->{tid}, each_sample => sub { $_[0]->(@$_[0, 1]) for @$samples } }
    } @{$data->{threads}};
    write_file($data, \@threads, \@names, sub { print $fh @_ });
}

# Writes the file piece by piece with $put, as JSON::PP's canonical
# encoder writes the whole (keys sorted, no spaces), one profile per
# thread, then the frames, numbered as $names lists them (read at the end:
# each_event may add to it).  A thread gives either each_sample: a "sampled"
# profile whose samples each_sample gives in order (calling its argument
# with the frames' names and the Ir, three times: the sum, the samples, the
# weights); or end and each_event: an "evented" profile from 0 to end whose
# events each_event gives in order (calling its argument with 'O' or 'C',
# the frame's id and the time).  Memory is the frames'.
sub write_file {
    my ($data, $threads, $names, $put) = @_;
    my $js = JSON::PP->new->canonical->allow_nonref;
    my %fid;
    @fid{@$names} = 0 .. $#$names;
    $put->('{"$schema":"https://www.speedscope.app/file-format-schema.json","activeProfileIndex":0,"exporter":',
           $js->encode($data->{exporter}), ',"name":', $js->encode(join(', ', @{$data->{files}}) . " (k=$data->{k})"),
           ',"profiles":[');
    my $sep = '';
    for my $t (@$threads) {
        my $name = $js->encode(thread_name($data, $t));
        $put->($sep);
        if ($t->{each_event}) { write_evented($t, $name, $put) }
        else { write_sampled($t, $name, \%fid, $put) }
        $sep = ',';
    }
    $put->('],"shared":{"frames":[');
    $sep = '';
    for my $name (@$names) {
        my $src = $data->{sources}{$name};
        $put->($sep, $js->encode({ name => $name, ($src && $src->{file} ne '' ? (file => $src->{file}) : ()),
                                   ($src && $src->{line} ? (line => $src->{line}) : ()) }));
        $sep = ',';
    }
    $put->("]}}\n");
}

sub thread_name {
    my ($data, $t) = @_;
    return "thread $t->{tid} (k=$data->{k}, " . ($data->{event} // 'Ir') . ')';
}

sub write_sampled {
    my ($t, $name, $fid, $put) = @_;
    my $sum = 0;
    $t->{each_sample}->(sub { $sum += $_[1] });
    $put->('{"endValue":', $sum + 0, ',"name":', $name, ',"samples":[');
    my $comma = '';
    $t->{each_sample}->(sub { $put->($comma, '[', join(',', @$fid{@{$_[0]}}), ']'); $comma = ',' });
    $put->('],"startValue":0,"type":"sampled","unit":"none","weights":[');
    $comma = '';
    $t->{each_sample}->(sub { $put->($comma, $_[1] + 0); $comma = ',' });
    $put->(']}');
}

sub write_evented {
    my ($t, $name, $put) = @_;
    $put->('{"endValue":', $t->{end} + 0, ',"events":[');
    my $comma = '';
    $t->{each_event}->(sub { $put->($comma, '{"at":', $_[2] + 0, ',"frame":', $_[1] + 0, ',"type":"', $_[0], '"}'); $comma = ',' });
    $put->('],"name":', $name, ',"startValue":0,"type":"evented","unit":"none"}');
}

1;
