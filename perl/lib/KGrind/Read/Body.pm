package KGrind::Read::Body;
# The callgrind body of a profile, read line by line for source
# annotation and the call graph: cost lines (Ir per source line and
# thread), name lines (ob= fl= fn= ... with name compression), calls= and
# jump lines, and the header fields between them.  $R is the reader's
# state (KGrind::Profile); $R->{body} the position in the body.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use KGrind::Error;
use KGrind::Labels qw(base_name);
use KGrind::Read::Header qw(cost_line positions);

our @EXPORT = qw(body_start body_line cost_line_of_body);

my %NAME_SPACE = (ob => 'ob', cob => 'ob', fl => 'fl', fi => 'fl', fe => 'fl', cfi => 'fl', cfl => 'fl',
                  fn => 'fn', cfn => 'fn', jfi => 'fl', jfn => 'fn');

# The position before the first line: the current file, inline file,
# function, thread; whether the last line was a calls= or jump line; the
# last line number; the callee of a calls= line, and that call awaiting
# its cost line.
sub body_start {
    my ($R) = @_;
    $R->{body} = { fl => '???', fi => undef, fn => '???', thread => '', after_calls => 0, last_line => 0,
                   cfn => undef, pending_call => undef };
}

# A body line other than a cost line (one that starts with a position:
# 0-9 + - *).
sub body_line {
    my ($R, $l, $ln) = @_;
    return if $l eq '';
    my ($file, $P, $B) = @$R{qw(file P body)};
    my $eq = index($l, '=');
    if ($eq > 0 && $eq <= 5) {
        my $key = substr($l, 0, $eq);
        if (my $space = $NAME_SPACE{$key}) {
            name_line($R, $l, $ln, $key, $space, $eq) if $R->{want_src};
            return;
        }
        if ($key eq 'calls' || $key eq 'jump' || $key eq 'jcnd') {
            return unless $R->{want_src};
            # count (jcnd: taken/executed), then the target position
            my $count = $key eq 'jcnd' ? '\d+/\d+' : '\d+';
            ferr($file, $ln, "malformed $key= line: '", printable($l), "'")
                unless substr($l, $eq + 1) =~ /^$count(?: (?:0x[0-9a-fA-F]+|[+-]?\d+|\*))*\s*$/;
            $B->{after_calls} = 1;
            $B->{pending_call} = ["$B->{fn}\0$B->{cfn}", (substr($l, $eq + 1) =~ /^(\d+)/)[0], $B->{fi} // $B->{fl}]
                if $key eq 'calls' && defined $B->{cfn};
            return;
        }
    }
    if ($l =~ /^(\w[\w ]*):\s*(.*)$/) {    # other callgrind header lines are allowed
        my ($key, $val) = ($1, $2);
        if ($key eq 'creator') { $P->{creator} = $val }
        elsif ($key eq 'pid') { $P->{pid} = $val }
        elsif ($key eq 'cmd') { $P->{cmd} = $val }
        elsif ($key eq 'thread') { $B->{thread} = $val }
        elsif ($key eq 'part') { $B->{thread} = '' }
        elsif ($key eq 'summary' || $key eq 'totals') { cost_line($R, $key, $val, $ln) }
        elsif ($key eq 'events') { $P->{events} = $val }
        elsif ($key eq 'positions') { positions($R, $val, $ln) }
        elsif ($key eq 'desc') { $P->{desc}{$1} = $2 if $val =~ /^([^:]+):\s*(.*)$/ }
        return;
    }
    ferr($file, $ln, "unrecognized line: '", printable($l), "'");
}

# A cost line: the Ir of a source line, or the inclusive cost of the call
# (or a jump's source) on the line before.  Read only for source
# annotation: without it the body's costs are not needed, only the k-SF
# records are (and they are checked strictly).
sub cost_line_of_body {
    my ($R, $l, $ln) = @_;
    my ($P, $B) = @$R{qw(P body)};
    my ($pos, $ir) = $R->{instr}
        ? $l =~ /^(?:0x[0-9a-fA-F]+|[+-]?\d+|\*) ([+-]?\d+|\*)(?: (\d+))?(?: \d+)*\s*$/
        : $l =~ /^([+-]?\d+|\*)(?: (\d+))?(?: \d+)*\s*$/
        or ferr($R->{file}, $ln, "malformed cost line: '", printable($l), "'");
    my $p0 = ord $pos;
    my $line = $pos eq '*' ? $B->{last_line}
             : ($p0 == 43 || $p0 == 45) ? $B->{last_line} + $pos : $pos;
    $B->{last_line} = $line;     # relative positions follow every cost line, calls' too
    if ($B->{after_calls}) {     # inclusive cost of a call, or a jump's source
        # the call graph between contexts: "caller\0callee" -> [calls, inclusive Ir]
        if (my $call = $B->{pending_call}) {
            my $e = $P->{calls}{$call->[0]} //= [0, 0];
            $e->[0] += $call->[1];
            $e->[1] += $ir // 0;
            # and per call site (kgrind_annotate --sites): file and line in the caller
            if ($R->{want_sites}) {
                my $s = $P->{call_sites}{$call->[0]}{"$call->[2]\0$line"} //= [0, 0];
                $s->[0] += $call->[1];
                $s->[1] += $ir // 0;
            }
        }
        ($B->{after_calls}, $B->{pending_call}) = (0, undef);
        return;
    }
    return unless $ir;
    my $sf = $B->{fi} // $B->{fl};
    $P->{src}{$B->{thread}}{$sf}{$line} += $ir;
    my $base = base_name($B->{fn});
    my $h = $P->{fnline}{$B->{thread}}{$sf} //= {};
    $h->{$base} = $line if !defined $h->{$base} || $line < $h->{$base};
}

# A name line "key=(id) name", "key=(id)" or "key=name".
sub name_line {
    my ($R, $l, $ln, $key, $space, $eq) = @_;
    my ($file, $P, $B) = @$R{qw(file P body)};
    my $name = substr($l, $eq + 1);
    if (ord($name) == 40) {    # '(' id ')' [name]
        my $close = index($name, ')');
        my $id = substr($name, 1, $close - 1);
        ferr($file, $ln, "malformed $key= line: '", printable($l), "'")
            if $close < 2 || $id =~ tr/0-9//c;
        $name = substr($name, $close + 1);
        $name = substr($name, 1) while ord($name) == 32;
        if ($name ne '') { $R->{names}{$space}{$id} = $name }
        else {
            $name = $R->{names}{$space}{$id};
            ferr($file, $ln, "$key=($id) used before its name was given") unless defined $name;
        }
    }
    if    ($key eq 'fn') {
        ($B->{fn}, $B->{fi}) = ($name, undef);
        $P->{fnfile}{base_name($name)} //= $B->{fl};
        $P->{fnobj}{base_name($name)} //= $B->{ob} if defined $B->{ob};
    }
    elsif ($key eq 'ob') { $B->{ob} = $name }
    elsif ($key eq 'cfn') { $B->{cfn} = $name }
    elsif ($key eq 'fl') { $B->{fl} = $name; $B->{fi} = undef }
    elsif ($key eq 'fi' || $key eq 'fe') { $B->{fi} = $name eq $B->{fl} ? undef : $name }
}

1;
