/* Loop-heavy numeric kernel: blocked matrix multiply, a 2-D Jacobi stencil
   and a dot-product reduction; few calls, long basic blocks and loops.
     numeric [scale]      scale = repetitions (default 1) */
#include <stdio.h>
#include <stdlib.h>

#define N 160
#define G 256

static double A[N][N], B[N][N], C[N][N];
static double U[G][G], V[G][G];

static void init(void)
{
   for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) {
         A[i][j] = (double)((i * 7 + j * 3) % 17) / 17.0;
         B[i][j] = (double)((i * 5 + j * 11) % 13) / 13.0;
      }
   for (int i = 0; i < G; i++)
      for (int j = 0; j < G; j++) U[i][j] = (i == 0 || j == 0) ? 1.0 : 0.0;
}

static void matmul(void)
{
   const int bs = 32;
   for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) C[i][j] = 0;
   for (int ii = 0; ii < N; ii += bs)
      for (int kk = 0; kk < N; kk += bs)
         for (int jj = 0; jj < N; jj += bs)
            for (int i = ii; i < ii + bs; i++)
               for (int k = kk; k < kk + bs; k++) {
                  double a = A[i][k];
                  for (int j = jj; j < jj + bs; j++) C[i][j] += a * B[k][j];
               }
}

static void jacobi(int iters)
{
   for (int t = 0; t < iters; t++) {
      for (int i = 1; i < G - 1; i++)
         for (int j = 1; j < G - 1; j++)
            V[i][j] = 0.25 * (U[i - 1][j] + U[i + 1][j] + U[i][j - 1] + U[i][j + 1]);
      for (int i = 1; i < G - 1; i++)
         for (int j = 1; j < G - 1; j++) U[i][j] = V[i][j];
   }
}

static double dot(void)
{
   double s = 0;
   for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) s += C[i][j] * A[j][i];
   return s;
}

int main(int argc, char** argv)
{
   int scale = argc > 1 ? atoi(argv[1]) : 1;
   double s = 0;
   init();
   for (int r = 0; r < scale; r++) {
      matmul();
      jacobi(40);
      s += dot() + U[G / 2][G / 2];
   }
   printf("numeric: %.6f\n", s);
   return 0;
}
