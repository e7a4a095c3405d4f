// kgrind core: the cache model of --cache-sim=yes, written from the model
// cachegrind's manual documents ("Cache Simulation Specifics"): separate
// first-level instruction and data caches (I1, D1) in front of a unified
// last-level cache (LL); each set-associative with LRU replacement and
// write-allocate (a write miss brings the line in, as a read miss does);
// the set of an address chosen by bit selection (the address's bits M to
// M+N-1, for lines of 2^M bytes and 2^N sets); LL reached only on a
// first-level miss. An access that touches two lines (an instruction or a
// datum straddling a line boundary) looks up both and counts as one access,
// and as one miss if either line missed; on a first-level miss LL sees the
// whole access, the line that hit at the first level too (as cachegrind 3.19
// does: LL holds no copy of every first-level line, so that line may miss
// there, and its lookup makes it LL's most recent). Writes are accesses like
// reads (the caller says which event a miss is).
//
// Geometry checks (cache_geometry_error) give one message per fault, before
// any memory is taken: a tool calls them while reading its options.
#pragma once
#include <stdint.h>

#include "containers.h"

namespace kg {
namespace core {

// One cache's size, associativity and line size, in bytes and ways.
struct CacheGeometry {
  uint64_t size;
  uint64_t assoc;
  uint64_t line;
};

// Smallest line a cache may have (an access of at most 16 bytes then
// touches at most two lines when it is aligned to its size) and the largest
// cache size (tags of 2^31 bytes of 16-byte lines: 1 GB of tool memory).
const uint64_t kMinCacheLine = 16;
const uint64_t kMaxCacheSize = (uint64_t)1 << 30;

inline bool is_power_of_two(uint64_t x) { return x && !(x & (x - 1)); }

inline uint32_t log2_of_power(uint64_t x) {
  uint32_t n = 0;
  while (x > 1) {
    x >>= 1;
    n++;
  }
  return n;
}

// nullptr if g is a cache the model can simulate, else why not (a sentence
// without the option's name, which the caller puts first).
inline const char* cache_geometry_error(CacheGeometry g) {
  if (g.size == 0) return "the cache size is 0";
  if (g.assoc == 0) return "the associativity is 0";
  if (g.line == 0) return "the line size is 0";
  if (g.size > kMaxCacheSize) return "the cache size is over 1 GB (1073741824 bytes)";
  if (!is_power_of_two(g.line)) return "the line size is not a power of two";
  if (g.line < kMinCacheLine) return "the line size is under 16 bytes";
  if (g.line > g.size) return "the line size is larger than the cache";
  if (g.assoc > g.size / g.line) return "the associativity is larger than the number of lines (size / line size)";
  if (g.size % (g.assoc * g.line) != 0)
    return "the size is not a multiple of associativity x line size (a whole number of sets)";
  if (!is_power_of_two(g.size / (g.assoc * g.line)))
    return "the number of sets (size / (associativity x line size)) is not a power of two";
  return nullptr;
}

// The LRU step of a set kept as its most recent tag (*mru) and its other
// `rest` ways most recent first, for a tag that is not *mru: the tag
// becomes the most recent, the old one the first of the rest, and the rest
// moves down to where the tag was (or drops its least recent on a miss).
// True if the tag was among the rest.
template <typename Tag>
inline bool lru_access_below(Tag* mru, Tag* rest, uint32_t n_rest, Tag tag) {
  uint32_t i = 0;
  while (i < n_rest && rest[i] != tag) i++;
  bool hit = i < n_rest;
  if (n_rest) {
    if (!hit) i = n_rest - 1;
    for (; i > 0; i--) rest[i] = rest[i - 1];
    rest[0] = *mru;
  }
  *mru = tag;
  return hit;
}

// One LRU step in a set of `assoc` tags, most recent first: true if `tag`
// was there. Either way it is the set's most recent afterwards (a miss
// evicts the least recent).
template <typename Tag>
inline bool lru_access(Tag* set, uint32_t assoc, Tag tag) {
  return set[0] == tag || lru_access_below(set, set + 1, assoc - 1, tag);
}

// A cache's sets: how a line number (address >> line_bits) picks its set
// (line & set_mask, of set_bits bits), each of assoc ways.
struct SetShape {
  uint32_t assoc;
  uint32_t line_bits;
  uint32_t set_bits;
  uint64_t set_mask;
  uint64_t ways;   // in all the sets
  static SetShape of(CacheGeometry g) {
    uint64_t sets = g.size / (g.assoc * g.line);
    return {(uint32_t)g.assoc, log2_of_power(g.line), log2_of_power(sets), sets - 1, sets * g.assoc};
  }
  // The first way of line's set.
  uint64_t first_way(uint64_t line) const { return (line & set_mask) * assoc; }
};

// One set-associative LRU cache of line numbers (address >> line bits).
// Each set holds its lines' tags most recent first: a tag is its line
// number plus 1, so that 0 is an empty way, and a cache starts as zeroed
// memory (from an allocator of fresh pages, no write at all).
class CacheLevel {
 public:
  void init(const Allocator& al, CacheGeometry g) {
    al_ = al;
    shape_ = SetShape::of(g);
    tags_ = (uint64_t*)al_.alloc(al_.ctx, shape_.ways * sizeof(uint64_t));
    if (!al_.zeroed)
      for (uint64_t i = 0; i < shape_.ways; i++) tags_[i] = kEmpty;
  }
  void destroy() {
    if (tags_) al_.free(al_.ctx, tags_);
    tags_ = nullptr;
  }

