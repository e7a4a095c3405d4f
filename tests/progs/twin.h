/* twin_a.c and twin_b.c each define their own `helper`, with different
 * bodies: static functions in C, anonymous-namespace functions in C++ (the
 * three files compile as either).  One object, two functions of one name:
 * the profile must keep them apart (tests/test_static_namesakes.py). */
#ifdef __cplusplus
#define TWIN_BEGIN namespace {
#define TWIN_END }
#define TWIN_LOCAL
#else
#define TWIN_BEGIN
#define TWIN_END
#define TWIN_LOCAL static
#endif

/* A static function of this header: twin_a.c and twin_b.c each have their
 * own copy, two functions of one name and one file (callgrind: one). */
TWIN_BEGIN
TWIN_LOCAL __attribute__((noinline, unused)) long twin_step(long s, int t) { return s + (t & 3); }
TWIN_END

enum { FROM_A, FROM_B };
void twin_leaf(int from);           /* twin_main.c; counts its calls by caller */
long run_a(int times);              /* calls twin_a.c's helper `times` times */
long run_b(int times);              /* calls twin_b.c's helper `times` times */
long helper_a_calls(void);
long helper_b_calls(void);
