#!/usr/bin/env bash
# One-command setup for kgrind on Debian 12 (amd64): installs what is missing,
# builds, installs the tool next to Valgrind's own, and profiles an example.
#   ./setup.sh            everything
#   ./setup.sh --deps     only the Debian packages the tool needs
#   ./setup.sh --build    packages + build in ./build (no install)
#   ./setup.sh --tests    --build, and what the tests and the benchmark suite
#                         need (used by tests/run)
#   ./setup.sh --test-deps  only the packages of --tests (no build)
# On amd64 the test path also sets up arm64 under qemu-user (docs/building.md,
# "arm64"): the cross compiler, qemu-user-static, Debian's valgrind:arm64
# unpacked into ~/.cache/kgrind/valgrind-arm64 (KGRIND_ARM64_VALGRIND; not
# installed over the system's Valgrind) and the tool built in ./build-arm64.
# KGRIND_NO_ARM64=1 skips it (the arm64 tests then say why they are skipped).
# Against a Valgrind other than the system's (built from source, say), set
# KGRIND_VALGRIND=PREFIX (configure --with-valgrind=PREFIX; docs/building.md, "Valgrind versions").
# Other distributions: install the packages named in the README, then --build.
# Idempotent: a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")"
top=$PWD

packages=(valgrind autoconf automake make pkg-config g++ gcc perl binutils)
test_packages=(python3 python3-pytest python3-pytest-xdist python3-jsonschema libgtest-dev graphviz
          clang-14 libclang-rt-14-dev          # the fuzzers of the core (tests/unit)
          zlib1g-dev                           # zlib: the inflater fuzzer's reference (tests/fuzz)
          dwz                                  # dwz supplementary files (tests/test_inline_names.py)
          libboost-context-dev                 # boost.context fibers (tests/test_stacks.py)
          golang-go                            # goroutines' stacks (tests/test_go.py)
          bzip2 sqlite3 time python3-matplotlib)   # the benchmark suite (bench/)
# arm64 under qemu-user (tests/test_arm64.py), on amd64 only
arm64_packages=(g++-aarch64-linux-gnu qemu-user-static)
arm64_valgrind=${KGRIND_ARM64_VALGRIND:-$HOME/.cache/kgrind/valgrind-arm64}
arm64_wanted() {
  [ -z "${KGRIND_NO_ARM64:-}" ] && command -v dpkg >/dev/null && [ "$(dpkg --print-architecture)" = amd64 ]
}

