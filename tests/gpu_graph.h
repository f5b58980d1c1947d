/*
** gpu_graph.h — the CUDA graph entry points, for the tests and benchmarks
** that capture ct_forward into a graph.  The runtime itself needs none of
** them, so they stay outside ct_drv's table: graph_load() looks them up in
** the libcuda that ct_drv loaded (call it after ct_drv_load succeeded).
*/
#ifndef CT_GPU_GRAPH_H
#define CT_GPU_GRAPH_H

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

#include <cuda.h>

#define CT_STR_(x) #x
#define CT_STR(x) CT_STR_(x)

/* Graph entry points, outside ct_drv's table. */
static struct {
  __typeof__(&cuStreamBeginCapture) begin;
  __typeof__(&cuStreamEndCapture) end;
  __typeof__(&cuGraphInstantiateWithFlags) instantiate;
  __typeof__(&cuGraphLaunch) launch;
  __typeof__(&cuGraphExecDestroy) exec_destroy;
  __typeof__(&cuGraphDestroy) destroy;
} graph;

static int graph_load(void) {
  const char *path = getenv("CONVTUNE_LIBCUDA");
  void *lib = dlopen(path && path[0] ? path : "libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!lib) return -1;
#define GRAPH_SYM(field, fn)                                                  \
  {                                                                           \
    void *s = dlsym(lib, CT_STR(fn));                                         \
    if (!s) return -1;                                                        \
    memcpy(&graph.field, &s, sizeof s);                                       \
  }
  GRAPH_SYM(begin, cuStreamBeginCapture)
  GRAPH_SYM(end, cuStreamEndCapture)
  GRAPH_SYM(instantiate, cuGraphInstantiateWithFlags)
  GRAPH_SYM(launch, cuGraphLaunch)
  GRAPH_SYM(exec_destroy, cuGraphExecDestroy)
  GRAPH_SYM(destroy, cuGraphDestroy)
#undef GRAPH_SYM
  return 0;
}

#endif /* CT_GPU_GRAPH_H */
