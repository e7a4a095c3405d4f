"""Pure-Python workload for the suite's large-program phase (Debian python3):
classes and virtual-style dispatch, recursion, dict/set/str work, sorting
with keys, generators, closures, exceptions, a small interpreter.
Deterministic (its own LCG, no hash-order dependence in the output).
    python3 -I pywork.py [rounds]      one round: about 0.36 G instructions"""
import sys


class Rng:
    """Linear congruential generator: the same numbers on every Python."""

    def __init__(self, seed):
        self.state = seed

    def next(self, bound):
        self.state = (self.state * 6364136223846793005 + 1442695040888963407) % (1 << 64)
        return (self.state >> 33) % bound


class Node:
    def evaluate(self, env):
        raise NotImplementedError


class Num(Node):
    def __init__(self, value):
        self.value = value

    def evaluate(self, env):
        return self.value


class Var(Node):
    def __init__(self, name):
        self.name = name

    def evaluate(self, env):
        return env[self.name]


class BinOp(Node):
    OPS = {'+': lambda a, b: a + b, '-': lambda a, b: a - b, '*': lambda a, b: a * b % 1000003,
           '/': lambda a, b: a // b}

    def __init__(self, op, left, right):
        self.op, self.left, self.right = op, left, right

    def evaluate(self, env):
        a, b = self.left.evaluate(env), self.right.evaluate(env)
        try:
            return self.OPS[self.op](a, b)
        except ZeroDivisionError:
            return a


def random_expr(rng, depth):
    if depth == 0 or rng.next(4) == 0:
        return Var('xyz'[rng.next(3)]) if rng.next(2) else Num(rng.next(100))
    return BinOp('+-*/'[rng.next(4)], random_expr(rng, depth - 1), random_expr(rng, depth - 1))


def expressions(rng):
    exprs = [random_expr(rng, 7) for _ in range(40)]
    total = 0
    for i in range(60):
        env = {'x': i, 'y': i * 7 % 13, 'z': i % 5}
        total += sum(e.evaluate(env) for e in exprs)
    return total


def words(rng, n):
    letters = 'etaoinshrdlucmfwyp'
    return [''.join(letters[rng.next(len(letters))] for _ in range(2 + rng.next(7))) for _ in range(n)]


def text_stats(rng):
    ws = words(rng, 6000)
    counts = {}
    for w in ws:
        counts[w] = counts.get(w, 0) + 1
    bigrams = set(zip(ws, ws[1:]))
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:20]
    caps = ' '.join(w.capitalize() for w in ws[:2000]).replace('E', '3').split(' ')
    return len(bigrams) + sum(c for _, c in top) + sum(map(len, caps))


def primes(limit):
    sieve = bytearray([1]) * limit
    sieve[0:2] = b'\0\0'
    for i in range(2, int(limit ** 0.5) + 1):
        if sieve[i]:
            sieve[i * i::i] = bytes(len(range(i * i, limit, i)))
    return (i for i, p in enumerate(sieve) if p)


def fib_memo():
    memo = {}

    def fib(n):
        if n < 2:
            return n
        if n not in memo:
            memo[n] = fib(n - 1) + fib(n - 2)
        return memo[n]
    return fib


def ackermann_like(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann_like(m - 1, 1)
    return ackermann_like(m - 1, ackermann_like(m, n - 1))


def numbers(rng):
    fib = fib_memo()
    s = sum(p % 97 for p in primes(20000))
    s += sum(fib(n) % 1009 for n in range(300))
    s += ackermann_like(2, 60)
    matrix = [[rng.next(10) for _ in range(24)] for _ in range(24)]
    product = [[sum(a * b for a, b in zip(row, col)) for col in zip(*matrix)] for row in matrix]
    return s + sum(map(sum, product))


def one_round(seed):
    rng = Rng(seed)
    return expressions(rng) + text_stats(rng) + numbers(rng)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 1
    print(sum(one_round(r) for r in range(rounds)) % 1000000007)


if __name__ == '__main__':
    main()