  uint32_t line_bits() const { return shape_.line_bits; }

  // Where line number `line`'s set keeps its most recent tag, and the tag
  // that says it is `line`: an access of a line that is there hits and
  // changes nothing (access_line), so generated code may test it inline.
  const uint64_t* most_recent_of(uint64_t line) const { return tags_ + shape_.first_way(line); }
  static uint64_t tag_of(uint64_t line) { return line + 1; }

  // Looks line number `line` up; true on a hit. Either way the line is
  // the set's most recent afterwards.
  bool access_line(uint64_t line) { return lru_access(tags_ + shape_.first_way(line), shape_.assoc, tag_of(line)); }

 private:
  static const uint64_t kEmpty = 0;
  Allocator al_;
  uint64_t* tags_;
  SetShape shape_;
};

// The last level: CacheLevel's model, with each tag the line's number
// within its set ((line >> set bits) + 1; 0 an empty way), kept in the
// narrowest of 2, 4 and 8 bytes that holds every tag seen so far. A set's
// lines share their set bits, so leaving them out loses nothing: a 512 MB
// LL of 64-byte lines in 2 ways (4 M sets) keeps a line's address bits
// from bit 28 on, which fit 2 bytes below 16 TB less 256 MB, and its 64 MB
// of 8-byte tags are 16 MB (touched only where the program's lines fall). A
// tag that does not fit widens them all, copied once (an address beyond
// the ones seen before; 8 bytes hold any). No generated code reads these
// tags (it tests I1's: most_recent_of).
//
// Each set's most recent tag is in an array of its own, one tag a set
// (mru_), and its other ways in another (rest_, assoc - 1 a set): most
// first-level misses hit their LL set's most recent line, and with a host
// LL simulated as is (64 MB in 64 ways: 4 MB of 4-byte tags) reading it in
// the whole ways' array missed the host's caches at nearly every lookup
// (cppvirt `--cache-sim`: a tenth of the run at that one compare).
class NarrowTagLevel {
 public:
  void init(const Allocator& al, CacheGeometry g) {
    al_ = al;
    shape_ = SetShape::of(g);
    sets_ = shape_.set_mask + 1;
    tag_bytes_ = 2;
    largest_tag_ = largest_tag(tag_bytes_);
    mru_ = new_tags(sets_, tag_bytes_);
    rest_ = new_tags(shape_.ways - sets_, tag_bytes_);
  }
  void destroy() {
    if (mru_) al_.free(al_.ctx, mru_);
    if (rest_) al_.free(al_.ctx, rest_);
    mru_ = rest_ = nullptr;
  }

  uint32_t line_bits() const { return shape_.line_bits; }
  // Bytes a tag takes now (2, 4 or 8).
  uint32_t tag_bytes() const { return tag_bytes_; }

  // Looks line number `line` up; true on a hit. Either way the line is
  // the set's most recent afterwards.
  bool access_line(uint64_t line) {
    uint64_t set = line & shape_.set_mask;
    uint64_t tag = (line >> shape_.set_bits) + 1;
    if (tag > largest_tag_) widen(tag);
    switch (tag_bytes_) {
      case 2: return access_set((uint16_t*)mru_, (uint16_t*)rest_, set, (uint16_t)tag);
      case 4: return access_set((uint32_t*)mru_, (uint32_t*)rest_, set, (uint32_t)tag);
      default: return access_set((uint64_t*)mru_, (uint64_t*)rest_, set, tag);
    }
  }

 private:
  template <typename Tag>
  bool access_set(Tag* mru, Tag* rest, uint64_t set, Tag tag) {
    if (mru[set] == tag) return true;
    uint32_t n_rest = shape_.assoc - 1;
    return lru_access_below(mru + set, rest + set * n_rest, n_rest, tag);
  }

  static uint64_t largest_tag(uint32_t bytes) { return bytes == 8 ? ~(uint64_t)0 : ((uint64_t)1 << (8 * bytes)) - 1; }

