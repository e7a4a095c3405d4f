#!/usr/bin/perl
# kgrind_control: controls running kgrind processes through Valgrind's
# gdbserver (vgdb), with callgrind_control's usage (docs/regions.md).
use strict;
use warnings;
use Getopt::Long qw(GetOptionsFromArray :config no_ignore_case bundling no_auto_abbrev);

my $VERSION = '@KG_VERSION@';

sub usage {
    print <<"END";
Usage: kgrind_control [options] [<pid> | <program-name> ...]
Controls the kgrind processes given (all running ones if none is given)
through Valgrind's gdbserver (vgdb; the programs need --vgdb=yes, the default).
Without an option it lists them, as -l: "PID <pid>: <command line>" each.

  -h, --help             this help
      --version          kgrind_control's version
  -l, --list             list the running kgrind processes (pid, command line)
  -s, --stat             instrumentation and collection state, Ir run,
                         each thread's current k-context and stack depth
  -b, --back             each thread's whole shadow stack, innermost frame first,
                         each frame with its k-context
  -e, --events           the events counted since the last dump or zeroing:
                         totals, and each thread's Ir
  -k, --kill             kill the process (Valgrind's v.kill)
  -d, --dump[=<reason>]  write a profile now (kgrind.out.<pid>.<n>), then zero
  -z, --zero             zero the counters
  -i, --instr=on|off     switch instrumentation (counting) on or off
      --vgdb-prefix=<prefix>  the --vgdb-prefix given to valgrind, if any
END
}

sub fail { print STDERR "kgrind_control: ", @_, "\n"; exit 1 }

my @argv = @ARGV;
# -d takes no separate word (that is a pid or program name): a reason only
# as --dump=<reason>.
my $dump_reason;
@argv = grep { /^--dump=(.*)$/s ? do { $dump_reason = $1; 0 } : 1 } @argv;
# callgrind_control's "-i on" (a separate word) as well as "-ion" / "--instr=on".
for my $i (0 .. $#argv - 1) {
    if ($argv[$i] eq '-i' && $argv[$i + 1] =~ /^(?:on|off)$/) { splice(@argv, $i, 2, "--instr=$argv[$i + 1]"); last }
}
my %o;
{
    my @warn;
    local $SIG{__WARN__} = sub { push @warn, $_[0] };
    GetOptionsFromArray(\@argv, \%o, 'help|h', 'version', 'list|l', 'stat|s', 'back|b', 'events|e', 'kill|k', 'dump|d', 'zero|z',
                        'instr|i=s', 'vgdb-prefix=s')
        or do { my $m = $warn[0] // "bad options\n"; chomp $m; fail("$m (see kgrind_control --help)") };
}
if ($o{help}) { usage(); exit 0 }
if ($o{version}) { print "kgrind_control-$VERSION\n"; exit 0 }
fail("-i takes on or off, not '$o{instr}'") if defined $o{instr} && $o{instr} !~ /^(?:on|off)$/;

my @prefix = defined $o{'vgdb-prefix'} ? ("--vgdb-prefix=$o{'vgdb-prefix'}") : ();

# Running kgrind processes: pid -> command line (from vgdb -l).
sub kgrind_processes {
    my %p;
    open(my $fh, '-|', 'vgdb', @prefix, '-l') or fail("cannot run vgdb: $!");
    while (my $l = <$fh>) {
        next unless $l =~ /^use --pid=(\d+) for (.*?)\s*$/;
        my ($pid, $cmd) = ($1, $2);
        $p{$pid} = $cmd if $cmd =~ /\s--tool=kgrind(?:\s|$)/;
    }
    close $fh;
    return \%p;
}

# The client's program name: the first word after valgrind's own options.
sub program_of {
    my @w = split ' ', shift;
    shift @w;
    shift @w while @w && $w[0] =~ /^-/;
    return $w[0] // '';
}

my $procs = kgrind_processes();
my @targets;
if (@argv) {
    for my $t (@argv) {
        if ($t =~ /^\d+$/) {
            fail("no kgrind process with pid $t (kgrind_control -l lists them)") unless $procs->{$t};
            push @targets, $t;
        } else {
            my @m = grep { my $p = program_of($procs->{$_}); $p eq $t || $p =~ m{/\Q$t\E$} } sort { $a <=> $b } keys %$procs;
            fail("no kgrind process running a program named '$t' (kgrind_control -l lists them)") unless @m;
            push @targets, @m;
        }
    }
} else {
    @targets = sort { $a <=> $b } keys %$procs;
}

if ($o{list}) {
    print "PID $_: $procs->{$_}\n" for @targets;
    fail("no kgrind process is running (with --vgdb=yes, the default)") unless @targets;
    exit 0;
}

my @commands;
push @commands, ['instrumentation', $o{instr}] if defined $o{instr};
push @commands, ['zero'] if $o{zero};
$o{dump} = 1 if defined $dump_reason;
push @commands, ['dump', defined $dump_reason && $dump_reason ne '' ? $dump_reason : ()] if $o{dump};
push @commands, ['status'] if $o{stat};
push @commands, ['stack'] if $o{back};
push @commands, ['events'] if $o{events};
push @commands, ['v.kill'] if $o{kill};
unless (@commands) {
    # As callgrind_control without options: show the processes.
    print "PID $_: $procs->{$_}\n" for @targets;
}
fail("no kgrind process is running (with --vgdb=yes, the default)") unless @targets;

my $status = 0;
for my $pid (@targets) {
    for my $c (@commands) {
        my $out = monitor($pid, @$c);
        $out = '' if $c->[0] eq 'v.kill';    # vgdb's own lines on the kill
        print "PID $pid: " if @targets > 1;
        print $out;
        $status = 1 if $out =~ /^kgrind: .*(?:failed|unknown|cannot)/m;
    }
}
exit $status;

# One monitor command to process pid; its answer.
sub monitor {
    my ($pid, @cmd) = @_;
    # vgdb reports the connection's end after v.kill: not news
    my $quiet = $cmd[0] eq 'v.kill';
    open(my $stderr, '>&', \*STDERR) or fail("cannot dup stderr: $!") if $quiet;
    open(STDERR, '>', '/dev/null') if $quiet;
    open(my $fh, '-|', 'vgdb', @prefix, "--pid=$pid", @cmd) or fail("cannot run vgdb: $!");
    open(STDERR, '>&', $stderr) if $quiet;
    local $/;
    my $out = <$fh> // '';
    close $fh;
    fail("vgdb could not reach process $pid (exit status " . ($? >> 8) . ")") if $? != 0 && $out eq '';
    return $out;
}

__END__

=head1 NAME

kgrind_control - control running kgrind processes

=head1 SYNOPSIS

B<kgrind_control> [I<options>] [I<pid> | I<program-name> ...]

=head1 DESCRIPTION

B<kgrind_control> controls the kgrind processes given (all running ones
if none is given) through Valgrind's gdbserver (B<vgdb>; the programs need
B<--vgdb=yes>, the default), with B<callgrind_control>'s usage.  A process
is named by its pid or by its program's name.  Without an option it lists
them, as B<-l>: "PID I<pid>: I<command line>" each.

=head1 OPTIONS

=over 4

=item B<-h>, B<--help>

Print the usage and exit.

=item B<--version>

Print kgrind_control's version and exit.

=item B<-l>, B<--list>

List the running kgrind processes (pid, command line).

=item B<-s>, B<--stat>

Instrumentation and collection state, Ir run, each thread's current
k-context and stack depth.

=item B<-b>, B<--back>

Each thread's whole shadow stack (its running stack), innermost frame
first: "[I<depth>] I<function>   (I<its k-context>)" a frame, as
B<callgrind_control -b>'s backtrace.

=item B<-e>, B<--events>

The events counted since the last dump or zeroing, as
B<callgrind_control -e>: "events: Ir", their totals (every thread's, the
ended ones' too), and each running thread's Ir.

=item B<-k>, B<--kill>

Kill the process (Valgrind's B<v.kill> monitor command), as
B<callgrind_control -k>.  It writes no profile: its file stays the
start-up one, "Incomplete profile", or the dumps written before it
(dump first with B<-d>).

=item B<-d>, B<--dump>[=I<reason>]

Write a profile now (F<kgrind.out.>I<pid>F<.>I<n>), then zero the
counters.  A reason is given only as B<--dump>=I<reason> (the word after
B<-d> is a pid or program name).

=item B<-z>, B<--zero>

Zero the counters.

=item B<-i>, B<--instr>=B<on>|B<off>

Switch instrumentation (counting) on or off (also B<-i on>, B<-ion>).

=item B<--vgdb-prefix>=I<prefix>

The B<--vgdb-prefix> given to valgrind, if any.

=back

=head1 EXAMPLES

Dump a profile of a running program, then annotate it:

    valgrind --tool=kgrind ./server &
    kgrind_control --dump=warm server
    kgrind_annotate kgrind.out.*.1

Count only a phase of a run started with B<--instr-atstart=no>:

    kgrind_control -i on 12345
    kgrind_control -i off 12345

=head1 EXIT STATUS

=over 4

=item B<0>

Success.

=item B<1>

Bad usage, no such kgrind process, B<vgdb> could not reach it, or kgrind
refused a command.

=back

=head1 FILES

=over 4

=item F<kgrind.out.>I<pid>F<.>I<n>

The profiles that B<--dump> makes a process write.

=back

=head1 SEE ALSO

L<valgrind(1)>, L<vgdb(1)>, L<kgrind_annotate(1)>, L<callgrind_control(1)>;
docs/regions.md in kgrind's sources.

=cut
