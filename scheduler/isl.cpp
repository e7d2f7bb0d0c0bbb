#include "scheduler/isl.h"

#include <cstdlib>

#include "scheduler/isl_internal.h"

namespace kiln::isl {

#define KILN_ISL_OBJ(T)        \
  template <>                  \
  T* Obj<T>::copy(T* p) {      \
    return T##_copy(p);        \
  }                            \
  template <>                  \
  void Obj<T>::destroy(T* p) { \
    if (p) T##_free(p);        \
  }

KILN_ISL_OBJ(isl_union_set)
KILN_ISL_OBJ(isl_union_map)
KILN_ISL_OBJ(isl_set)
KILN_ISL_OBJ(isl_schedule)
KILN_ISL_OBJ(isl_ast_node)
#undef KILN_ISL_OBJ

void throw_error(isl_ctx* ctx, const char* what) {
  const char* msg = ctx ? isl_ctx_last_error_msg(ctx) : nullptr;
  bool quota = ctx && isl_ctx_last_error(ctx) == isl_error_quota;
  bool aborted = ctx && isl_ctx_last_error(ctx) == isl_error_abort;
  if (ctx) isl_ctx_reset_error(ctx);
  if (quota) throw OperationLimit(std::string("isl: ") + what + " exceeded the operation limit");
  if (aborted) throw OperationLimit(std::string("isl: ") + what + " exceeded the time limit");
  throw std::runtime_error(std::string("isl: ") + what + " failed" + (msg ? ": " : "") +
                           (msg ? msg : ""));
}

Ctx::Ctx(bool parametric_shifts) : ctx_(isl_ctx_alloc()) {
  if (!ctx_) throw std::runtime_error("isl: cannot allocate a context");
  isl_options_set_on_error(ctx_, ISL_ON_ERROR_CONTINUE);
  isl_options_set_schedule_serialize_sccs(ctx_, 0);
  // One ILP per connected component instead of per SCC followed by clustering: the same fusion
  // on Kiln's kernels in about half the time (docs/decisions.md).
  isl_options_set_schedule_whole_component(ctx_, 1);
  isl_options_set_tile_scale_tile_loops(ctx_, 0);
  if (!parametric_shifts) {
    // isl has no setter for this option; its option parser is the documented way to reach it.
    const char* argv[] = {"kiln", "--no-schedule-parametric"};
    isl_ctx_parse_options(ctx_, 2, const_cast<char**>(argv), ISL_ARG_ALL);
  }
}

void Ctx::limit_operations(unsigned long max) {
  isl_ctx_set_max_operations(ctx_, max);
  isl_ctx_reset_operations(ctx_);
}

void Ctx::limit_time(unsigned long ms) {
  stop_watchdog();
  isl_ctx_resume(ctx_);
  if (ms == 0) return;
  cancelled_ = false;
  watchdog_ = std::thread([this, ms] {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!cancel_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return cancelled_; }))
      isl_ctx_abort(ctx_);
  });
}

void Ctx::stop_watchdog() {
  if (!watchdog_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    cancelled_ = true;
  }
  cancel_.notify_one();
  watchdog_.join();
}

Ctx::~Ctx() {
  stop_watchdog();
  isl_ctx_free(ctx_);
}

UnionSet read_union_set(const Ctx& ctx, const std::string& text) {
  return give(ctx.keep(), isl_union_set_read_from_str(ctx.keep(), text.c_str()),
              ("parsing " + text).c_str());
}

UnionMap read_union_map(const Ctx& ctx, const std::string& text) {
  return give(ctx.keep(), isl_union_map_read_from_str(ctx.keep(), text.c_str()),
              ("parsing " + text).c_str());
}

Set read_set(const Ctx& ctx, const std::string& text) {
  return give(ctx.keep(), isl_set_read_from_str(ctx.keep(), text.c_str()),
              ("parsing " + text).c_str());
}

UnionMap intersect_domain(UnionMap m, UnionSet dom) {
  isl_ctx* ctx = isl_union_map_get_ctx(m.keep());
  return give(ctx, isl_union_map_intersect_domain(std::move(m).take(), std::move(dom).take()),
              "intersect_domain");
}

UnionMap intersect_range(UnionMap m, UnionSet ran) {
  isl_ctx* ctx = isl_union_map_get_ctx(m.keep());
  return give(ctx, isl_union_map_intersect_range(std::move(m).take(), std::move(ran).take()),
              "intersect_range");
}

namespace {

/** Moves isl's malloc'ed string into a std::string. */
std::string own_string(char* s) {
  std::string out = s ? s : "";
  free(s);
  return out;
}

}  // namespace

std::string to_str(const UnionSet& s) {
  return own_string(isl_union_set_to_str(s.keep()));
}
std::string to_str(const UnionMap& m) {
  return own_string(isl_union_map_to_str(m.keep()));
}
std::string to_str(const Schedule& s) {
  return own_string(isl_schedule_to_str(s.keep()));
}

std::string version() {
  return isl_version();
}

}  // namespace kiln::isl
