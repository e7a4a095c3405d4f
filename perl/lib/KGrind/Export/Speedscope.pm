package KGrind::Export::Speedscope;
# --format=speedscope: speedscope's file format
# (https://www.speedscope.app/file-format-schema.json; the types are in
# speedscope's src/lib/file-format-spec.ts).  One "sampled" profile per
# thread: a sample per k-context with exclusive Ir, its stack the context's
# path, outermost first, weighed by that Ir; unit "none" (instructions).
# A context that does not reach __root__ (finite k) starts with the frame
# "[truncated k=N]", as in the pprof export.  The samples are in path order,
# so the "Time Order" view draws the contexts sharing callers side by side.
use strict;
use warnings;
use JSON::PP ();

use KGrind::Export::Pprof ();

sub frames_of { KGrind::Export::Pprof::frames_of(@_) }

sub thread_profile {
    my ($data, $t, $frame_id) = @_;
    # [frames, Ir, sort key: the names]
    my @samples = sort { $a->[2] cmp $b->[2] } map {
        my $frames = frames_of($data, $_->{path});
        [[map { $frame_id->($_) } @$frames], $_->{Ir}, join("\0", @$frames)]
    } grep { $_->{Ir} } @{$t->{contexts}};    # speedscope draws weights, not calls
    my $sum = 0;
    $sum += $_->[1] for @samples;
    return { type => 'sampled', name => "thread $t->{tid} (k=$data->{k}, Ir)", unit => 'none',
             startValue => 0, endValue => $sum,
             samples => [map { $_->[0] } @samples], weights => [map { $_->[1] } @samples] };
}

sub write {
    my ($data, $fh, $opts) = @_;
    my (%fid, @frames);
    my $frame_id = sub {
        my ($name) = @_;
        return $fid{$name} if defined $fid{$name};
        my $src = $data->{sources}{$name};
        push @frames, { name => $name, ($src && $src->{file} ne '' ? (file => $src->{file}) : ()),
                        ($src && $src->{line} ? (line => $src->{line}) : ()) };
        return $fid{$name} = $#frames;
    };
    my @profiles = map { thread_profile($data, $_, $frame_id) } @{$data->{threads}};
    my $file = { '$schema' => 'https://www.speedscope.app/file-format-schema.json',
                 shared => { frames => \@frames }, profiles => \@profiles,
                 name => join(', ', @{$data->{files}}) . " (k=$data->{k})", activeProfileIndex => 0,
                 exporter => $data->{exporter} };
    print $fh JSON::PP->new->canonical->encode($file), "\n";
}

1;
