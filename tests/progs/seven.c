/* For the stripped-binary test: hidden() is called exactly seven times. */
#include <stdio.h>
__attribute__((noinline)) int hidden(int x) { return x * 5 + 3; }
int main(void) { int s = 0; for (int i = 0; i < 7; i++) s += hidden(i); printf("seven: %d\n", s); return 0; }
