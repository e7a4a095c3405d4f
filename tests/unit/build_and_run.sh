#!/usr/bin/env bash
# Builds and runs the kgrind core tests (host side, no Valgrind needed).
#
# usage: tests/unit/build_and_run.sh [OUTDIR]      (default OUTDIR: build/unit)
# env:   FUZZ_SECONDS  seconds of libFuzzer run (default 20; 0 = skip fuzzing)
#        CXX           host C++ compiler for the unit tests (default g++)
#        FUZZ_CXX      clang for the fuzzer (default clang++-14, else clang++)
#        GTEST_FILTER  passed through to the unit test binary
#
# Steps (any failure -> non-zero exit):
#  1. freestanding check: every kgrind/core header compiled with the tool's
#     flags (-ffreestanding -nostdinc++ -fno-exceptions -fno-rtti ...) in one
#     TU that instantiates everything; the object may reference no symbol
#     but the allocator hooks (and memset/memcpy/memmove, which Valgrind's
#     core provides; and libgcc's __popcountdi2).
#  2. unit tests: GoogleTest, -Wall -Wextra -Werror -O1 -g.
#  3. fuzzing: libFuzzer + ASan + UBSan for FUZZ_SECONDS each, side by side: the forest
#     against its oracle, the inflater against zlib (skipped with a message
#     only if clang's fuzzer runtime is not installed).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
OUT="${1:-build/unit}"
case "$OUT" in /*) ;; *) OUT="$ROOT/$OUT" ;; esac
mkdir -p "$OUT"
CXX="${CXX:-g++}"
FUZZ_SECONDS="${FUZZ_SECONDS:-20}"

say() { printf '== %s\n' "$*"; }

# --- 1. freestanding check --------------------------------------------------
say "freestanding check of kgrind/core/*.h"
TOOLFLAGS=(-std=gnu++17 -O2 -m64 -ffreestanding -nostdinc++ -fno-exceptions -fno-rtti
  -fno-threadsafe-statics -fno-stack-protector -fno-builtin -fno-strict-aliasing
  -fno-pie -fno-pic -fno-asynchronous-unwind-tables -Wall -Wextra -Werror)
{
  for h in "$ROOT"/kgrind/core/*.h; do printf '#include "%s"\n' "$h"; done
  cat "$ROOT/tests/unit/freestanding_check.h"
} > "$OUT/freestanding_check.cpp"
"$CXX" "${TOOLFLAGS[@]}" -c "$OUT/freestanding_check.cpp" -o "$OUT/freestanding_check.o"
# __popcountdi2: libgcc's, which the tool links (-lgcc).
undef="$(nm -u "$OUT/freestanding_check.o" | awk '{print $2}' | grep -v -x -E 'kg_test_alloc|kg_test_free|memset|memcpy|memmove|__popcountdi2' || true)"
if [ -n "$undef" ]; then
  echo "core headers reference symbols a freestanding tool does not have:" >&2
  echo "$undef" >&2
  exit 1
fi
if command -v clang++ >/dev/null 2>&1; then
  clang++ "${TOOLFLAGS[@]}" -c "$OUT/freestanding_check.cpp" -o "$OUT/freestanding_check_clang.o"
fi
echo "ok"

# --- 2. unit tests ----------------------------------------------------------
say "unit tests"
# One object per test file (tests/unit/test_*.cpp; other .cpp files there are
# standalone host programs), compiled in parallel, rebuilt when the file or
# any header it may include (kgrind/core/*.h, tests/unit/*.h) is newer.
mkdir -p "$OUT/obj"
UNIT_CXXFLAGS=(-std=gnu++17 -Wall -Wextra -Werror -O1 -g -I"$ROOT")
newest_header="$(ls -t "$ROOT"/kgrind/core/*.h "$ROOT"/tests/unit/*.h "$ROOT/tests/unit/build_and_run.sh" | head -n 1)"
objs=()
cpids=()
for src in "$ROOT"/tests/unit/test_*.cpp; do
  obj="$OUT/obj/$(basename "${src%.cpp}").o"
  objs+=("$obj")
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$newest_header" -nt "$obj" ]; then
    "$CXX" "${UNIT_CXXFLAGS[@]}" -c "$src" -o "$obj" &
    cpids+=($!)
    # at most 2 compilers at a time
    if [ "${#cpids[@]}" -ge 2 ]; then
      wait "${cpids[0]}" || { echo "compilation failed" >&2; exit 1; }
      cpids=("${cpids[@]:1}")
    fi
  fi
done
for p in "${cpids[@]}"; do wait "$p" || { echo "compilation failed" >&2; exit 1; }; done
"$CXX" "${objs[@]}" -o "$OUT/core_tests" -lgtest -lgtest_main -pthread
# Two shards in parallel (the suite is CPU-bound; ~30 s of work).
SHARDS="${UNIT_SHARDS:-2}"
pids=()
for ((i = 0; i < SHARDS; i++)); do
  GTEST_TOTAL_SHARDS=$SHARDS GTEST_SHARD_INDEX=$i \
    "$OUT/core_tests" --gtest_brief=1 ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} \
    > "$OUT/core_tests.shard$i.log" 2>&1 &
  pids+=($!)
done
fail=0
for ((i = 0; i < SHARDS; i++)); do
  if ! wait "${pids[$i]}"; then fail=1; fi
  cat "$OUT/core_tests.shard$i.log"
done
if [ "$fail" != 0 ]; then
  echo "unit tests FAILED" >&2
  exit 1
fi

# --- 3. fuzzing ---------------------------------------------------------------
if [ "$FUZZ_SECONDS" = "0" ]; then
  say "fuzzing skipped (FUZZ_SECONDS=0)"
  exit 0
fi
FUZZ_CXX="${FUZZ_CXX:-}"
if [ -z "$FUZZ_CXX" ]; then
  if command -v clang++-14 >/dev/null 2>&1; then FUZZ_CXX=clang++-14
  elif command -v clang++ >/dev/null 2>&1; then FUZZ_CXX=clang++
  else
    say "fuzzing SKIPPED: no clang++ (install clang-14 and libclang-rt-14-dev)"
    exit 0
  fi
fi
say "fuzzing for ${FUZZ_SECONDS}s with $FUZZ_CXX: the core against its oracles and the inflater against zlib, side by side"
probe="$OUT/fuzz_probe.cpp"
printf 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long){return 0;}\n' > "$probe"
if ! "$FUZZ_CXX" -fsanitize=fuzzer "$probe" -o "$OUT/fuzz_probe" >/dev/null 2>&1; then
  say "fuzzing SKIPPED: $FUZZ_CXX cannot link -fsanitize=fuzzer (install libclang-rt-14-dev)"
  exit 0
fi
# fuzz_core: the forest against its oracle; fuzz_inflate: the inflater
# against zlib (linked into the fuzzer only). Built, then run, both at once
# (each fuzzer is one process: two cores, half the wall time).
FUZZ_FLAGS=(-std=gnu++17 -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -I"$ROOT")
fpids=()
for f in fuzz_core fuzz_inflate; do
  if [ ! -x "$OUT/$f" ] || [ "$ROOT/tests/fuzz/$f.cpp" -nt "$OUT/$f" ] || [ "$newest_header" -nt "$OUT/$f" ]; then
    libs=()
    [ "$f" = fuzz_inflate ] && libs=(-lz)
    "$FUZZ_CXX" "${FUZZ_FLAGS[@]}" "$ROOT/tests/fuzz/$f.cpp" -o "$OUT/$f" "${libs[@]}" &
    fpids+=($!)
  fi
done
for p in "${fpids[@]}"; do wait "$p" || { echo "building a fuzzer failed" >&2; exit 1; }; done
# Seed corpora: the checked-in seeds (if any) plus whatever earlier runs
# found; the inflater's, python3's zlib streams of a few texts at a few levels.
corpus="$OUT/fuzz_corpus"
mkdir -p "$corpus"
if [ -d "$ROOT/tests/fuzz/seeds" ]; then cp -n "$ROOT"/tests/fuzz/seeds/* "$corpus"/ 2>/dev/null || true; fi
inflate_corpus="$OUT/fuzz_inflate_corpus"
mkdir -p "$inflate_corpus"
python3 - "$inflate_corpus" <<'PY'
import os, sys, zlib
d = sys.argv[1]
texts = [b'', b'a', b'std::map<int, int>::find ' * 40, bytes(range(256)) * 3, b'\0' * 3000]
for i, t in enumerate(texts):
    for level in (0, 1, 6, 9):
        z = zlib.compress(t, level)
        room = min(63, (len(t) + 96) // 97)
        seeds = {'z': bytes([room << 2 | 0]) + z, 'raw': bytes([room << 2 | 1]) + z[2:-4],
                 'chdr': bytes([2]) + (1).to_bytes(8, 'little') + len(t).to_bytes(8, 'little') + bytes(8) + z,
                 'zdebug': bytes([3]) + b'ZLIB' + len(t).to_bytes(8, 'big') + z}
        for kind, b in seeds.items():
            open(os.path.join(d, 'seed-%d-%d-%s' % (i, level, kind)), 'wb').write(b)
PY
"$OUT/fuzz_core" -max_total_time="$FUZZ_SECONDS" -max_len=600 -len_control=0 -timeout=20 -rss_limit_mb=2048 \
  -artifact_prefix="$OUT/" -print_final_stats=1 "$corpus" 2> "$OUT/fuzz.log" &
core_pid=$!
"$OUT/fuzz_inflate" -max_total_time="$FUZZ_SECONDS" -max_len=4096 -timeout=20 -rss_limit_mb=2048 \
  -artifact_prefix="$OUT/inflate-" -print_final_stats=1 "$inflate_corpus" 2> "$OUT/fuzz_inflate.log" &
inflate_pid=$!
# A fuzzer's end: its statistics, else its failure's log and reproducer.
fuzz_end() {   # PID LOG WHAT ARTIFACTS
  if wait "$1"; then
    grep -E 'stat::number_of_executed_units|Done' "$2" | tail -n 2 || true
    return 0
  fi
  tail -n 60 "$2" >&2
  echo "$3 found a failure; reproducer in $OUT/ ($4)" >&2
  return 1
}
fail=0
fuzz_end "$core_pid" "$OUT/fuzz.log" "fuzzer" "crash-*" || fail=1
fuzz_end "$inflate_pid" "$OUT/fuzz_inflate.log" "the inflater's fuzzer" "inflate-crash-*" || fail=1
[ "$fail" = 0 ] || exit 1
say "all core checks passed"
