"""The benchmark suite's programs and inputs: builds bench/workloads/*.{c,cpp} and
generates their inputs (text, SQL, a preprocessed C++ file) deterministically
for a scale."""
import os
import random
import shutil
import subprocess
from configs import BUILT, COMPRESSORS, LARGE_NAMES, LARGE_UNITS, SCRIPTS, WORKLOADS_DIR


def units(n, scale):
    return max(1, int(round(n * scale)))


def gen_text(path, size):
    """Deterministic word soup for bzip2."""
    rng = random.Random(7)
    words = [bytes(rng.choice(b'abcdefghijklmnopqrstuvwxyz') for _ in range(rng.randint(2, 9)))
             for _ in range(5000)]
    out = bytearray()
    while len(out) < size:
        out += rng.choice(words) + (b'\n' if rng.random() < 0.08 else b' ')
    path.write_bytes(bytes(out[:size]))


def gen_sql(path, scale):
    """Deterministic SQL script: three tables filled by INSERTs in one
    transaction, three index builds, joins with GROUP BY, a self-join, an
    UPDATE with a subquery."""
    rng = random.Random(11)
    nc, no, npd = max(10, int(4000 * scale)), max(50, int(40000 * scale)), 500
    lines = ['PRAGMA journal_mode=OFF;', 'BEGIN;',
             'CREATE TABLE customer(id INTEGER PRIMARY KEY, name TEXT, city TEXT, tier INTEGER);',
             'CREATE TABLE product(id INTEGER PRIMARY KEY, name TEXT, price REAL);',
             'CREATE TABLE orders(id INTEGER PRIMARY KEY, customer INTEGER, product INTEGER, '
             'qty INTEGER, day INTEGER);']
    cities = ['city%02d' % i for i in range(40)]
    for i in range(1, nc + 1):
        lines.append(f"INSERT INTO customer VALUES({i},'cust{rng.randrange(10**6):06d}',"
                     f"'{rng.choice(cities)}',{rng.randrange(4)});")
    for i in range(1, npd + 1):
        lines.append(f"INSERT INTO product VALUES({i},'prod{i:04d}',{rng.randrange(100, 10000) / 100});")
    for i in range(1, no + 1):
        lines.append(f"INSERT INTO orders VALUES({i},{rng.randrange(1, nc + 1)},{rng.randrange(1, npd + 1)},"
                     f"{rng.randrange(1, 10)},{rng.randrange(365)});")
    lines += [
        'COMMIT;',
        'CREATE INDEX orders_customer ON orders(customer);',
        'CREATE INDEX orders_product_day ON orders(product, day);',
        'CREATE INDEX customer_city ON customer(city, tier);',
        'SELECT c.city, count(*), round(sum(o.qty * p.price), 2) FROM orders o '
        'JOIN customer c ON c.id = o.customer JOIN product p ON p.id = o.product '
        'GROUP BY c.city ORDER BY 3 DESC LIMIT 5;',
        'SELECT p.name, sum(o.qty) AS n FROM product p JOIN orders o ON o.product = p.id '
        'WHERE o.day BETWEEN 100 AND 200 GROUP BY p.id ORDER BY n DESC LIMIT 5;',
        'SELECT c.tier, count(DISTINCT c.id), avg(o.qty) FROM customer c '
        'JOIN orders o ON o.customer = c.id GROUP BY c.tier;',
        'SELECT count(*) FROM orders o1 JOIN orders o2 ON o1.customer = o2.customer '
        'AND o1.day < o2.day AND o2.day < o1.day + 7;',
        'UPDATE product SET price = price * 1.1 WHERE id IN '
        '(SELECT product FROM orders GROUP BY product HAVING sum(qty) > 400);',
        'SELECT round(sum(price), 2) FROM product;',
    ]
    path.write_text('\n'.join(lines) + '\n')


