// A list of compiled tile configurations (types), picked by a run-time index: the one way the
// chapter's launchers choose one. Host code of the chapter's .cu files.
#pragma once

#include <vector>

#include "fa2_tc.h"

namespace fa2tc {

template <class... Cs>
struct ConfigList {
  static constexpr int kSize = sizeof...(Cs);
  // describe<C>() for each, in index order.
  template <class Describe>
  static std::vector<TileConfig> describe_all([[maybe_unused]] Describe describe) {
    return {describe(Cs{})...};
  }
  // launch(C{}) for the configuration at `index` (nothing when it is out of range: the
  // caller's check_config has refused that already).
  template <class Launch>
  static void launch([[maybe_unused]] int index, [[maybe_unused]] Launch&& launch) {
    [[maybe_unused]] int i = 0;
    ((i++ == index ? launch(Cs{}) : void()), ...);
  }
};

}  // namespace fa2tc
