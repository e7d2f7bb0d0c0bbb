/** \file
 * Private to the isl layer's .cpp files: isl's headers and the error check that turns a null
 * result into an exception carrying isl's message.
 */
#pragma once

#include <isl/aff.h>
#include <isl/ast.h>
#include <isl/ast_build.h>
#include <isl/ctx.h>
#include <isl/id.h>
#include <isl/map.h>
#include <isl/options.h>
#include <isl/schedule.h>
#include <isl/schedule_node.h>
#include <isl/set.h>
#include <isl/space.h>
#include <isl/union_map.h>
#include <isl/union_set.h>
#include <isl/val.h>
#include <isl/version.h>

#include <stdexcept>
#include <string>

#include "scheduler/isl.h"

namespace kiln::isl {

/** Throws std::runtime_error naming `what` and isl's last error message. */
[[noreturn]] void throw_error(isl_ctx* ctx, const char* what);

/** Wraps a result that isl gave; throws when it is null. */
template <class T>
Obj<T> give(isl_ctx* ctx, T* p, const char* what) {
  if (!p) throw_error(ctx, what);
  return Obj<T>(p);
}

/** What an annotate_members mark says of one band member (LoopNode's fields of the same names). */
struct MemberMark {
  int band = -1, member = -1;
  bool tile = false, coincident = false, only_reductions = false;
};

/** Reads an annotate_members mark ("kiln.member BAND MEMBER TILE COINCIDENT ONLY_REDUCTIONS");
 *  false for any other mark. */
bool parse_member_mark(const std::string& mark, MemberMark& out);

/** The name of build_ast's annotation of a for node: "kiln.for PARALLEL ONLY_REDUCTIONS". */
constexpr const char* kForMark = "kiln.for";

/** Reads a for node's annotation into `coincident` and `only_reductions`; false when the node
 *  has none (an AST built without dependences) or another. */
bool parse_for_mark(const std::string& mark, bool& coincident, bool& only_reductions);

}  // namespace kiln::isl
