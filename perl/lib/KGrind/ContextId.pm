package KGrind::ContextId;
# --context-id=ID: the k-context that KGRIND_CURRENT_CONTEXT() returned ID
# for, from the "# kgrind-context <id> <thread> <label>..." records (labels
# innermost first) and the ksf-fns table (docs/regions.md).
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
            elsif ($l =~ /^# kgrind-context $id (\S+)((?: \d+)+)$/) { $found = [$1, [split ' ', $2]] }
        }
        close $fh;
        next unless $found;
        my ($thread, $labels) = @$found;
        my @chain = map { $names[$_] // fail("$file: context $id has unknown function id $_") } reverse @$labels;
        print "context $id, thread $thread: ", join(' > ', @chain), "\n";
        return 0;
    }
    fail("context id $id is in none of " . join(', ', @files) . " (ids are written by KGRIND_CURRENT_CONTEXT())");
}

1;
