/* Calls the reduced kernel on a 2x24x33x31 input; prints a checksum (-13.000000 when correct). */
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
void kiln_dwconv_0(void* const* buffers, const int64_t* sizes);
int main() {
  int64_t B=2,C=24,H=33,W=31, Ho=(H+1)/2, Wo=(W+1)/2;
  float *x = malloc(sizeof(float)*B*C*H*W), *w = malloc(sizeof(float)*C*9), *y = malloc(sizeof(float)*B*C*Ho*Wo), *t = malloc(sizeof(float)*B*C*Ho*Wo);
  for (long i=0;i<B*C*H*W;i++) x[i]=(float)(i%7)-3;
  for (long i=0;i<C*9;i++) w[i]=(float)(i%5)-2;
  void* bufs[4]={x,w,y,t}; int64_t sizes[4]={B,C,H,W};
  kiln_dwconv_0(bufs,sizes);
  double s=0; for (long i=0;i<B*C*Ho*Wo;i++) s+=y[i]*(1+i%3);
  printf("%f\n", s);
}
