//===- gomp.h - libgomp's entry points, the pool oneDNN runs on -----------===//
//
// oneDNN here runs on the GNU OpenMP runtime it links (libgomp). The runtime
// runs its own parallel work on the same, already awake, threads through
// libgomp's entry points, declared here rather than through clang's
// -fopenmp, whose code generation targets LLVM's runtime instead (a second
// OpenMP runtime in the process).
//
//===----------------------------------------------------------------------===//
#ifndef KILN_RT_EXEC_GOMP_H
#define KILN_RT_EXEC_GOMP_H

extern "C" {
void GOMP_parallel(void (*fn)(void *), void *data, unsigned numThreads,
                   unsigned flags);
void GOMP_barrier(void);
int omp_get_thread_num(void);
int omp_get_num_threads(void);
int omp_get_max_threads(void);
void omp_set_num_threads(int);
}

#endif // KILN_RT_EXEC_GOMP_H
