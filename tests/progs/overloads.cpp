// Functions that share a short name: overloads of norm, two instances of
// Box<T>::get, and canon(std::string*) calling canon(char*, unsigned long*),
// which short names alone would show as "canon > canon", a recursion.
// Each runs a known number of times (main's loops).
#include <cstdio>
#include <string>

__attribute__((noipa)) static long norm(int x) { return x < 0 ? -x : x; }
__attribute__((noipa)) static long norm(double x) { return static_cast<long>(x < 0 ? -x : x); }
__attribute__((noipa)) static long norm(const char* s) { long n = 0; while (*s) n += *s++; return n; }

template <typename T> struct Box {
    T v;
    __attribute__((noipa)) T get() const { return v; }
};

__attribute__((noipa)) static unsigned long canon(char* p, unsigned long* len) {
    unsigned long n = 0;
    for (char* q = p; *q; q++) n += *q == '/';
    *len = n;
    return n;
}
__attribute__((noipa)) static unsigned long canon(std::string* s) {
    unsigned long len = 0;
    return canon(&(*s)[0], &len) + len;
}

int main() {
    long sum = 0;
    Box<int> bi{3};
    Box<long> bl{4};
    std::string path = "a/b/c/d";
    for (int i = 0; i < 7; i++) sum += norm(-i);        // norm(int): 7 calls
    for (int i = 0; i < 5; i++) sum += norm(-1.5 * i);  // norm(double): 5 calls
    for (int i = 0; i < 3; i++) sum += norm("abc");     // norm(char const*): 3 calls
    for (int i = 0; i < 11; i++) sum += bi.get();       // Box<int>::get: 11 calls
    for (int i = 0; i < 13; i++) sum += bl.get();       // Box<long>::get: 13 calls
    for (int i = 0; i < 9; i++) sum += canon(&path);    // canon(std::string*) -> canon(char*, ...): 9 calls
    std::printf("%ld\n", sum);
    return 0;
}
