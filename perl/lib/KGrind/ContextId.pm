package KGrind::ContextId;
# --context-id=ID: the k-context that KGRIND_CURRENT_CONTEXT() or
# KGRIND_CURRENT_SITE_CONTEXT() returned ID for, from the "# kgrind-context
# <id> <thread> <label>... [sites <line>...]" records (labels and lines
# innermost first; a line is that level's call's, in the level above) and
# the ksf-fns table (docs/regions.md).
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use KGrind::Error;
use KGrind::Read::Records qw(table_name);

our @EXPORT_OK = qw(print_context_id);

# Prints the context of the first of @files that has it; returns 0.
sub print_context_id {
    my ($id, @files) = @_;
    for my $file (@files) {
        open(my $fh, '<', $file) or fail("cannot open $file: $!");
        my (@names, $found, %body);
        my $version = 0;
        while (my $l = <$fh>) {
            $l =~ s/\r?\n\z//;
            if (index($l, '# ksf-fns ') == 0) {
                push @names, map { table_name($_, $version, \%body) } split(/\t/, substr($l, 10), -1);
            }
            elsif ($l =~ /^c?fn=\((\d+)\) *(.+)$/) { $body{$1} = $2 }
            elsif ($l =~ /^# ksf-version: (\d+)$/) { $version = $1 }
            elsif ($l =~ /^# kgrind-context $id (\S+)((?: \d+)+)(?: sites((?: \d+)*))?$/) {
                $found = [$1, [split ' ', $2], defined $3 ? [split ' ', $3] : undef];
            }
        }
        close $fh;
        next unless $found;
        my ($thread, $labels, $lines) = @$found;
        my @chain = map { $names[$_] // fail("$file: context $id has unknown function id $_") } @$labels;
        if ($lines) {
            fail("$file: context $id has " . @$lines . " call sites for " . @chain . " levels") if @$lines != @chain - 1;
            # Each caller's calling line (none where the site's line is not known).
            $chain[$_ + 1] .= ":$lines->[$_]" for grep { $lines->[$_] } 0 .. $#$lines;
        }
        print "context $id, thread $thread: ", join(' > ', reverse @chain), "\n";
        return 0;
    }
    fail("context id $id is in none of " . join(', ', @files)
         . " (ids are written by KGRIND_CURRENT_CONTEXT() and KGRIND_CURRENT_SITE_CONTEXT())");
}

1;
