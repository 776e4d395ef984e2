/*===- cpu_features.h - x86 extensions a compiled model may need -*- C -*-=====*
 *
 * The instruction-set extensions kilnc records for the CPU it compiled a
 * model for (kiln_model_target, model.h) and the runtime checks before it
 * runs any generated code: a model compiled for a CPU with AVX-512 stops on
 * an illegal instruction elsewhere, so the runtime says which extensions are
 * missing instead. Each name is both an LLVM X86 subtarget feature and a
 * name `__builtin_cpu_supports` knows (clang and GCC).
 *
 *===----------------------------------------------------------------------===*/
#ifndef KILN_RT_CPU_FEATURES_H
#define KILN_RT_CPU_FEATURES_H

#define KILN_CPU_FEATURES(X)                                                   \
  X("sse2")                                                                    \
  X("sse3")                                                                    \
  X("ssse3")                                                                   \
  X("sse4.1")                                                                  \
  X("sse4.2")                                                                  \
  X("popcnt")                                                                  \
  X("avx")                                                                     \
  X("avx2")                                                                    \
  X("fma")                                                                     \
  X("f16c")                                                                    \
  X("bmi")                                                                     \
  X("bmi2")                                                                    \
  X("lzcnt")                                                                   \
  X("movbe")                                                                   \
  X("avxvnni")                                                                 \
  X("avx512f")                                                                 \
  X("avx512cd")                                                                \
  X("avx512bw")                                                                \
  X("avx512dq")                                                                \
  X("avx512vl")                                                                \
  X("avx512ifma")                                                              \
  X("avx512vbmi")                                                              \
  X("avx512vbmi2")                                                             \
  X("avx512vnni")                                                              \
  X("avx512bitalg")                                                            \
  X("avx512vpopcntdq")                                                         \
  X("avx512bf16")                                                              \
  X("avx512fp16")                                                              \
  X("avx512vp2intersect")                                                      \
  X("gfni")                                                                    \
  X("vpclmulqdq")                                                              \
  X("amx-tile")                                                                \
  X("amx-int8")                                                                \
  X("amx-bf16")

#endif /* KILN_RT_CPU_FEATURES_H */
