// From a run-time head dimension to the kernel instantiation compiled for it:
//   ladder::dispatch_d<32, 64, 128>(s.d, [&](auto D) { return launch<D>(...); });
// calls the lambda with std::integral_constant<int, D> for the D equal to d, so D is a
// compile-time constant inside it. A d outside the list throws std::invalid_argument naming
// the list (validate() has normally refused it already).
#pragma once

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace ladder {

namespace detail {
template <int... kAll>
[[noreturn]] inline void unsupported_d(int d) {
  std::string list;
  ((list += (list.empty() ? "" : ", ") + std::to_string(kAll)), ...);
  throw std::invalid_argument("head dim d=" + std::to_string(d) + " is not compiled: d in {" + list + "}");
}
template <class All, int D, int... kRest, class F>
decltype(auto) dispatch_d_from(All all, int d, F&& f) {
  if (d == D) return f(std::integral_constant<int, D>{});
  if constexpr (sizeof...(kRest) > 0) {
    return dispatch_d_from<All, kRest...>(all, d, std::forward<F>(f));
  } else {
    all(d);  // [[noreturn]]: throws
    return f(std::integral_constant<int, D>{});
  }
}
}  // namespace detail

template <int... kDs, class F>
decltype(auto) dispatch_d(int d, F&& f) {
  static_assert(sizeof...(kDs) > 0, "name the compiled head dims");
  return detail::dispatch_d_from<decltype(&detail::unsupported_d<kDs...>), kDs...>(&detail::unsupported_d<kDs...>, d,
                                                                                   std::forward<F>(f));
}

}  // namespace ladder
