package KGrind::Export::Source;
# Source annotation (--auto=yes, or source files given): each file's lines
# with their Ir from the callgrind body, around the costly lines, and at
# each function's first line its hottest k-contexts.
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use File::Spec;
use List::Util ();
use KGrind::Labels;
use KGrind::Model qw(cval outer_incl shown_contexts ctx_fn ctx_str);
use KGrind::Format qw(commify pct);

my $RULE = '-' x 80;

sub find_source {
    my ($o, $name, $P0) = @_;
    my @cand;
    if (File::Spec->file_name_is_absolute($name)) { push @cand, $name }
    else {
        push @cand, $name;
        my ($vol, $dir) = File::Spec->splitpath($P0->{file});
        push @cand, File::Spec->catfile($dir, $name) if $dir ne '';
    }
    (my $rel = $name) =~ s{^/+}{};
    my @parts = File::Spec->splitdir($rel);
    for my $d (@{$o->{include}}) {
        for my $i (0 .. $#parts) { push @cand, File::Spec->catfile($d, @parts[$i .. $#parts]) }
    }
    for my $c (@cand) { return $c if -f $c && -r _ }
    return undef;
}

# The annotated files' lines, added to @$out; $hot: [thread, its contexts
# in the table's order] of the threads shown.
sub annotate_sources {
    my ($o, $S, $hot, $out) = @_;
    my $src = $S->{src} // {};
    my $P0 = $S->{P}[0];
    my $pmtime = (sort { $a <=> $b } map { $_->{mtime} // 0 } @{$S->{P}})[0];
    my $byfn = hottest_by_function($hot);
    my @missing;    # named once, in one line
    for my $e (source_files($o, $S, $hot)) {
        my ($name, $key) = @$e;
        my $path = find_source($o, $key // $name, $P0);
        $path //= find_source($o, $name, $P0) if $key && $key ne $name;
        unless ($path) { push @missing, $key // $name; next }
        push @$out, '', $RULE, "-- Annotated source: $path", $RULE;
        my @text;
        if (open(my $fh, '<:raw', $path)) { @text = <$fh>; close $fh; chomp @text }
        else { pop @$out; push @$out, "-- Source file '$path' cannot be read: $!"; next }
        my $smtime = (stat $path)[9];
        push @$out, "WARNING: source file '$path' is newer than the profile '$P0->{file}': the annotation may be wrong"
            if defined $smtime && defined $pmtime && $smtime > $pmtime;
        annotate_file($o, $S, $key, \@text, $byfn, $out);
    }
    push @$out, '', '-- ' . (@missing == 1 ? 'Source file' : scalar(@missing) . ' source files') . ' not found '
        . (@{$o->{include}} ? '(searched -I ' . join(', ', @{$o->{include}}) . ')' : '(add directories with -I)')
        . ': ' . join(', ', map { "'$_'" } @missing) if @missing;
    if ($o->{auto} eq 'yes' and my $none = no_line_data($o, $S, $hot)) { push @$out, '', $none }
}

# With --auto, the line that says that the program's own functions in the
# tables have no file:line data (built without -g, or stripped), so
# nothing of them can be annotated; '' when they have.
sub no_line_data {
    my ($o, $S, $hot) = @_;
    my ($program) = split ' ', $S->{P}[0]{cmd} // '';
    return '' unless defined $program;
    (my $exe = $program) =~ s{.*/}{};
    my (%seen, @without);
    for my $h (@$hot) {
        my ($t, $sorted) = @$h;
        my ($show) = shown_contexts($o, $t->{C}, $sorted);
        for my $fn (map { $LNAME[ctx_fn($t->{C}, $_)] } @$show) {
            next if $seen{$fn}++;
            my ($obj, $file);
            for my $P (@{$S->{P}}) { $obj //= $P->{fnobj}{$fn}; $file //= $P->{fnfile}{$fn} }
            next unless defined $obj && $obj =~ m{(?:^|/)\Q$exe\E\z};
            push @without, $fn if ($file // '???') eq '???';
        }
    }
    return '' unless @without;
    return "-- $exe has no file:line data for its functions in the tables (" . join(', ', @without[0 .. List::Util::min(4, $#without)])
        . (@without > 5 ? ', ...' : '') . "): it was built without debug info (-g) or stripped, so its sources cannot be annotated";
}

# The files to annotate, [name given, the body's name of it]: the files
# given, and with --auto the files of the functions in the shown tables.
sub source_files {
    my ($o, $S, $hot) = @_;
    my $src = $S->{src} // {};
    my $fnline = $S->{fnline} // {};
    my @files;
    my %seen;
    for my $s (@{$o->{sources}}) {
        my ($match) = grep { $_ eq $s } keys %$src;
        ($match) = sort grep { m{(?:^|/)\Q$s\E$} || $s =~ m{(?:^|/)\Q$_\E$} } keys %$src unless $match;
        push @files, [$s, $match];
        $seen{$match // $s} = 1;
    }
    if ($o->{auto} eq 'yes') {
        my %fns;
        for my $h (@$hot) {
            my ($t, $sorted) = @$h;
            my ($show) = shown_contexts($o, $t->{C}, $sorted);
            $fns{$LNAME[ctx_fn($t->{C}, $_)]} = 1 for @$show;
        }
        for my $f (sort keys %$src) {
            next if $seen{$f} || $f eq '???';
            next unless grep { $fns{$_} } keys %{$fnline->{$f} // {}};
            push @files, [$f, $f];
            $seen{$f} = 1;
        }
    }
    return @files;
}

# Function name -> its hottest contexts, [thread, context], at most 5 over
# the shown threads.
sub hottest_by_function {
    my ($hot) = @_;
    my %byfn;
    for my $h (@$hot) {
        my ($t, $sorted) = @$h;
        my $C = $t->{C};
        for my $cid (@$sorted) {
            my $fname = $LNAME[ctx_fn($C, $cid)];
            my $l = $byfn{$fname} //= [];
            push @$l, [$t, $cid] if @$l < 5;
        }
    }
    return \%byfn;
}

# The lines of one file ($text) around its costly lines and functions'
# first lines ($key: the body's name of the file), added to @$out.
sub annotate_file {
    my ($o, $S, $key, $text, $byfn, $out) = @_;
    my $lines = $key ? $S->{src}{$key} : {};
    my $fnline = $S->{fnline} // {};
    my %first;    # line -> [functions starting there]
    for my $fn (sort keys %{$fnline->{$key // ''} // {}}) { push @{$first{$fnline->{$key}{$fn}}}, $fn }
    push @$out, sprintf('%15s  %s', 'Ir', 'source line');
    my %want;
    for my $l (keys %$lines, keys %first) {
        $want{$_} = 1 for ($l - $o->{context}) .. ($l + $o->{context});
    }
    my $n = @$text;
    my $prev = 0;
    for my $i (1 .. $n) {
        next unless $want{$i};
        push @$out, "-- line $i " . ('-' x 40) if $i != $prev + 1;
        $prev = $i;
        for my $fn (@{$first{$i} // []}) {
            next unless $byfn->{$fn};
            my $k = kstr($S->{kk});
            push @$out, sprintf('%15s  // hottest %s-contexts of %s:', '', $k, $fn);
            for my $h (@{$byfn->{$fn}}) {
                my ($t, $cid) = @$h;
                my $C = $t->{C};
                push @$out, sprintf('%15s  //   %s: Ir %s (%s), incl %s, calls %s%s', '', ctx_str($o, $C, $cid),
                    commify(cval($C, 'xexcl', $cid)), pct(cval($C, 'xexcl', $cid), $t->{ir}),
                    commify(outer_incl($C, $cid)), commify(cval($C, 'xcalls', $cid)),
                    @{$S->{threads}} > 1 ? ", thread $t->{tid}" : '');
            }
        }
        my $ir = $lines->{$i};
        push @$out, sprintf('%15s  %s', defined $ir ? commify($ir) : '.', $text->[$i - 1]);
    }
    my @beyond = grep { $_ > $n } sort { $a <=> $b } keys %$lines;
    push @$out, "-- " . scalar(@beyond) . " line(s) with cost beyond the end of the file (last: $beyond[-1]): "
        . "the source probably changed since the profile" if @beyond;
}

1;
