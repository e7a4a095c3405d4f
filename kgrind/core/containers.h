// kgrind core: freestanding containers (header-only, no libc, no libstdc++).
//
// Everything here is usable both inside the Valgrind tool (allocator =
// VG_(malloc)/VG_(free)) and on the host (allocator = malloc/free).
//
// Rules shared by every core type:
//  * trivial default constructor and destructor (so they may be globals in a
//    tool that has no static constructors); call init() before use and
//    destroy() to release memory.  A zero-initialised object is "empty and
//    uninitialised"; init() on it is required before inserting.
//  * element types must be trivially copyable: elements are moved with plain
//    assignment / byte copies, never constructed with placement new.
//  * no exceptions: allocation failure is the allocator's business (the
//    contract is that Allocator::alloc never returns nullptr; VG_(malloc)
//    aborts on OOM, the host test allocator aborts too).
#pragma once
#include <stddef.h>
#include <stdint.h>

namespace kg {
namespace core {

// ---------------------------------------------------------------------------
// The user-supplied allocator.
// ---------------------------------------------------------------------------
struct Allocator {
  void* ctx;
  void* (*alloc)(void* ctx, size_t bytes);  // must not return nullptr
  void (*free)(void* ctx, void* p);         // p is never nullptr
  // Whether alloc returns zeroed memory (fresh pages: a user that needs
  // zeros then writes none, and the pages it never uses are never touched).
  bool zeroed;