  void* new_tags(uint64_t n, uint32_t bytes) {
    if (!n) return nullptr;
    uint8_t* t = (uint8_t*)al_.alloc(al_.ctx, n * bytes);
    if (!al_.zeroed)
      for (uint64_t i = 0; i < n * bytes; i++) t[i] = 0;
    return t;
  }
  static uint64_t tag_at(const void* tags, uint32_t bytes, uint64_t i) {
    if (bytes == 2) return ((const uint16_t*)tags)[i];
    if (bytes == 4) return ((const uint32_t*)tags)[i];
    return ((const uint64_t*)tags)[i];
  }
  static void set_tag_at(void* tags, uint32_t bytes, uint64_t i, uint64_t tag) {
    if (bytes == 2) ((uint16_t*)tags)[i] = (uint16_t)tag;
    else if (bytes == 4) ((uint32_t*)tags)[i] = (uint32_t)tag;
    else ((uint64_t*)tags)[i] = tag;
  }
  // n tags in wider ones of `bytes`, in the same places (empty ways stay
  // unwritten: fresh pages stay untouched).
  void* widened(void* tags, uint64_t n, uint32_t bytes) {
    void* wider = new_tags(n, bytes);
    for (uint64_t i = 0; i < n; i++)
      if (uint64_t t = tag_at(tags, tag_bytes_, i)) set_tag_at(wider, bytes, i, t);
    if (tags) al_.free(al_.ctx, tags);
    return wider;
  }
  // Every tag in wider ones that hold `tag`.
  __attribute__((noinline)) void widen(uint64_t tag) {
    uint32_t bytes = tag_bytes_;
    while (tag > largest_tag(bytes)) bytes *= 2;
    mru_ = widened(mru_, sets_, bytes);
    rest_ = widened(rest_, shape_.ways - sets_, bytes);
    tag_bytes_ = bytes;
    largest_tag_ = largest_tag(bytes);
  }

  Allocator al_;
  void* mru_;    // each set's most recent tag
  void* rest_;   // each set's other ways, most recent first
  SetShape shape_;
  uint64_t sets_;
  uint32_t tag_bytes_;
  uint64_t largest_tag_;   // the largest tag tag_bytes_ hold
};

// What one access missed: the first level, and the last level.
enum CacheMiss : uint32_t { kHit = 0, kL1Miss = 1, kLLMiss = 3 };

// I1, D1 and LL.
class CacheHierarchy {
 public:
  void init(const Allocator& al, CacheGeometry i1, CacheGeometry d1, CacheGeometry ll) {
    i1_.init(al, i1);
    d1_.init(al, d1);
    ll_.init(al, ll);
  }
  void destroy() {
    i1_.destroy();
    d1_.destroy();
    ll_.destroy();
  }

  // An instruction fetch of `size` bytes at addr.
  __attribute__((always_inline)) CacheMiss fetch(uint64_t addr, uint64_t size) { return access(i1_, addr, size); }
  // I1's most recent tag of line number `line`'s set (CacheLevel::most_recent_of).
  const uint64_t* i1_most_recent_of(uint64_t line) const { return i1_.most_recent_of(line); }
  // Bytes an LL tag takes now (NarrowTagLevel).
  uint32_t ll_tag_bytes() const { return ll_.tag_bytes(); }
  // A data read or write (write-allocate: the same lookups as a read).
  __attribute__((always_inline)) CacheMiss data(uint64_t addr, uint64_t size) { return access(d1_, addr, size); }

 private:
  // Every line [addr, addr + size) touches, at L1; if any missed, every
  // LL line the access's bytes touch. An access of size 0 touches addr's line.
  // Inlined into each helper, as fetch and data are (the compiler made
  // them calls of their own).
  __attribute__((always_inline)) CacheMiss access(CacheLevel& l1, uint64_t addr, uint64_t size) {
    uint32_t bits = l1.line_bits();
    uint64_t end = addr + (size ? size - 1 : 0);   // the last byte
    uint64_t first = addr >> bits;
    uint64_t last = end >> bits;
    bool l1_hit = l1.access_line(first);
    for (uint64_t line = first + 1; line <= last; line++)   // a straddling access
      if (!l1.access_line(line)) l1_hit = false;
    if (l1_hit) return kHit;
    return ll_hit(addr, end) ? kL1Miss : kLLMiss;
  }

  // Bytes [from, to] at LL: each LL line they touch (one, unless LL's lines
  // are smaller than the first level's); true if all hit.
  bool ll_hit(uint64_t from, uint64_t to) {
    uint32_t bits = ll_.line_bits();
    bool hit = true;
    for (uint64_t line = from >> bits;; line++) {
      if (!ll_.access_line(line)) hit = false;
      if (line == to >> bits) break;
    }
    return hit;
  }

  CacheLevel i1_;
  CacheLevel d1_;
  NarrowTagLevel ll_;
};

}  // namespace core
}  // namespace kg
