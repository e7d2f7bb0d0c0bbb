/** \file
 * The loop AST that the scheduler produces from isl's AST and the backends render: loops,
 * guards, blocks and statement instances, with integer expressions of loop iterators and size
 * variables. Independent of isl: no isl type appears here.
 */
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace kiln {

struct AstExpr;
using AstExprPtr = std::shared_ptr<const AstExpr>;

/** An integer expression in the AST. `op` names follow isl's: "add", "sub", "mul", "minus",
 *  "div" (exact), "fdiv_q" (floor), "pdiv_q" / "pdiv_r" (non-negative operands), "zdiv_r",
 *  "min", "max", "and", "or", "eq", "le", "lt", "ge", "gt", "select". */
struct AstExpr {
  enum class Kind { integer, id, op } kind = Kind::integer;
  int64_t value = 0;             ///< integer
  std::string name;              ///< id: a loop iterator or a size variable
  std::string op;                ///< op
  std::vector<AstExprPtr> args;  ///< op
};

struct LoopNode;
using LoopNodePtr = std::shared_ptr<const LoopNode>;

/** A node of the loop AST. */
struct LoopNode {
  enum class Kind { block, loop, guard, stmt } kind = Kind::block;
  std::vector<LoopNodePtr> body;  ///< block: children in order; loop and guard: the body
  std::string iter;               ///< loop: the iterator (a C identifier, e.g. "c0")
  AstExprPtr init;                ///< loop: first value
  AstExprPtr cond;                ///< loop: continue while true; guard: execute when true
  int64_t step = 1;               ///< loop
  bool parallel = false;          ///< loop: iterations are independent (coincident band)
  bool vector = false;            ///< loop: innermost band, unit stride: vectorise
  int statement = -1;             ///< stmt: index into Kernel::statements
  std::vector<AstExprPtr> args;   ///< stmt: the value of each statement iterator i0, i1...
};

/** The loop nest of one kernel. */
struct LoopNest {
  LoopNodePtr root;
  /** isl ran past its operation limit and the kernel runs in program order, with no fusion,
   *  tiling or marks (ScheduleOptions::max_operations). */
  bool program_order = false;
};

/** Indented pseudo-C text, for `kiln show --stage schedule` and tests. */
std::string loop_nest_to_text(const LoopNest& nest);

}  // namespace kiln
