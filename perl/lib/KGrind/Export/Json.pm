package KGrind::Export::Json;
# --format=json: everything, written as it is produced: the profiles, the
# block table (block modes), and per thread its contexts, k-CCF and k-SF
# (docs/output-format.md).
use strict;
use warnings;
no warnings 'portable';    # 64-bit vec (callers' too: a warning is checked where the last statement ran)
use Exporter 'import';
use List::Util ();
use KGrind::Labels;
use KGrind::Forest qw(ccf_nodes ctx_labels);
use KGrind::Model;
use KGrind::Events qw(context_event forest_event_names derived_names miss_rates);
use KGrind::TreeView;
use KGrind::Format qw(js);
use KGrind::Output;
use KGrind::Sites qw(site_index level_lines innermost_sites);

# A forest as a flat array of node objects in pre-order, each with its
# index in the array (id) and its parent's (null for a root): any parser
# reads it however deep the tree is (nested objects broke parsers with
# recursion limits on deep profiles).  Walked with an explicit stack and
# written as it is produced.
sub json_tree {
    my ($o, $F, $T) = @_;
    my $view = tree_view($o, $T);
    # events beyond Ir, as the contexts have them: exclusive, derived, inclusive
    my ($events, $derived) = (forest_event_names($F), derived_names($F));
    my @all = (@$events, @$derived);
    my @key = map { js($_) . ':' } @all;
    my $counts = $view->{reader}->([@all, $F->{evi} ? map { "incl:$_" } @all : ()]);
    my $evs = !@$events ? sub { '' } : sub {
        my @n = $counts->($_[0]);
        my $group = sub { my $o = shift; '{' . join(',', map { $key[$_] . $n[$o + $_] } @_) . '}' };
        return ',"events":' . $group->(0, 0 .. $#$events)
            . (@$derived ? ',"derived":' . $group->(0, @$events .. $#all) : '')
            . ($F->{evi} ? ',"events_inclusive":' . $group->(scalar(@all), 0 .. $#all) : '');
    };
    my $s = '[';
    my $id = 0;
    my @stack = ([$view->{roots}, 0, 'null']);    # [siblings, index of the next one, their parent's id]
    while (@stack) {
        my $top = $stack[-1];
        my ($list, $i, $par) = @$top;
        if ($i == @$list) { pop @stack; next }
        $top->[1]++;
        my $v = $list->[$i];
        my ($fn, $cal, $exc, $inc) = $view->{node}->($v);
        $s .= ($id ? ',' : '') . '{"id":' . $id . ',"parent":' . $par . ',"name":' . js($LNAME[$fn])
            . ',"calls":' . $cal . ',"Ir":' . $exc . ',"inclusive":' . $inc . $evs->($v) . '}';
        my $kids = $view->{kids}->($v);
        push @stack, [$kids, 0, $id] if $kids && @$kids;
        $id++;
        if (length $s >= 1 << 16) { out($s); $s = '' }
    }
    out($s, ']');
}

# A rate as a JSON number (0 when the denominator is 0).
sub rate { my ($num, $den) = @_; $den ? sprintf('%.6g', $num / $den) : 0 }

# The whole JSON document, written as it is produced.
sub show {
    my ($o, $S) = @_;
    my @P = @{$S->{P}};
    my $P0 = $P[0];
    my $kj = sub { $_[0] == $INF ? '"inf"' : $_[0] };
    # events beyond Ir: their sums over the threads' nodes; the derived
    # events and miss rates of those sums
    my $events = @{$S->{threads}} ? forest_event_names($S->{threads}[0]{F}) : [];
    my $derived = @{$S->{threads}} ? derived_names($S->{threads}[0]{F}) : [];
    my ($total, $have) = event_totals($S);
    my $rates = @$events ? miss_rates(sub { $total->{$_[0]} // 0 }, $have) : [];
    my $pid = $P0->{pid} // 0;
    $pid = 0 unless $pid =~ /^\d+$/;
    my $s = '{"version":2,"tool":"kgrind","creator":' . js($P0->{creator} // '') . ',"files":['
        . join(',', map { js($_->{file}) } @P) . '],"cmd":' . js($P0->{cmd} // '') . ",\"pid\":$pid,\"pids\":["
        . join(',', map { ($_->{pid} // '') =~ /^\d+$/ ? $_->{pid} : 0 } @P) . '],"cmds":['
        . join(',', map { js($_->{cmd} // '') } @P) . '],"k":' . $kj->($S->{kk})
        . ',"recorded_k":' . $kj->($S->{K}) . ',"mode":' . js($P0->{mode}) . ',"rolling":'
        . ($P0->{rolling} eq 'yes' ? 'true' : 'false') . ',"inline_frames":' . ($P0->{inline} eq 'yes' ? 'true' : 'false')
        . ',"joined":' . ($S->{joined} ? 'true' : 'false')
        . ',"events":[' . join(',', map { js($_) } 'Ir', @$events) . '],"total":{"Ir":' . $S->{total}
        . join('', map { ',' . js($_) . ':' . $total->{$_} } @$events) . '}'
        . (@$derived ? ',"derived":{' . join(',', map { js($_) . ':' . $total->{$_} } @$derived) . '}' : '')
        . (@$rates ? ',"rates":{' . join(',', map { js($_->[0]) . ':' . rate($_->[1], $_->[2]) } @$rates) . '}' : '')
        . ',"sort":' . js($o->{sort});
    if ($S->{blockmode}) {
        $s .= ',"roll_loops":' . ($P0->{roll} eq 'yes' ? 'true' : 'false') . ',"blocks":['
            . join(',', map { '{"name":' . js($_->{name}) . ',"address":' . js(sprintf('0x%x', $_->{addr}))
                . ',"count":' . $_->{count} . ',"function":' . js($_->{fn}) . ',"offset":' . $_->{offset}
                . ',"file":' . js($_->{file}) . ',"line":' . $_->{line} . '}' } @{$S->{blocks}}) . ']';
    }
    out($s, ',"threads":[');
    my @jname = map { js($_) } @LNAME;
    my $sep = '';
    my $I = $o->{sites} && !$S->{blockmode} ? site_index($S) : undef;
    for my $t (@{$S->{threads}}) {
        my $C = $t->{C};
        my $tid = $t->{tid} eq 'all' ? '"all"' : $t->{tid};
        my $sorted = select_contexts($o, $C);
        out("$sep\{\"tid\":$tid," . (defined $t->{fname} ? '"function":' . js($t->{fname}) . ',' : '')
            . "\"Ir\":$t->{ir},\"ksf_nodes\":$t->{F}{n},\"ksf_nodes_left_out\":" . left_out_nodes($S, $t->{tid})
            . ',"kccf_nodes":' . ccf_nodes($C) . ',"contexts":[');
        my $comma = '';
        for my $cid (@$sorted) {
            my $labels = ctx_labels($C, $cid);
            out($comma, '{"path":[', join(',', @jname[@$labels]), '],',
                # the stack formats' truncation marker (KGrind::Model::truncation_marker)
                (!$S->{blockmode} && is_truncated(kstr($S->{kk}), $LNAME[$labels->[0]]) ? '"truncated":true,' : ()),
                '"calls":', cval($C, 'xcalls', $cid),
                ',"Ir":', cval($C, 'xexcl', $cid), ',"inclusive":', cval($C, 'xincl', $cid), ',"inclusive_outermost":',
                outer_incl($C, $cid),
                (@$events ? (',"events":{', join(',', map { js($_) . ':' . context_event($C, $_, $cid) } @$events), '}') : ()),
                (@$derived ? (',"derived":{', join(',', map { js($_) . ':' . context_value($C, $_, $cid) } @$derived), '}')
                           : ()),
                # their inclusive counts (of the outermost activations, as inclusive_outermost)
                ($C->{F_of}{evi} ? (',"events_inclusive":{',
                                    join(',', map { js($_) . ':' . context_value($C, "incl:$_", $cid) } @$events, @$derived),
                                    '}') : ()),
                ($I ? json_sites($S, $I, [@LNAME[@$labels]], cval($C, 'xcalls', $cid)) : ()),
                '}');
            $comma = ',';
        }
        out('],"kccf":');
        json_tree($o, $t->{F}, ccf_tree($o, $t));
        out(',"ksf":');
        json_tree($o, $t->{F}, ksf_tree($o, $t));
        out('}');
        $sep = ',';
    }
    out("]}\n");
}

# --sites: "lines" (each level's but the last's: the lines it called the
# next level from) and "sites" (the innermost call's calls per caller and
# line, when the body splits them: KGrind::Sites).
sub json_sites {
    my ($S, $I, $path, $calls) = @_;
    my $sites = ($S->{joined} || $S->{ntids} == 1) ? innermost_sites($I, $path, $calls) : undef;
    return (',"lines":[', join(',', map { '[' . join(',', @$_) . ']' } @{level_lines($I, $path)}), ']',
            $sites ? (',"sites":[', join(',', map {
                '{"caller":' . (defined $_->{caller} ? js($_->{caller}) : 'null') . ',"line":' . ($_->{line} // 'null')
                . ',"calls":' . $_->{calls} . ',"inclusive":' . ($_->{incl} // 'null') . '}' } @$sites), ']') : ());
}

1;
