// First line of `ladder`: which GPU the chapters will run on, or that they will
// run their CPU parts only.
#include <cstdio>

#include "device.h"

int main() {
  const ladder::DeviceInfo& d = ladder::device();
  if (d.available)
    std::printf("flash-ladder on %s\n", ladder::describe_device().c_str());
  else
    std::printf("flash-ladder: no CUDA device (%s): GPU parts skipped, CPU parts run\n", d.reason.c_str());
  return 0;
}