def gen_cpp(path, types):
    """Deterministic C++ program: `types` record types, each stored in a
    map of vectors, sorted, deduplicated and printed, so every type
    instantiates its own map/vector/sort/string/iostream code."""
    lines = ['#include <algorithm>', '#include <iostream>', '#include <map>', '#include <string>',
             '#include <vector>', '',
             'template <typename K, typename V> struct Table {',
             '  std::map<K, std::vector<V>> rows;',
             '  void add(const K &k, const V &v) { rows[k].push_back(v); }',
             '  std::size_t total() const { std::size_t n = 0; for (auto &r : rows) n += r.second.size(); return n; }',
             '};',
             'template <typename T> std::vector<T> sorted_unique(std::vector<T> v) {',
             '  std::sort(v.begin(), v.end());',
             '  v.erase(std::unique(v.begin(), v.end()), v.end());',
             '  return v;',
             '}']
    for i in range(types):
        lines += [f'struct Rec{i} {{ int id; std::string name; double w{"".join(f", f{j}" for j in range(i % 4))}; }};',
                  f'bool operator<(const Rec{i} &a, const Rec{i} &b) {{ return a.name < b.name || '
                  f'(a.name == b.name && a.id < b.id); }}',
                  f'bool operator==(const Rec{i} &a, const Rec{i} &b) {{ return a.id == b.id && a.name == b.name; }}',
                  f'std::ostream &operator<<(std::ostream &o, const Rec{i} &r) {{ return o << r.id << r.name; }}',
                  f'std::size_t use{i}(int n) {{',
                  f'  Table<std::string, Rec{i}> t; std::vector<Rec{i}> all;',
                  '  for (int j = 0; j < n; ++j) {',
                  f'    Rec{i} r{{j * {i + 3} % 17, "r" + std::to_string(j % 5), j * 0.5}};',
                  '    t.add(r.name, r); all.push_back(r); }',
                  '  auto u = sorted_unique(all);',
                  '  for (auto &r : u) std::cout << r << \' \';',
                  '  return t.total() + u.size();',
                  '}']
    lines += ['int main(int argc, char **) {', '  std::size_t s = 0;']
    lines += [f'  s += use{i}(argc * {i + 10});' for i in range(types)]
    lines += ['  std::cout << s << std::endl;', '}']
    path.write_text('\n'.join(lines) + '\n')


def output_of(*cmd):
    return subprocess.run(cmd, capture_output=True, text=True).stdout.strip()


def cc1plus_path():
    return output_of('g++', '-print-prog-name=cc1plus')


class Workloads:
    """Builds the programs once, makes inputs per scale on demand."""

    def __init__(self, work):
        self.work = work
        self.bin = work / 'bin'
        self.data = work / 'data'
        self.bin.mkdir(parents=True, exist_ok=True)
        self.data.mkdir(parents=True, exist_ok=True)
        self.built = set()

    def build(self, name):
        if name in self.built or name not in BUILT:
            return
        src, cc, _ = BUILT[name]
        cmd = [cc, '-O2', '-g', str(WORKLOADS_DIR / src), '-o', str(self.bin / name)]
        if name == 'threads':
            cmd.append('-pthread')
        subprocess.run(cmd, check=True)
        self.built.add(name)

    def command(self, name, scale):
        """(argv, stdin path or None) of the workload at this scale."""
        if name in LARGE_NAMES:
            return self.large_command(name, units(LARGE_UNITS[name], scale)), None
        if name in BUILT:
            self.build(name)
            return [str(self.bin / name), str(units(BUILT[name][2], scale))], None
        tag = f'{scale:g}'
        if name in COMPRESSORS:
            path = self.data / f'text-{tag}.txt'
            if not path.exists():
                gen_text(path, max(4096, int(6_000_000 * scale)))
            return COMPRESSORS[name], path
        if name == 'sqlite3':
            path = self.data / f'script-{tag}.sql'
            if not path.exists():
                gen_sql(path, scale)
            return ['sqlite3', '-batch', ':memory:'], path
        raise SystemExit(f'unknown workload {name}')

    def large_command(self, name, n):
        if name in SCRIPTS:
            interpreter, flags, script = SCRIPTS[name]
            copy = self.bin / script     # copied: an edit during the run changes nothing
            if not copy.exists():
                shutil.copy2(WORKLOADS_DIR / script, copy)
            return [interpreter] + flags + [str(copy), str(n)]
        return [cc1plus_path(), '-fpreprocessed', '-quiet', '-O1', str(self.cc1plus_input(n)), '-o', os.devnull]

    def cc1plus_input(self, types):
        """The preprocessed (g++ -E) generated program with `types` record types."""
        ii = self.data / f'cc1plus-{types}.ii'
        if not ii.exists():
            src = self.data / f'cc1plus-{types}.cpp'
            gen_cpp(src, types)
            subprocess.run(['g++', '-E', '-P', str(src), '-o', str(ii)], check=True)
        return ii
