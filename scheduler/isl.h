/** \file
 * The thin RAII layer over isl's C API. Each wrapper holds one isl pointer; copies go through
 * isl_*_copy, moves steal. Functions "give" results by value, "take" arguments by value and
 * "keep" them by const&. isl's headers are included only by the layer's .cpp files
 * (isl.cpp, isl_schedule.cpp, isl_ast_convert.cpp); raw pointers never leave them.
 */
#pragma once

#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

struct isl_ctx;
struct isl_union_set;
struct isl_union_map;
struct isl_set;
struct isl_schedule;
struct isl_ast_node;

namespace kiln::isl {

/** Owner of one isl object of type T; the pointer is reachable only from the layer's .cpp. */
template <class T>
class Obj {
 public:
  Obj() = default;
  /** Takes ownership of `p` (layer-internal; the layer checks for null first). */
  explicit Obj(T* p) : p_(p) {}
  Obj(const Obj& o) : p_(o.p_ ? copy(o.p_) : nullptr) {}
  Obj(Obj&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Obj& operator=(Obj o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Obj() { destroy(p_); }
  /** Layer-internal: borrows the pointer (isl's __isl_keep). */
  T* keep() const { return p_; }
  /** Layer-internal: hands over the pointer (isl's __isl_take). */
  T* take() && { return std::exchange(p_, nullptr); }

 private:
  static T* copy(T* p);
  static void destroy(T* p);
  T* p_ = nullptr;
};

/** Declares the copy and free of one wrapped type; isl.cpp defines them. */
#define KILN_ISL_DECLARE_OBJ(T) \
  template <>                   \
  T* Obj<T>::copy(T* p);        \
  template <>                   \
  void Obj<T>::destroy(T* p);
KILN_ISL_DECLARE_OBJ(isl_union_set)
KILN_ISL_DECLARE_OBJ(isl_union_map)
KILN_ISL_DECLARE_OBJ(isl_set)
KILN_ISL_DECLARE_OBJ(isl_schedule)
KILN_ISL_DECLARE_OBJ(isl_ast_node)
#undef KILN_ISL_DECLARE_OBJ

using UnionSet = Obj<isl_union_set>;
using UnionMap = Obj<isl_union_map>;
using Set = Obj<isl_set>;
using Schedule = Obj<isl_schedule>;
using AstNode = Obj<isl_ast_node>;

/** One isl context per compilation, configured for Kiln: errors are reported, not fatal;
 *  SCCs are not serialised (fusion); tile loops are not scaled. Use from one thread.
 *  `parametric_shifts` lets schedules shift statements by multiples of the size parameters
 *  (isl's default), which keeps more bands permutable for tiling; without it isl puts such
 *  statements in a sequence of plain loops. */
class Ctx {
 public:
  explicit Ctx(bool parametric_shifts = true);
  Ctx(const Ctx&) = delete;
  Ctx& operator=(const Ctx&) = delete;
  ~Ctx();
  /** Bounds the work of later isl calls: a call that exceeds `max` operations (counted from
   *  now) fails with OperationLimit. 0 removes the bound. */
  void limit_operations(unsigned long max);
  /** Bounds the time of later isl calls: `ms` milliseconds from now a watchdog thread aborts
   *  the running computation (isl_ctx_abort, checked at every simplex pivot), which then fails
   *  with OperationLimit. Operation counts alone do not bound time: one pivot on large
   *  coefficients can take milliseconds. 0 removes the bound; a new call replaces the old. */
  void limit_time(unsigned long ms);
  /** Layer-internal: the context pointer. */
  isl_ctx* keep() const { return ctx_; }

 private:
  void stop_watchdog();
  isl_ctx* ctx_;
  std::thread watchdog_;
  std::mutex mutex_;
  std::condition_variable cancel_;
  bool cancelled_ = false;
};

/** Thrown by a call that ran past the operation or time limit of its context
 *  (Ctx::limit_operations, Ctx::limit_time). */
class OperationLimit : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/** Parses isl text; throws std::runtime_error with isl's message on a syntax error. */
UnionSet read_union_set(const Ctx& ctx, const std::string& text);
/** Parses isl text into a union map. */
UnionMap read_union_map(const Ctx& ctx, const std::string& text);
/** Parses a (parameter) set. */
Set read_set(const Ctx& ctx, const std::string& text);

/** Restricts the domain of `m` to `dom`. */
UnionMap intersect_domain(UnionMap m, UnionSet dom);
/** Restricts the range of `m` to `ran`. */
UnionMap intersect_range(UnionMap m, UnionSet ran);

/** isl's text of an object, for debugging and schedule_text. */
std::string to_str(const UnionSet& s);
std::string to_str(const UnionMap& m);
std::string to_str(const Schedule& s);

/** isl_version() as reported by the isl the process calls. */
std::string version();

}  // namespace kiln::isl
