"""The source tree's shape (docs/architecture.md): includes and module uses
point down, and no source file grows past about 800 lines."""
import include_graph

# About 800 lines: a file that outgrows this holds more than one concern.
MAX_LINES = 850


def test_the_tools_includes_point_down():
    assert include_graph.cycles(include_graph.tool_graph()) == []


def test_kgrind_annotates_modules_use_each_other_downward():
    assert include_graph.cycles(include_graph.perl_graph()) == []


def test_a_cycle_is_found_where_there_is_one():
    graph = {'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}
    assert include_graph.cycles(graph) == [['a', 'b', 'c']]
    assert include_graph.layers({'a': {'b'}, 'b': set(), 'd': {'a', 'b'}}) == {'a': 1, 'b': 0, 'd': 2}


def test_no_source_file_is_over_about_800_lines():
    bench = sorted((include_graph.ROOT / 'bench').glob('*.py'))
    files = include_graph.tool_files() + include_graph.perl_files() + bench
    assert len(files) > 10 and len(bench) > 5
    long = {str(p.relative_to(include_graph.ROOT)): n for p in files
            if (n := len(p.read_text(errors='replace').splitlines())) > MAX_LINES}
    assert long == {}
