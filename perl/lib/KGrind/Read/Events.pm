package KGrind::Read::Events;
# The k-SF records' events beyond Ir (docs/output-format.md): the events
# that ksf-options' "events=" names, and each thread's "# ksf-events" lines,
# every listed node's exclusive count of each event in the nodes' order,
# and with "events-incl=yes" its inclusive count too.
# A thread's events end up in $T->{ev}: one packed column ("Q>", as
# KGrind::Columns) an event, in the order of $P->{ksf_events}; the
# inclusive ones in $T->{evi}, the same way.  $R is the
# reader's state (KGrind::Profile).
use strict;
use warnings;
no warnings 'portable';    # 64-bit pack
use Exporter 'import';
use MIME::Base64 ();
use KGrind::Error;

our @EXPORT = qw(events_option event_stream events_end);

# ksf-options' "events=Dr,Dw,...": the names, each once, none of them Ir.
sub events_option {
    my ($R, $value, $ln) = @_;
    my $file = $R->{file};
    my @names = split /,/, $value, -1;
    my %seen;
    for my $e (@names) {
        ferr($file, $ln, "ksf-options: bad event name '", printable($e), "' in events=") unless $e =~ /^[A-Za-z]\w*$/;
        ferr($file, $ln, "ksf-options: events= names $e twice") if $seen{$e}++;
        ferr($file, $ln, "ksf-options: events= names Ir (every record has it)") if $e eq 'Ir';
    }
    ferr($file, $ln, "ksf-options: events= in a block-mode profile") if $R->{P}{mode} ne 'func';
    my @body = grep { $_ ne 'Ir' } split ' ', $R->{P}{events} // 'Ir';
    ferr($file, $ln, "ksf-options: events=$value is not the body's events after Ir (", join(',', @body), ")")
        unless "@body" eq "@names";
    return \@names;
}

# A "# ksf-events <base64>" line: whole nodes, each "mask [count]...": for
# E events, bit c of mask says the exclusive count of event c follows, bit
# E + c (with events-incl=yes) that its inclusive count follows, after the
# exclusive ones (else it is the exclusive count).
sub event_stream {
    my ($R, $l, $ln) = @_;
    my ($file, $T, $names) = ($R->{file}, $R->{thread}, $R->{P}{ksf_events});
    ferr($file, $ln, "ksf-events outside a ksf-thread record") unless $T;
    ferr($file, $ln, "ksf-events in a profile whose ksf-options name no events=") unless $names;
    ferr($file, $ln, "ksf-events record in a version $R->{version} file") if $R->{version} < 3;
    my $text = substr($l, 13);
    ferr($file, $ln, "ksf-events: malformed base64") unless $text =~ m{^[A-Za-z0-9+/]+={0,2}$} && length($text) % 4 == 0;
    my $bytes = MIME::Base64::decode_base64($text);
    ferr($file, $ln, "ksf-events: the line ends inside a number") if $bytes =~ /[\x80-\xff]\z/;
    my @v = unpack('w*', $bytes);
    my $n_ev = @$names;
    my $incl = $R->{P}{ksf_events_incl};
    my $bits = $incl ? 2 * $n_ev : $n_ev;
    my $cols = $T->{ev_read} //= [map { [] } 1 .. $n_ev];
    my $icols = $T->{evi_read} //= [map { [] } 1 .. $n_ev];
    my $i = 0;
    my $count = sub {
        ferr($file, $ln, "ksf-events: the line ends inside a node") if $i >= @v;
        my $x = $v[$i++];
        ferr($file, $ln, "ksf-events: a number above 10^18") if $x >= 1e18;
        return $x;
    };
    while ($i < @v) {
        my $mask = $v[$i++];
        ferr($file, $ln, "ksf-events: node ", scalar(@{$cols->[0] // []}), ": mask $mask names events beyond the $n_ev of events=")
            if $mask >> $bits;
        my @x = map { $mask >> $_ & 1 ? $count->() : 0 } 0 .. $n_ev - 1;
        push @{$cols->[$_]}, $x[$_] for 0 .. $n_ev - 1;
        next unless $incl;
        for my $c (0 .. $n_ev - 1) {
            my $y = $mask >> ($n_ev + $c) & 1 ? $count->() : $x[$c];
            ferr($file, $ln, "ksf-events: node ", $#{$cols->[$c]}, ": inclusive $names->[$c] $y below its exclusive $x[$c]")
                if $y < $x[$c];
            push @{$icols->[$c]}, $y;
        }
    }
}

# At ksf-end-thread: one count of each event a node, packed.
sub events_end {
    my ($R, $ln, $T, $nnodes) = @_;
    my ($file, $names) = ($R->{file}, $R->{P}{ksf_events});
    return unless $names;
    my $cols = delete($T->{ev_read}) // [map { [] } @$names];
    my $icols = delete($T->{evi_read}) // [map { [] } @$names];
    my $got = @$cols ? @{$cols->[0]} : 0;
    ferr($file, $ln, "thread $T->{tid}: ksf-events lists $got nodes, the thread has $nnodes")
        if @$names && $got != $nnodes;
    $T->{ev} = [map { pack('Q>*', @$_) } @$cols];
    $T->{evi} = [map { pack('Q>*', @$_) } @$icols] if $R->{P}{ksf_events_incl};
    $T->{ev_names} = $names;
}

1;