install_deps() {
  if ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    # not Debian or Ubuntu: check the commands only (README: package names)
    local cmd absent=()
    for cmd in autoreconf make pkg-config g++ gcc perl; do command -v "$cmd" >/dev/null || absent+=("$cmd"); done
    if [ ${#absent[@]} -gt 0 ]; then
      echo "setup: missing ${absent[*]}: this system has no apt; install them and Valgrind's development files" >&2
      echo "  Fedora: sudo dnf install valgrind valgrind-devel autoconf automake make pkgconf-pkg-config gcc-c++ perl" >&2
      echo "  Arch:   sudo pacman -S valgrind autoconf automake make pkgconf gcc perl" >&2
      exit 1
    fi
    return 0
  fi
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# Debian's valgrind:arm64, unpacked beside the system's Valgrind (the two
# packages conflict): its valgrind.pc's prefix is made the unpacked one, so
# that configure --with-valgrind takes everything from it.
unpack_arm64_valgrind() {
  local pc="$arm64_valgrind/usr/lib/aarch64-linux-gnu/pkgconfig/valgrind.pc"
  [ -f "$pc" ] && grep -qx "prefix=$arm64_valgrind/usr" "$pc" && return 0
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    echo "setup: adding the arm64 architecture to apt (for valgrind:arm64)"
    $sudo dpkg --add-architecture arm64
    $sudo apt-get update -qq
  fi
  local work
  work=$(mktemp -d)
  echo "setup: unpacking valgrind:arm64 into $arm64_valgrind"
  (cd "$work" && apt-get download -qq valgrind:arm64 2>/dev/null) ||
    { $sudo apt-get update -qq && (cd "$work" && apt-get download -qq valgrind:arm64); }
  rm -rf "$arm64_valgrind"
  mkdir -p "$arm64_valgrind"
  dpkg -x "$work"/valgrind_*_arm64.deb "$arm64_valgrind"
  rm -rf "$work"
  sed -i "s|^prefix=.*|prefix=$arm64_valgrind/usr|" "$pc"
}

# The tool for arm64-linux, cross-compiled in ./build-arm64.
build_arm64() {
  mkdir -p build-arm64
  local flags=(--host=aarch64-linux-gnu "--with-valgrind=$arm64_valgrind/usr")
  if [ ! -f build-arm64/Makefile ] || [ configure -nt build-arm64/config.status ] ||
     [ "${flags[*]}" != "$(cat build-arm64/.setup-flags 2>/dev/null)" ]; then
    echo "setup: configure ${flags[*]} (build-arm64)"
    # (configure warns that pkg-config has no host prefix: it is pointed at one .pc)
    (cd build-arm64 && ../configure -q "${flags[@]}" >.configure.log 2>&1) ||
      { cat build-arm64/.configure.log >&2; echo "setup: configuring build-arm64 failed" >&2; exit 1; }
    echo "${flags[*]}" > build-arm64/.setup-flags
  fi
  echo "setup: make (build-arm64)"
  make -s -C build-arm64 -j"$(nproc)" >/dev/null
}

test_deps() {
  install_deps "${packages[@]}" "${test_packages[@]}"
  if arm64_wanted; then
    # Without them (no network, say) the arm64 tests are skipped, and say why.
    (install_deps "${arm64_packages[@]}" && unpack_arm64_valgrind) ||
      echo "setup: the arm64 test tools could not be set up; tests/test_arm64.py will be skipped" >&2
  fi
}

build() {
  if [ ! -x configure ] || [ configure.ac -nt configure ] || [ Makefile.am -nt Makefile.in ]; then
    echo "setup: autoreconf"
    autoreconf -fi >/dev/null 2>&1 || autoreconf -fi
  fi
  mkdir -p build
  local flags=()
  [ -z "${KGRIND_VALGRIND:-}" ] || flags+=("--with-valgrind=$KGRIND_VALGRIND")
  if [ ! -f build/Makefile ] || [ configure -nt build/config.status ] ||
     [ "${flags[*]:-}" != "$(cat build/.setup-flags 2>/dev/null)" ]; then
    echo "setup: configure ${flags[*]:-}"
    (cd build && ../configure -q "${flags[@]}")
    echo "${flags[*]:-}" > build/.setup-flags
  fi
  echo "setup: make"
  make -s -C build -j"$(nproc)" >/dev/null
}

profile_example() {
  local work
  work=$(mktemp -d)
  gcc -g -O1 -o "$work/calls" examples/calls.c
  (cd "$work" && valgrind --tool=kgrind --kgrind-out-file=kgrind.out.example ./calls 2>"$work/stderr" >/dev/null) || {
    cat "$work/stderr"; echo "setup: the example failed under kgrind"; exit 1; }
  echo "setup: profiled examples/calls.c:"
  grep -E "Command:|I   refs|Output written" "$work/stderr" | sed 's/^==[0-9]*== /  /'
  if command -v kgrind_annotate >/dev/null && kgrind_annotate "$work/kgrind.out.example" >"$work/annotate" 2>/dev/null; then
    head -n 30 "$work/annotate"
  else
    callgrind_annotate "$work/kgrind.out.example" | sed -n '/file:function/,$p' | head -n 12
  fi
  rm -rf "$work"
}

case "${1:-all}" in
  --deps) install_deps "${packages[@]}" ;;
  --build) install_deps "${packages[@]}"; build ;;
  --tests) test_deps; build; if arm64_wanted && [ -f "$arm64_valgrind/usr/lib/aarch64-linux-gnu/pkgconfig/valgrind.pc" ]; then build_arm64; fi ;;
  --test-deps) test_deps ;;
  all)
    install_deps "${packages[@]}"
    build
    echo "setup: make install"
    make -s -C build install >/dev/null
    profile_example
    echo "setup: done. Try: valgrind --tool=kgrind ./your-program"
    ;;
  *) echo "usage: $0 [--deps|--build|--tests|--test-deps]" >&2; exit 2 ;;
esac
