// The attention variant contract: what chapter 12's forward and chapter 14's backward ask of an
// attention variant V (FA3's "Mask": which tiles are visited, which need the mask, what a score
// becomes), stated once and checked where the kernels take V. A chapter that brings its own
// variant (chapter 15: masks and score modifiers as code) learns here, at compile time, what its
// type lacks (score_tile, a template on the tile's size, is checked by its call). P is the
// kernel's parameter struct, C its tile config. Host and device.
//
// Forward, per row tile Q_i (i0 its first query):
//   V::Keys k = var.keys<C>(i0, head, p)   the key tiles it visits: k.T_c of them, visit it reads
//                                          key tile k.j(it), which needs the mask if k.masked(it)
//   var.last_first(p)                      one CTA per row tile: the grid's order is reversed
//   var.score_tile<kMasked>(s, q, k0, head, p)  what a tile of scores becomes (the mask's -inf,
//                                          a score modifier) before the online softmax
// Backward, per key tile K_j (j0 its first key) and KV head:
//   V::Queries q = var.queries<C>(j0, kv_head, p)  the query tiles it visits: q.visits of them,
//                                          visit n is query tile q.i(n) of the group's head q.head(n)
//   var.masked<C>(q, n, j0, i0, p)         whether visit n needs the mask
//   var.visible(head, query, key, p)       the mask, element by element
//   V::kScoreMod                           whether scores are modified; then
//   var.score(x, head, query, key)         the modified score of x = S scale, and
//   var.score_grad(x, head, query, key)    its derivative (dS picks it up)
#pragma once

#include <type_traits>
#include <utility>

namespace ladder::variant {

template <class V, class C, class P, class = void>
struct ForwardKeys : std::false_type {};
template <class V, class C, class P>
struct ForwardKeys<V, C, P,
                   std::void_t<decltype(std::declval<const V&>().template keys<C>(0, 0, std::declval<const P&>()).T_c),
                               decltype(std::declval<const typename V::Keys&>().j(0)),
                               decltype(std::declval<const typename V::Keys&>().masked(0)),
                               decltype(std::declval<const V&>().last_first(std::declval<const P&>()))>>
    : std::true_type {};

template <class V, class C, class P, class = void>
struct BackwardQueries : std::false_type {};
template <class V, class C, class P>
struct BackwardQueries<
    V, C, P,
    std::void_t<decltype(std::declval<const V&>().template queries<C>(0, 0, std::declval<const P&>()).visits),
                decltype(std::declval<const typename V::Queries&>().head(0)),
                decltype(std::declval<const typename V::Queries&>().i(0)),
                decltype(std::declval<const V&>().template masked<C>(std::declval<const typename V::Queries&>(), 0, 0,
                                                                     0, std::declval<const P&>())),
                decltype(std::declval<const V&>().visible(0, 0, 0, std::declval<const P&>()))>> : std::true_type {};

template <class V, class = void>
struct ScoreModifier : std::false_type {};
template <class V>
struct ScoreModifier<V, std::void_t<decltype(std::declval<const V&>().score(0.0f, 0, 0, 0)),
                                    decltype(std::declval<const V&>().score_grad(0.0f, 0, 0, 0))>> : std::true_type {};

template <class V, class = void>
struct SaysScoreMod : std::false_type {};
template <class V>
struct SaysScoreMod<V, std::enable_if_t<std::is_same_v<std::remove_cv_t<decltype(V::kScoreMod)>, bool>>>
    : std::true_type {};

// The checks, one message per question the kernel would ask: a kernel writes
// static_assert(ladder::variant::Backward<V, C, Params>::ok) (a type, so that device code may read it).
template <class V, class C, class P>
struct Forward {
  static_assert(ForwardKeys<V, C, P>::value,
                "a forward variant gives keys<C>(i0, head, p) -> Keys {T_c, j(it), masked(it)} and last_first(p) "
                "(common/attention_variant.h)");
  static constexpr bool ok = true;
};
template <class V, class C, class P>
struct Backward {
  static_assert(BackwardQueries<V, C, P>::value,
                "a backward variant gives queries<C>(j0, kv_head, p) -> Queries {visits, head(n), i(n)}, "
                "masked<C>(queries, n, j0, i0, p) and visible(head, query, key, p) (common/attention_variant.h)");
  static_assert(SaysScoreMod<V>::value, "a backward variant says whether it modifies scores: static bool kScoreMod");
  static_assert(!SaysScoreMod<V>::value || !V::kScoreMod || ScoreModifier<V>::value,
                "a variant with kScoreMod gives score(x, head, query, key) and score_grad(x, head, query, key)");
  static constexpr bool ok = true;
};

}  // namespace ladder::variant