  void* allocate(size_t n) const { return alloc(ctx, n); }
  void release(void* p) const {
    if (p) free(ctx, p);
  }
};

// ---------------------------------------------------------------------------
// Tiny freestanding helpers.
// ---------------------------------------------------------------------------
template <class T>
inline void swap_values(T& a, T& b) {
  T t = a;
  a = b;
  b = t;
}

// Byte fill / copy written as loops so that no libc symbol is referenced by
// this header itself (the compiler may still lower them to memset/memcpy,
// which Valgrind's core provides).
inline void bytes_zero(void* p, size_t n) {
  unsigned char* d = static_cast<unsigned char*>(p);
  for (size_t i = 0; i < n; ++i) d[i] = 0;
}
inline void bytes_copy(void* dst, const void* src, size_t n) {
  unsigned char* d = static_cast<unsigned char*>(dst);
  const unsigned char* s = static_cast<const unsigned char*>(src);
  for (size_t i = 0; i < n; ++i) d[i] = s[i];
}

// 64-bit mix (splitmix64 finaliser): good avalanche for sequential ids and
// for addresses.
inline uint64_t hash_u64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

// Fibonacci hashing of a 32-bit label into a table of 2^bits slots.
inline uint32_t hash_label(uint32_t label, uint32_t bits) {
  return static_cast<uint32_t>((label * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

inline uint32_t log2_ceil(uint64_t n) {
  uint32_t b = 0;
  while ((uint64_t(1) << b) < n) ++b;
  return b;
}

// ---------------------------------------------------------------------------
// Vec<T>: a growable array of trivially copyable T.
// ---------------------------------------------------------------------------
template <class T>
struct Vec {
  static_assert(__is_trivially_copyable(T), "Vec<T> needs trivially copyable T");

  T* data_;
  size_t size_;
  size_t cap_;
  Allocator al_;

  void init(const Allocator& al, size_t reserve_n = 0) {
    data_ = nullptr;
    size_ = 0;
    cap_ = 0;
    al_ = al;
    if (reserve_n) reserve(reserve_n);
  }
  void destroy() {
    al_.release(data_);
    data_ = nullptr;
    size_ = cap_ = 0;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t nc = cap_ ? cap_ : 8;
    while (nc < n) nc *= 2;
    T* nd = static_cast<T*>(al_.allocate(nc * sizeof(T)));
    if (size_) bytes_copy(nd, data_, size_ * sizeof(T));
    al_.release(data_);
    data_ = nd;
    cap_ = nc;
  }
  void push_back(const T& v) {
    if (size_ == cap_) {
      T copy = v;  // v may alias our storage
      reserve(size_ + 1);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = v;
  }
  // Appends a zero-filled element and returns it.
  T& push_zero() {
    if (size_ == cap_) reserve(size_ + 1);
    bytes_zero(&data_[size_], sizeof(T));
    return data_[size_++];
  }
  void pop_back() { --size_; }
  void truncate(size_t n) {
    if (n < size_) size_ = n;
  }
  // Grows with zero-filled elements or shrinks.
  void resize(size_t n) {
    if (n > size_) {
      reserve(n);
      bytes_zero(&data_[size_], (n - size_) * sizeof(T));
    }
    size_ = n;
  }
  void clear() { size_ = 0; }
};

// ---------------------------------------------------------------------------
// U64Map<V>: open-addressing hash map uint64 -> V (V trivially copyable),
// linear probing, load factor <= 1/2, backward-shift deletion (no
// tombstones).  Every key value is allowed (the "empty" key is handled out of
// band).  Pointers to values are invalidated by insertions and erasures.
// Iteration order is unspecified but deterministic for the same operation
// sequence.
// ---------------------------------------------------------------------------
template <class V>
struct U64Map {
  static_assert(__is_trivially_copyable(V), "U64Map<V> needs trivially copyable V");

  static constexpr uint64_t kEmpty = ~uint64_t(0);
  struct Slot {
    uint64_t key;
    V val;
  };

  Slot* slots_;
  size_t mask_;    // capacity - 1 (capacity is a power of two), 0 if no table
  size_t size_;    // number of keys stored in slots_ (kEmpty excluded)
  bool has_empty_key_;
  V empty_key_val_;  // value of key kEmpty, if present
  Allocator al_;

  void init(const Allocator& al, size_t expected = 0) {
    slots_ = nullptr;
    mask_ = 0;
    size_ = 0;
    has_empty_key_ = false;
    bytes_zero(&empty_key_val_, sizeof(V));
    al_ = al;
    size_t cap = 16;
    while (cap < expected * 2) cap *= 2;
    alloc_table(cap);
  }
  void destroy() {
    al_.release(slots_);
    slots_ = nullptr;
    mask_ = 0;
    size_ = 0;
    has_empty_key_ = false;
  }

  size_t size() const { return size_ + (has_empty_key_ ? 1 : 0); }
  size_t capacity() const { return slots_ ? mask_ + 1 : 0; }
  size_t memory_bytes() const { return capacity() * sizeof(Slot); }

  // Returns a pointer to the value or nullptr.
  V* find(uint64_t key) {
    if (key == kEmpty) return has_empty_key_ ? &empty_key_val_ : nullptr;
    size_t i = hash_u64(key) & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (s.key == key) return &s.val;
      if (s.key == kEmpty) return nullptr;
      i = (i + 1) & mask_;
    }
  }
  const V* find(uint64_t key) const { return const_cast<U64Map*>(this)->find(key); }
  bool contains(uint64_t key) const { return find(key) != nullptr; }

  // Returns the value for key, inserting a zero-filled value if absent.
  // *inserted (if given) tells whether it was absent.
  V* insert(uint64_t key, bool* inserted = nullptr) {
    if (key == kEmpty) {
      if (inserted) *inserted = !has_empty_key_;
      if (!has_empty_key_) {
        has_empty_key_ = true;
        bytes_zero(&empty_key_val_, sizeof(V));
      }
      return &empty_key_val_;
    }
    if ((size_ + 1) * 2 > mask_ + 1) grow();
    size_t i = hash_u64(key) & mask_;
    for (;;) {
      Slot& s = slots_[i];
      if (s.key == key) {
        if (inserted) *inserted = false;
        return &s.val;
      }
      if (s.key == kEmpty) {
        s.key = key;
        bytes_zero(&s.val, sizeof(V));
        ++size_;
        if (inserted) *inserted = true;
        return &s.val;
      }
      i = (i + 1) & mask_;
    }
  }
  void set(uint64_t key, const V& v) { *insert(key) = v; }

  bool erase(uint64_t key) {
    if (key == kEmpty) {
      bool had = has_empty_key_;
      has_empty_key_ = false;
      return had;
    }
    size_t i = hash_u64(key) & mask_;
    for (;;) {
      if (slots_[i].key == key) break;
      if (slots_[i].key == kEmpty) return false;
      i = (i + 1) & mask_;
    }
    // Backward-shift deletion.
    size_t j = i;
    for (;;) {
      j = (j + 1) & mask_;
      if (slots_[j].key == kEmpty) break;
      size_t home = hash_u64(slots_[j].key) & mask_;
      // Can slot j's entry move to i?  Yes iff home is not in (i, j].
      bool in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
      if (!in_range) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i].key = kEmpty;
    --size_;
    return true;
  }

  void clear() {
    for (size_t i = 0; i <= mask_; ++i) slots_[i].key = kEmpty;
    size_ = 0;
    has_empty_key_ = false;
  }

  // Calls f(key, V&) for every entry.  Do not insert/erase inside f.
  template <class F>
  void for_each(F f) {
    if (has_empty_key_) f(kEmpty, empty_key_val_);
    for (size_t i = 0; slots_ && i <= mask_; ++i)
      if (slots_[i].key != kEmpty) f(slots_[i].key, slots_[i].val);
  }
  template <class F>
  void for_each(F f) const {
    if (has_empty_key_) f(kEmpty, empty_key_val_);
    for (size_t i = 0; slots_ && i <= mask_; ++i)
      if (slots_[i].key != kEmpty) f(slots_[i].key, slots_[i].val);
  }

 private:
  void alloc_table(size_t cap) {
    slots_ = static_cast<Slot*>(al_.allocate(cap * sizeof(Slot)));
    for (size_t i = 0; i < cap; ++i) slots_[i].key = kEmpty;
    mask_ = cap - 1;
  }
  void grow() {
    Slot* old = slots_;
    size_t old_cap = mask_ + 1;
    alloc_table(old_cap * 2);
    for (size_t i = 0; i < old_cap; ++i) {
      if (old[i].key == kEmpty) continue;
      size_t j = hash_u64(old[i].key) & mask_;
      while (slots_[j].key != kEmpty) j = (j + 1) & mask_;
      slots_[j] = old[i];
    }
    al_.release(old);
  }
};

}  // namespace core
}  // namespace kg
