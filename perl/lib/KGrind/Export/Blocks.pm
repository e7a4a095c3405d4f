package KGrind::Export::Blocks;
# Block modes: the table of all basic blocks (--show-blocks) and their
# instructions (--blocks-disasm, thesis Listing 4.15), by objdump.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use File::Spec;
use KGrind::Labels qw(base_name);
use KGrind::Format qw(commify);

# The table's lines, added to @$out.
sub show_blocks {
    my ($o, $S, $out) = @_;
    my $rule = '-' x 80;
    my $B = $S->{blocks};
    push @$out, '', $rule, 'All basic blocks: ' . scalar(@$B) . ' (sorted by execution count, then address)', $rule;
    my $dis = $o->{'blocks-disasm'} ? disasm_blocks($S) : undef;
    push @$out, @{$dis->{notes}} if $dis;
    push @$out, sprintf('%12s  %-18s  %s', 'count', 'address', 'block [function, file:line]');
    for my $b (@$B) {
        push @$out, sprintf('%12s  %-18s  %s [%s, %s:%d]', commify($b->{count}), sprintf('0x%x', $b->{addr}),
                            $b->{name}, $b->{fn}, $b->{file}, $b->{line});
        next unless $dis;
        my $ins = $dis->{blocks}{$b->{id}};
        push @$out, $ins ? ('  Disassembly:', map { "    $_" } @$ins) : '  Disassembly: not available';
    }
}

# The object file of each block's function: the profile's ob= line above the
# function's fn= lines in the callgrind body; without one (or for a function
# the body does not name), the cmd: executable, relative paths taken from the
# profile's directory.
sub object_of_fns {
    my ($P) = @_;
    return $P->{fnob} if $P->{fnob};
    my %fnob;
    my (%name, $ob);
    if (open(my $fh, '<:raw', $P->{file})) {
        while (my $l = <$fh>) {
            last if index($l, '# ksf-') == 0;
            next unless $l =~ /^(c?ob|c?fn|fl|fi|fe|cfi|cfl)=(?:\((\d+)\))?[ ]*([^\r\n]*)$/;
            my ($key, $id, $n) = ($1, $2, $3);
            my $sp = $key =~ /ob/ ? 'ob' : $key =~ /fn/ ? 'fn' : 'fl';
            if (defined $id) { if ($n ne '') { $name{$sp}{$id} = $n } else { $n = $name{$sp}{$id} // '' } }
            if ($key eq 'ob') { $ob = $n }
            elsif ($key eq 'fn' && defined $ob && $ob ne '???') { $fnob{base_name($n)} //= $ob }
        }
        close $fh;
    }
    return $P->{fnob} = \%fnob;
}

sub exe_of {
    my ($P) = @_;
    my ($exe) = split ' ', $P->{cmd} // '';
    return undef unless defined $exe && $exe ne '';
    return $exe if File::Spec->file_name_is_absolute($exe);
    my (undef, $dir) = File::Spec->splitpath(File::Spec->rel2abs($P->{file}));
    return File::Spec->catfile($dir, $exe);
}

sub disasm_blocks {
    my ($S) = @_;
    my (@notes, %ins);
    my $ok = `objdump --version 2>/dev/null`;
    unless ($? == 0 && $ok) {
        return { notes => ['-- objdump not found: no disassembly of the blocks'], blocks => {} };
    }
    # blocks by object file
    my %byobj;
    for my $b (@{$S->{blocks}}) {
        my $ob = object_of_fns($b->{obj})->{$b->{fn}} // exe_of($b->{obj});
        push @{$byobj{$ob // '?'}}, $b;
    }
    for my $ob (sort keys %byobj) {
        unless ($ob ne '?' && -f $ob) {
            push @notes, "-- object file '$ob' not found: no disassembly of its " . scalar(@{$byobj{$ob}}) . ' block(s)';
            next;
        }
        # function symbols: name -> [address, size]
        my %sym;
        my $q = $ob; $q =~ s/'/'\\''/g;
        for my $l (`objdump -t '$q' 2>/dev/null`) {
            next unless $l =~ /^([0-9a-f]+) .{7} (\S+)\t([0-9a-f]+)\s+(?:\.hidden\s+)?(\S+)\s*$/;
            my ($a, $sec, $sz, $n) = (hex $1, $2, hex $3, $4);
            next unless substr($l, 23, 1) eq 'F' || $sz;
            $sym{$n} //= [$a, $sz];
        }
        my (%fnblocks, %target);
        for my $b (@{$byobj{$ob}}) {
            my $s = $sym{$b->{fn}};
            unless ($s) { push @notes, "-- $b->{name}: no symbol '$b->{fn}' in '$ob': no disassembly"; next }
            $b->{faddr} = $s->[0] + $b->{offset};
            $target{$b->{faddr}} = $b->{name};
            push @{$fnblocks{$b->{fn}}}, $b;
        }
        for my $fn (sort keys %fnblocks) {
            my ($start, $size) = @{$sym{$fn}};
            my @bl = sort { $a->{faddr} <=> $b->{faddr} } @{$fnblocks{$fn}};
            my $stop = $start + ($size || 1);
            $stop = $bl[-1]{faddr} + 64 if $stop <= $bl[-1]{faddr};
            my @lines = `objdump -d -M intel --no-show-raw-insn --start-address=0x@{[sprintf '%x', $start]} --stop-address=0x@{[sprintf '%x', $stop]} '$q' 2>/dev/null`;
            my @insn;    # [address, text]
            for my $l (@lines) {
                next unless $l =~ /^\s*([0-9a-f]+):\s+(\S.*?)\s*$/;
                push @insn, [hex $1, $2];
            }
            for my $i (0 .. $#bl) {
                my $b = $bl[$i];
                my $next = $i < $#bl ? $bl[$i + 1]{faddr} : $stop;
                my @out;
                for my $x (@insn) {
                    next if $x->[0] < $b->{faddr};
                    last if $x->[0] >= $next && @out;
                    my $t = $x->[1];
                    $t =~ s/\b([0-9a-f]+) <[^>]*>/defined $target{hex $1} ? $target{hex $1} : $&/ge;
                    push @out, $t;
                    # a block ends at its first jump, call or return
                    last if $x->[1] =~ /^(?:(?:bnd|notrack|rep[a-z]*)\s+)*(?:j[a-z]+|call[a-z]*|ret[a-z]*|hlt|ud2)\b/;
                }
                $ins{$b->{id}} = \@out if @out;
            }
        }
    }
    return { notes => \@notes, blocks => \%ins };
}

1;
