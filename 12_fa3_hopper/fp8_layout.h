// Where the FP8 kernel wants key n of V: the column of Vt8 (V transposed, keys along the
// row) that holds it. Shared by the quantisation kernels (fp8_quant.cu), the host model
// (fp8_emulate.cpp) and the attention kernel; no CUDA syntax beyond __host__ __device__.
//
// Why a permutation. For O += P V in FP8, P is the A operand of wgmma m64nNk32 .e4m3, read
// from registers. Thread (warp w, lane l; g = l / 4, c = l % 4) of a warpgroup must hold
// (PTX ISA, "Register fragment" of wgmma .m64nNk32, 8-bit A):
//   a0 = row g,   k = 4c .. 4c+3        a2 = row g,   k = 16+4c .. 16+4c+3
//   a1 = row g+8, k = 4c .. 4c+3        a3 = row g+8, k = 16+4c .. 16+4c+3
// (four e4m3 in each 32-bit register, the lowest k in the lowest byte). The fp32
// accumulator of S = Q K^T (wgmma m64nN, any N) gives the same thread, for the 32 keys of
// one block, the columns 8j' + 2c + e (j' = 0..3, e = 0, 1) of rows g and g+8. Packing
// a0 = {cols 2c, 2c+1, 8+2c, 9+2c} and a2 = {16+2c, 17+2c, 24+2c, 25+2c} (rows g+8
// likewise) costs no shuffle, but the tensor core reads key 8j'+2c+e as k slot
//   j' < 2:  4c + 2j' + e          j' >= 2:  16 + 4c + 2(j' - 2) + e
// so row slot of Vt8's k dimension must hold that key: V is stored with its keys permuted
// inside every block of 32. (FA3's own kernel permutes the bytes of P in registers
// instead; here the quantisation pass, which transposes V anyway, does it for free.)
#pragma once

#if defined(__CUDACC__)
#define FA3_HD __host__ __device__
#else
#define FA3_HD
#endif

namespace fa3 {

// The k slot (0..31) of key x (0..31) of a 32-key block.
constexpr FA3_HD int fp8_key_slot(int x) {
  const int c = (x % 8) / 2, e = x % 2, j = x / 8;
  return j < 2 ? 4 * c + 2 * j + e : 16 + 4 * c + 2 * (j - 2) + e;
}
// Its inverse: the key held in slot k (0..31).
constexpr FA3_HD int fp8_slot_key(int k) {
  const int half = k / 16, c = (k % 16) / 4, j = (k % 4) / 2 + 2 * half, e = k % 2;
  return 8 * j + 2 * c + e;
}
// The column of Vt8 that holds key n of V.
constexpr FA3_HD int fp8_vt_column(int n) { return 32 * (n / 32) + fp8_key_slot(n % 32); }

}  // namespace fa3

#undef FA3_HD
