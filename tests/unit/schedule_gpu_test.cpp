// Scheduler tests of the GPU's loop IR: contractions in block tiles, tensor cores and their
// copy pipeline chosen in the IR, batches of rows a block each (tests/unit/schedule_sim.h
// simulates the loop IR).
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "ir/mma.h"
#include "scheduler/group_rows.h"
#include "scheduler/schedule_cache.h"
#include "scheduler/tile_choice.h"
#include "tests/unit/schedule_sim.h"

using namespace kiln;
using namespace kiln::test;

namespace {

/** y[i, j] = Σ_k x[i, k] · w[j, k] in f16 (nn.Linear's layout). */
KernelBuilder linear_f16() {
  KernelBuilder lin;
  int x = lin.buffer("x", {M, K}), w = lin.buffer("w", {N, K}), y = lin.buffer("y", {M, N});
  for (Buffer& buf : lin.plan.buffers)
    buf.dtype = DType::f16;
  lin.stmt(Statement::Kind::reduce_init, {M, N}, y, {it(0), it(1)});
  lin.stmt(Statement::Kind::reduce_update, {M, N, K}, y, {it(0), it(1)},
           op(Op::mul, {load(x, {it(0), it(2)}), load(w, {it(1), it(2)})}));
  return lin;
}

/** The block tile of a scheduled contraction: its first alloc, in shared memory. */
const LoopNode& tile_of(const ScheduledKernel& r) {
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE_FALSE(found.empty());
  REQUIRE(found[0]->space == MemorySpace::shared);
  return *found[0];
}

}  // namespace

TEST_CASE("schedule: a GPU contraction runs in block tiles, each thread's elements in registers") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;                   // a kernel the block tile applies to is not tiled by isl
  opt.gpu_tile = {64, 64, 4, 4, 8};  // 16 × 16 threads
  // Full and partial tiles of rows and lanes; 11 row tiles (a group of 8, then one of 3); one
  // tile; an empty reduction; an empty matrix.
  std::vector<Env> sizes = {{{"M", 130}, {"N", 70}, {"K", 9}},
                            {{"M", 645}, {"N", 130}, {"K", 2}},
                            {{"M", 3}, {"N", 5}, {"K", 2}},
                            {{"M", 2}, {"N", 65}, {"K", 0}},
                            {{"M", 0}, {"N", 4}, {"K", 3}}};
  ScheduledKernel r = check_legal(matmul(), opt, sizes);
  report("matmul, GPU block tile", r);
  CHECK(transforms_to_text(r.transforms).find("gpu block tile 64x64, 4x4 per thread") !=
        std::string::npos);
  CHECK(transforms_to_text(r.transforms).find("tile 32") == std::string::npos);
  std::vector<const LoopNode*> found;
  allocs(*r.nest.root, found);
  REQUIRE(found.size() == 2);
  const LoopNode& tile = *found[0];
  CHECK(tile.space == MemorySpace::shared);
  CHECK(tile.statement == 1);
  CHECK(tile.pack_depth == 8);
  CHECK(found[1]->space == MemorySpace::local);  // the accumulator inside
  // One loop over the tiles, across blocks; the k loop inside.
  std::vector<const LoopNode*> all = loops(*r.nest.root);
  REQUIRE(all.size() == 2);
  CHECK(all[0]->mapping == Mapping::block_x);
  CHECK(all[1]->reduction);

  // A batch dimension is walked with the tiles: B × ⌈M/64⌉ × ⌈N/64⌉ blocks.
  KernelBuilder bmm;
  int a = bmm.buffer("a", {B, M, K}), bb = bmm.buffer("b", {B, K, N}),
      c = bmm.buffer("c", {B, M, N});
  bmm.stmt(Statement::Kind::reduce_init, {B, M, N}, c, {it(0), it(1), it(2)});
  bmm.stmt(Statement::Kind::reduce_update, {B, M, N, K}, c, {it(0), it(1), it(2)},
           op(Op::mul, {load(a, {it(0), it(1), it(3)}), load(bb, {it(0), it(3), it(2)})}));
  ScheduledKernel rb = check_legal(bmm, opt, {{{"B", 3}, {"M", 70}, {"N", 66}, {"K", 5}}});
  report("bmm, GPU block tile", rb);
  found.clear();
  allocs(*rb.nest.root, found);
  REQUIRE(found.size() == 2);
  CHECK(found[0]->space == MemorySpace::shared);

  // A load that moves along both i and j (an elementwise factor inside the sum) has no row or
  // lane to stage by: the plain mapping stays.
  KernelBuilder e;
  int x = e.buffer("x", {M, K}), y = e.buffer("y", {K, N}), m = e.buffer("m", {M, N}),
      z = e.buffer("z", {M, N});
  e.stmt(Statement::Kind::reduce_init, {M, N}, z, {it(0), it(1)});
  e.stmt(Statement::Kind::reduce_update, {M, N, K}, z, {it(0), it(1)},
         op(Op::mul, {op(Op::mul, {load(x, {it(0), it(2)}), load(y, {it(2), it(1)})}),
                      load(m, {it(0), it(1)})}));
  ScheduledKernel re = check_legal(e, opt, {{{"M", 3}, {"N", 5}, {"K", 2}}});
  // A comparison of positions that moves along the rows and k only (a causal mask) belongs to
  // the rows' operand: still a block tile.
  KernelBuilder causal;
  int cx = causal.buffer("x", {M, K}), cy = causal.buffer("y", {K, N}),
      cz = causal.buffer("z", {M, N});
  auto position = [](int k) {
    auto v = std::make_shared<ScalarExpr>();
    v->kind = ScalarExpr::Kind::iterator;
    v->dtype = DType::i64;
    v->index = {it(k)};
    return v;
  };
  auto zero = std::make_shared<ScalarExpr>();
  causal.stmt(Statement::Kind::reduce_init, {M, N}, cz, {it(0), it(1)});
  causal.stmt(Statement::Kind::reduce_update, {M, N, K}, cz, {it(0), it(1)},
              op(Op::mul, {op(Op::where, {op(Op::cmplt, {position(2), position(0)}),
                                          load(cx, {it(0), it(2)}), zero}),
                           load(cy, {it(2), it(1)})}));
  ScheduledKernel rc = check_legal(causal, opt, {{{"M", 70}, {"N", 5}, {"K", 66}}});
  found.clear();
  allocs(*rc.nest.root, found);
  REQUIRE_FALSE(found.empty());
  CHECK(found[0]->space == MemorySpace::shared);
  found.clear();
  allocs(*re.nest.root, found);
  for (const LoopNode* f : found)
    CHECK(f->space != MemorySpace::shared);
}

TEST_CASE(
    "schedule: a GPU block tile of a 16-bit product runs on tensor cores, chosen in the loop IR") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};  // 128x128, 8x8 per thread; tensor cores in warps of 64x32, k blocks of 32
  std::vector<Env> sizes = {{{"M", 130}, {"N", 70}, {"K", 33}}, {{"M", 3}, {"N", 5}, {"K", 0}}};
  // The variants after the first two: two row tiles, a part of a lane tile, two k blocks (the
  // simulator walks every instance: a tenth of the time).
  const std::vector<Env> narrow = {{{"M", 130}, {"N", 9}, {"K", 33}}};
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(dtype_name(t));
    ScheduledKernel r = check_legal(matmul(t), opt, sizes);
    const LoopNode& tile = tile_of(r);
    REQUIRE(tile.mma != nullptr);
    CHECK(tile.mma == find_mma(t, t, DType::f32));
    CHECK(tile.warp_rows == 64);
    CHECK(tile.warp_lanes == 32);
    CHECK(tile.thread_rows == 8);  // 4 m16 tiles of 2 rows each
    CHECK(tile.thread_lanes == 8);
    CHECK(tile.pack_depth == 32);
    // a[i, k]: by row, k first, as stored [rows][k] in 16-byte chunks; b[k, j]: by lane, along
    // its lanes, [k][lanes] (ldmatrix.trans), 16-byte chunks.
    REQUIRE(tile.staged.size() == 2);
    const StagedOperand &a = tile.staged[0], &b = tile.staged[1];
    CHECK(a.path == std::vector<int>{0});
    CHECK_FALSE(a.by_lane);
    CHECK(a.k_first);
    CHECK_FALSE(a.k_major);
    CHECK(a.vector == 8);
    CHECK(a.as_stored);
    CHECK(b.path == std::vector<int>{1});
    CHECK(b.by_lane);
    CHECK_FALSE(b.k_first);
    CHECK(b.k_major);
    CHECK(b.vector == 8);
    // Both copied in 16-byte chunks contiguous in shared memory: a pipeline of 3 stages, the
    // addresses strided along the one reduction loop.
    CHECK(tile.stages == 3);
    CHECK(tile.k_strided);
    std::string text = loop_nest_to_text(r.nest);
    CHECK(text.find("tensor cores " + tile.mma->name +
                    " in warps of 64x32; a pipeline of 3 "
                    "stages; addresses strided along k") != std::string::npos);
    CHECK(text.find("[0] by row, k first, [rows][k + 8], chunks of 8, as stored") !=
          std::string::npos);
  }

  // x[i, k] · w[j, k] (nn.Linear's layout): both operands read along k, [rows or lanes][k].
  KernelBuilder lin = linear_f16();
  ScheduledKernel rl = check_legal(lin, opt, narrow);
  const LoopNode& lt = tile_of(rl);
  REQUIRE(lt.mma != nullptr);
  REQUIRE(lt.staged.size() == 2);
  CHECK(lt.staged[1].by_lane);
  CHECK(lt.staged[1].k_first);
  CHECK_FALSE(lt.staged[1].k_major);
  CHECK(lt.staged[1].vector == 8);

  // aᵀ · b: a[k, i] is read along its rows, element by element, so no pipeline (cp.async
  // copies 16-byte chunks): one buffer, tensor cores still.
  KernelBuilder at = matmul(DType::f16);
  Statement& atu = at.plan.kernels[0].statements[1];
  auto a_t = std::const_pointer_cast<ScalarExpr>(atu.value->args[0]);
  a_t->index = {it(2), it(0)};
  at.plan.buffers[0].shape = {K, M};
  ScheduledKernel rat = check_legal(at, opt, narrow);
  const LoopNode& att = tile_of(rat);
  REQUIRE(att.mma != nullptr);
  CHECK(att.staged[0].vector == 1);
  CHECK(att.stages == 1);
  // Tensor cores with 2 stages (GPU_MMA's S).
  ScheduleOptions two_stages = opt;
  two_stages.gpu_tile.mma_stages = 2;
  ScheduledKernel r2 = check_legal(matmul(DType::bf16), two_stages, narrow);
  CHECK(tile_of(r2).stages == 2);

  // f32 has no instruction: SIMT, [k][rows or lanes] in the compute type, padded by 4.
  ScheduledKernel rf = check_legal(matmul(DType::f32), opt, narrow);
  const LoopNode& f32 = tile_of(rf);
  CHECK(f32.mma == nullptr);
  CHECK(f32.pack_depth == 8);
  REQUIRE(f32.staged.size() == 2);
  for (const StagedOperand& o : f32.staged) {
    CHECK(o.k_major);
    CHECK_FALSE(o.as_stored);
    CHECK(o.pad == 4);
  }

  // A scaled product (a · b) · 2 is not one instruction's: SIMT with the same operands.
  KernelBuilder scaled = matmul(DType::f16);
  Statement& u = scaled.plan.kernels[0].statements[1];
  auto two = std::make_shared<ScalarExpr>();
  two->kind = ScalarExpr::Kind::constant;
  two->dtype = DType::f16;
  u.value = op(Op::mul, {u.value, two});
  ScheduledKernel rs = check_legal(scaled, opt, narrow);
  const LoopNode& st = tile_of(rs);
  CHECK(st.mma == nullptr);
  REQUIRE(st.staged.size() == 2);
  CHECK(st.staged[0].path == std::vector<int>{0, 0});
  CHECK(st.staged[1].path == std::vector<int>{0, 1});

  // Tensor cores off (GpuTileShape::mma): SIMT for f16 too.
  opt.gpu_tile.mma = false;
  ScheduledKernel ro = check_legal(matmul(DType::f16), opt, narrow);
  CHECK(tile_of(ro).mma == nullptr);
}

TEST_CASE("schedule: on a target with warpgroup instructions a 16-bit product runs on wgmma") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};
  opt.gpu_tile.wgmma = true;  // sm_90a: 128x256 tiles of two warpgroups, 4 stages
  const std::vector<Env> sizes = {{{"M", 130}, {"N", 9}, {"K", 70}},
                                  {{"M", 3}, {"N", 5}, {"K", 0}}};
  auto swizzled = [](const StagedOperand& o, bool k_first) {
    CHECK(o.swizzle == 128);
    CHECK(o.k_first == k_first);
    CHECK(o.k_major == !k_first);  // [rows or lanes][k] where k is contiguous, else [k][...]
    CHECK(o.vector == 8);
    CHECK(o.pad == 0);
    CHECK(o.as_stored);
  };
  for (DType t : {DType::f16, DType::bf16}) {
    CAPTURE(dtype_name(t));
    ScheduledKernel r = check_legal(matmul(t), opt, sizes);
    const LoopNode& tile = tile_of(r);
    REQUIRE(tile.mma != nullptr);
    CHECK(tile.mma == find_warpgroup_mma(t, t, DType::f32, 256));
    CHECK(tile.tile_rows == 128);
    CHECK(tile.tile_lanes == 256);
    CHECK(tile.warp_rows == 64);  // a warpgroup's rows
    CHECK(tile.warp_lanes == 256);
    CHECK(tile.thread_rows == 1);  // one m64 instruction tile of 128 accumulators a thread
    CHECK(tile.thread_lanes == 128);
    CHECK(tile.pack_depth == 64);  // one 128-byte row of k
    CHECK(tile.stages == 4);
    CHECK(tile.mma_in_flight == 1);
    REQUIRE(tile.staged.size() == 2);
    swizzled(tile.staged[0], true);   // a[i, k]: K-major
    swizzled(tile.staged[1], false);  // b[k, j]: along its lanes, transposed by the instruction
    std::string text = loop_nest_to_text(r.nest);
    CHECK(text.find("tensor cores " + tile.mma->name +
                    " in warps of 64x256; a pipeline of 4 stages, 1 block of instructions in "
                    "flight") != std::string::npos);
    CHECK(text.find("[0] by row, k first, [rows][k], swizzled 128B, chunks of 8, as stored") !=
          std::string::npos);
  }
  // x[i, k] · w[j, k] (nn.Linear's layout): both K-major.
  KernelBuilder lin = linear_f16();
  const ScheduledKernel r_lt = check_legal(lin, opt, sizes);
  const LoopNode& lt = tile_of(r_lt);
  REQUIRE(lt.mma != nullptr);
  CHECK(lt.mma->warpgroup);
  swizzled(lt.staged[0], true);
  swizzled(lt.staged[1], true);
  // aᵀ · b: a[k, i] is contiguous along its rows: MN-major, transposed by the instruction too
  // (the warp instruction's tile copies it element by element).
  KernelBuilder at = matmul(DType::f16);
  auto a_t = std::const_pointer_cast<ScalarExpr>(at.plan.kernels[0].statements[1].value->args[0]);
  a_t->index = {it(2), it(0)};
  at.plan.buffers[0].shape = {K, M};
  const ScheduledKernel r_att = check_legal(at, opt, sizes);
  const LoopNode& att = tile_of(r_att);
  REQUIRE(att.mma != nullptr);
  CHECK(att.mma->warpgroup);
  swizzled(att.staged[0], false);
  swizzled(att.staged[1], false);
  // GPU_WGMMA's shape: 128x128 tiles take m64n128k16.
  ScheduleOptions narrow = opt;
  narrow.gpu_tile.wgmma_lanes = 128;
  const ScheduledKernel r_nt = check_legal(matmul(DType::f16), narrow, sizes);
  const LoopNode& nt = tile_of(r_nt);
  CHECK(nt.mma == find_warpgroup_mma(DType::f16, DType::f16, DType::f32, 128));
  CHECK(nt.thread_lanes == 64);
  // f32 and a scaled product take no instruction: the SIMT tile of GPU_TILE; GPU_WGMMA=0 or a
  // target without them: mma.sync on 128x128 tiles.
  CHECK(tile_of(check_legal(matmul(DType::f32), opt, sizes)).mma == nullptr);
  ScheduleOptions off = opt;
  off.gpu_tile.wgmma_rows = 0;
  const ScheduledKernel r_ot = check_legal(matmul(DType::f16), off, sizes);
  const LoopNode& ot = tile_of(r_ot);
  REQUIRE(ot.mma != nullptr);
  CHECK_FALSE(ot.mma->warpgroup);
  CHECK(ot.tile_lanes == 128);
  CHECK(ot.staged[0].swizzle == 0);
  off = opt;
  off.gpu_tile.wgmma = false;
  CHECK_FALSE(tile_of(check_legal(matmul(DType::f16), off, sizes)).mma->warpgroup);
}

namespace {

/** The f32 constant `v`. */
ScalarExprPtr cst(double v) {
  auto e = std::make_shared<ScalarExpr>();
  e->kind = ScalarExpr::Kind::constant;
  e->value = v;
  return e;
}

}  // namespace

TEST_CASE(
    "schedule: a warpgroup tile's epilogue stores runs of 16 bytes along the result's lanes") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};
  opt.gpu_tile.wgmma = true;
  const std::vector<Env> sizes = {{{"M", 130}, {"N", 9}, {"K", 70}}};
  auto tile_of = [](const ScheduledKernel& r) -> const LoopNode& {
    std::vector<const LoopNode*> found;
    allocs(*r.nest.root, found);
    REQUIRE_FALSE(found.empty());
    REQUIRE(found[0]->epilogue_staged);
    return *found[0];
  };
  // C[i, j] = Σ A[i, k] B[k, j], stored by the reduction: runs of 8 f16 (4 f32 would be 16 bytes).
  KernelBuilder mm = matmul(DType::f16);
  mm.plan.buffers[2].kind = BufferKind::output;
  const ScheduledKernel plain = check_legal(mm, opt, sizes);
  CHECK(tile_of(plain).epilogue_vector == 8);
  CHECK(loop_nest_to_text(plain.nest)
            .find("the epilogue through shared memory in runs of 8 lanes, 16-byte stores") !=
        std::string::npos);
  // The sum in f32 kept in registers, then y = f16(t) by the one statement after it: its store.
  auto product = [](ScalarExprPtr (*after)(ScalarExprPtr)) {
    KernelBuilder b;
    int a = b.buffer("a", {M, K}), w = b.buffer("b", {K, N}), t = b.buffer("t", {M, N}),
        y = b.buffer("y", {M, N});
    b.plan.buffers[a].dtype = b.plan.buffers[w].dtype = b.plan.buffers[y].dtype = DType::f16;
    b.plan.buffers[y].kind = BufferKind::output;
    b.stmt(Statement::Kind::reduce_init, {M, N}, t, {it(0), it(1)});
    b.stmt(Statement::Kind::reduce_update, {M, N, K}, t, {it(0), it(1)},
           op(Op::mul, {load(a, {it(0), it(2)}), load(w, {it(2), it(1)})}));
    b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, after(load(t, {it(0), it(1)})));
    return b;
  };
  const LoopNode& cast = tile_of(check_legal(product([](ScalarExprPtr v) {
                                               return op(Op::max, {v, cst(0.0)});
                                             }),
                                             opt, sizes));
  CHECK(cast.result_in_registers);
  CHECK(cast.epilogue_vector == 8);
  // An activation's worth of arithmetic (a polynomial of 30 terms, about a tanh GELU's 60
  // nodes) runs in runs too: eight independent chains a thread, where one element at a time
  // left the block latency-bound. One of 100 terms runs element by element: a run would be
  // eight copies of its code.
  auto polynomial = [&](int terms) {
    static int n;
    n = terms;
    const ScheduledKernel r = check_legal(product([](ScalarExprPtr v) {
                                            ScalarExprPtr s = v;
                                            for (int i = 0; i < n; ++i)
                                              s = op(Op::add, {op(Op::mul, {s, v}), cst(i)});
                                            return s;
                                          }),
                                          opt, sizes);
    return tile_of(r).epilogue_vector;
  };
  CHECK(polynomial(30) == 8);
  CHECK(polynomial(100) == 0);
  // The result transposed, C[j, i]: consecutive lanes lie M elements apart.
  KernelBuilder tr = matmul(DType::f16);
  tr.plan.buffers[2].kind = BufferKind::output;
  for (Statement& st : tr.plan.kernels[0].statements)
    st.index = {it(1), it(0)};
  tr.plan.buffers[2].shape = {N, M};
  CHECK(tile_of(check_legal(tr, opt, sizes)).epilogue_vector == 0);
}

TEST_CASE(
    "schedule: a block tile keeps a temporary's sum in registers only where no one else reads it") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};
  const std::vector<Env> sizes = {{{"M", 130}, {"N", 9}, {"K", 70}}};
  // t[i, j] = Σ a[i, k] b[k, j] in f32 (a temporary), y = f16(t) after it, in one kernel.
  auto product = [] {
    KernelBuilder b;
    int a = b.buffer("a", {M, K}), w = b.buffer("b", {K, N}), t = b.buffer("t", {M, N}),
        y = b.buffer("y", {M, N});
    b.plan.buffers[a].dtype = b.plan.buffers[w].dtype = b.plan.buffers[y].dtype = DType::f16;
    b.plan.buffers[y].kind = BufferKind::output;
    b.stmt(Statement::Kind::reduce_init, {M, N}, t, {it(0), it(1)});
    b.stmt(Statement::Kind::reduce_update, {M, N, K}, t, {it(0), it(1)},
           op(Op::mul, {load(a, {it(0), it(2)}), load(w, {it(2), it(1)})}));
    auto cast = load(t, {it(0), it(1)});
    b.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, cast);
    return b;
  };
  auto tile_of = [](const ScheduledKernel& r) -> const LoopNode& {
    std::vector<const LoopNode*> found;
    allocs(*r.nest.root, found);
    REQUIRE_FALSE(found.empty());
    return *found[0];
  };
  KernelBuilder alone = product();
  const ScheduledKernel ra = check_legal(alone, opt, sizes);
  CHECK(tile_of(ra).result_in_registers);
  CHECK(loop_nest_to_text(ra.nest).find("the result in registers only") != std::string::npos);
  // A second kernel reads t: it must be stored.
  KernelBuilder shared = product();
  shared.plan.kernels.push_back(shared.plan.kernels[0]);
  shared.plan.kernels[1].statements.erase(shared.plan.kernels[1].statements.begin(),
                                          shared.plan.kernels[1].statements.begin() + 2);
  CHECK_FALSE(private_temporary(shared.plan, 2));
  CHECK_FALSE(tile_of(check_legal(shared, opt, sizes)).result_in_registers);
  // An output is stored whoever reads it.
  KernelBuilder out = product();
  out.plan.buffers[2].kind = BufferKind::output;
  CHECK_FALSE(tile_of(check_legal(out, opt, sizes)).result_in_registers);
}

TEST_CASE("schedule: a warpgroup tile's kernel at each GPU_WGMMA shape, and where its tiles lie") {
  // The dimensions a launch counts tiles along, from the plan alone (a cached module has no
  // loop IR): C = A·B, x·wᵀ, and a batch of products.
  KernelBuilder mm = matmul(DType::f16);
  std::optional<GpuTileDims> d = gpu_tile_dims(mm.plan, mm.plan.kernels[0]);
  REQUIRE(d);
  CHECK(d->rows == 0);
  CHECK(d->lanes == 1);
  CHECK(d->outer.empty());
  CHECK(d->depth == std::vector<int>{2});
  CHECK(d->epilogue_ops == 0);
  // y = max(t, 0) after the sum t: an epilogue of three operations (the load, the constant, max).
  KernelBuilder relu = matmul(DType::f16);
  int out = relu.buffer("y", {M, N});
  relu.stmt(Statement::Kind::assign, {M, N}, out, {it(0), it(1)},
            op(Op::max, {load(2, {it(0), it(1)}), cst(0.0)}));
  d = gpu_tile_dims(relu.plan, relu.plan.kernels[0]);
  REQUIRE(d);
  CHECK(d->epilogue_ops == 3);
  KernelBuilder lin = linear_f16();
  d = gpu_tile_dims(lin.plan, lin.plan.kernels[0]);
  REQUIRE(d);
  CHECK((d->rows == 0 && d->lanes == 1 && d->depth == std::vector<int>{2}));
  KernelBuilder bmm;
  int a = bmm.buffer("a", {B, M, K}), b = bmm.buffer("b", {B, K, N}),
      c = bmm.buffer("c", {B, M, N});
  for (Buffer& buf : bmm.plan.buffers)
    buf.dtype = DType::f16;
  bmm.stmt(Statement::Kind::reduce_init, {B, M, N}, c, {it(0), it(1), it(2)});
  bmm.stmt(Statement::Kind::reduce_update, {B, M, N, K}, c, {it(0), it(1), it(2)},
           op(Op::mul, {load(a, {it(0), it(1), it(3)}), load(b, {it(0), it(3), it(2)})}));
  d = gpu_tile_dims(bmm.plan, bmm.plan.kernels[0]);
  REQUIRE(d);
  CHECK((d->rows == 1 && d->lanes == 2 && d->outer == std::vector<int>{0} &&
         d->depth == std::vector<int>{3}));
  const TileProblem p =
      tile_problem(bmm.plan.kernels[0], *d, {{"B", 32}, {"M", 512}, {"N", 384}, {"K", 64}});
  CHECK((p.outer == 32 && p.rows == 512 && p.lanes == 384 && p.depth == 64));
  // An elementwise kernel has no tiles to count.
  KernelBuilder add;
  int x = add.buffer("x", {M, N}), y = add.buffer("y", {M, N});
  add.stmt(Statement::Kind::assign, {M, N}, y, {it(0), it(1)}, load(x, {it(0), it(1)}));
  CHECK_FALSE(gpu_tile_dims(add.plan, add.plan.kernels[0]));

  // Each shape is a warpgroup tile of its own rows and lanes, correct at odd sizes (the
  // simulator runs every nest), which is what the pipeline checks before rendering a variant.
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};
  opt.gpu_tile.wgmma = true;
  const std::vector<Env> sizes = {{{"M", 130}, {"N", 72}, {"K", 70}},
                                  {{"M", 3}, {"N", 9}, {"K", 5}}};
  for (const WgmmaShape& v :
       {WgmmaShape{128, 256, 4}, WgmmaShape{128, 128, 4}, WgmmaShape{128, 64, 4}}) {
    CAPTURE(v.lanes);
    opt.gpu_tile.wgmma_rows = v.rows;
    opt.gpu_tile.wgmma_lanes = v.lanes;
    opt.gpu_tile.wgmma_stages = v.stages;
    KernelBuilder k = matmul(DType::f16);
    k.plan.buffers[2].kind = BufferKind::output;
    const ScheduledKernel r = check_legal(k, opt, sizes);
    const LoopNode* t = warpgroup_tile(r.nest);
    REQUIRE(t);
    CHECK(t->tile_rows == v.rows);
    CHECK(t->tile_lanes == v.lanes);
    CHECK(t->stages == v.stages);
  }
  CHECK(variant_symbol("kiln_matmul_0", {128, 64, 4}) == "kiln_matmul_0_w128x64x4");
}

TEST_CASE("schedule: a launch takes the tile shape its sizes make fastest") {
  const std::vector<WgmmaShape> shapes = {
      {128, 256, 4}, {128, 128, 4}, {128, 128, 3}, {128, 64, 4}, {128, 64, 8}};  // the default
  auto pick = [&](int64_t outer, int64_t m, int64_t n, int64_t k, int64_t ops = 1) {
    return choose_tile({outer, m, n, k, ops}, shapes, 132);
  };
  // Two blocks a multiprocessor where two pipelines fit in 228 KiB.
  CHECK(blocks_per_unit(shapes[0]) == 1);
  CHECK(blocks_per_unit(shapes[1]) == 1);
  CHECK(blocks_per_unit(shapes[2]) == 2);
  CHECK(blocks_per_unit(shapes[3]) == 2);
  CHECK(blocks_per_unit(shapes[4]) == 1);
  // Squares large enough for many waves keep the widest tile; a 512³ square makes 8 of them
  // for 132 multiprocessors, and 32 of 128 × 64; 128 rows make 16 against 64. In one wave
  // the pipeline's lead decides: eight stages of 128 × 64 (H200, M = 128, N = K = 4096:
  // 0.034 ms against four stages' 0.037).
  CHECK(pick(1, 4096, 4096, 4096) == 0);
  CHECK(pick(1, 2048, 2048, 2048) == 0);
  CHECK(pick(1, 512, 512, 512) == 4);
  CHECK(pick(1, 128, 4096, 4096) == 4);
  CHECK(pick(1, 8, 4096, 4096) == 4);
  CHECK(choose_tile({1, 128, 4096, 4096, 1}, {shapes[3], shapes[4]}, 132) == 1);
  CHECK(tile_cost_us({1, 8, 4096, 4096}, shapes[4], 132) <
        tile_cost_us({1, 8, 4096, 4096}, shapes[3], 132));
  // Past one wave the lead does not show: four stages hold two blocks a multiprocessor.
  CHECK(choose_tile({1, 4096, 4096, 4096, 1}, {shapes[3], shapes[4]}, 132) == 0);
  // 8192 × 768 outputs over K = 3072: 192 wide tiles are two waves, 384 narrower ones three
  // waves of more than half the time each (H200, with the TMA: 0.082 ms against 0.094).
  CHECK(pick(1, 8192, 768, 3072) == 0);
  CHECK(tile_cost_us({1, 8192, 768, 3072}, shapes[1], 132) >
        tile_cost_us({1, 8192, 768, 3072}, shapes[0], 132));
  CHECK(pick(1, 8192, 3072, 768) == 0);
  // Over K = 768 a tile's start and end weigh: 192 wide tiles pay them twice a multiprocessor,
  // 384 narrower ones three times (H200: 0.031 ms against 0.039 at 128 × 128 × 3).
  CHECK(pick(1, 8192, 768, 768) == 0);
  CHECK(pick(32, 512, 512, 512) == 0);
  // A tanh GELU after the same product (about 60 operations an element): two blocks a
  // multiprocessor hide much of it behind each other's products (H200: 0.184 ms against
  // 0.226), where K = 768 makes the epilogue a large part; at K = 4096 the widest tile's
  // products win again (0.302 against 0.351).
  CHECK(pick(1, 8192, 3072, 768, 60) == 2);
  CHECK(pick(1, 4096, 4096, 4096, 60) == 0);
  // A shape not measured takes the estimate from its size.
  CHECK(tile_cost_us({1, 4096, 4096, 4096}, {256, 64, 5}, 132) > 0);
  // The cost grows with the waves, the depth and the epilogue.
  CHECK(tile_cost_us({1, 4096, 4096, 4096}, shapes[0], 132) <
        tile_cost_us({1, 4096, 4096, 8192}, shapes[0], 132));
  CHECK(tile_cost_us({1, 4096, 4096, 4096, 1}, shapes[0], 132) <
        tile_cost_us({1, 4096, 4096, 4096, 60}, shapes[0], 132));
  CHECK(tile_cost_us({1, 128, 256, 4096}, shapes[0], 132) ==
        tile_cost_us({1, 128 * 132, 256, 4096}, shapes[0], 132));
  // Without the device's multiprocessors, or with nothing to compute, the kernel's own shape.
  CHECK(choose_tile({1, 512, 512, 512}, shapes, 0) == 0);
  CHECK(choose_tile({1, 0, 512, 512}, shapes, 132) == 0);
}

TEST_CASE("schedule: on the GPU short rows go to groups of a block's threads") {
  // scheduler/group_rows.h: a warp per row where its threads reach the row's end in eight
  // 16-byte vectors each, else the block.
  CHECK(row_group_threads(768, 2) == 32);    // 96 vectors of 8 f16: 3 a thread
  CHECK(row_group_threads(2048, 2) == 32);   // 8 a thread
  CHECK(row_group_threads(2049, 2) == 256);  //
  CHECK(row_group_threads(1024, 4) == 32);   // f32: 256 vectors
  CHECK(row_group_threads(4096, 4) == 256);  // the whole block, as without groups
  CHECK(row_group_threads(1, 8) == 32);

  // Softmax's max and exponentials over rows of `row` elements of `t`.
  auto rows_kernel = [](const IntExpr& row, DType t) {
    KernelBuilder b;
    int x = b.buffer("x", {B, row}), m = b.buffer("m", {B}), e = b.buffer("e", {B, row});
    b.plan.buffers[x].dtype = b.plan.buffers[e].dtype = t;
    b.stmt(Statement::Kind::reduce_init, {B}, m, {it(0)}).reduce = ReduceKind::max;
    b.stmt(Statement::Kind::reduce_update, {B, row}, m, {it(0)}, load(x, {it(0), it(1)})).reduce =
        ReduceKind::max;
    b.stmt(Statement::Kind::assign, {B, row}, e, {it(0), it(1)},
           op(Op::exp2, {op(Op::add, {load(x, {it(0), it(1)}), op(Op::neg, {load(m, {it(0)})})})}));
    return b;
  };
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.gpu_tile.rows = 0;
  auto block_loop = [](const ScheduledKernel& r) -> const LoopNode* {
    for (const LoopNode* l : loops(*r.nest.root))
      if (l->mapping == Mapping::block_x) return l;
    return nullptr;
  };
  const std::vector<Env> sizes = {{{"B", 3}, {"N", 5}}, {{"B", 1}, {"N", 1}}};

  // A row of 768 f16 values: a warp per row, eight rows to a block; the row's thread loops and
  // its reduction stay thread.x, now over the group (the renderer's business).
  ScheduledKernel r = check_legal(rows_kernel(768, DType::f16), opt, {{{"B", 3}}});
  report("rows of 768 f16, grouped", r);
  const LoopNode* block = block_loop(r);
  REQUIRE(block != nullptr);
  REQUIRE(block->group_threads != nullptr);
  CHECK(block->group_threads->kind == AstExpr::Kind::integer);
  CHECK(block->group_threads->value == 32);
  CHECK(loop_nest_to_text(r.nest).find("groups of 32 threads") != std::string::npos);

  // The row's length known only at run time: T is an expression of it.
  r = check_legal(rows_kernel(N, DType::f16), opt, sizes);
  block = block_loop(r);
  REQUIRE(block != nullptr);
  REQUIRE(block->group_threads != nullptr);
  CHECK(block->group_threads->kind == AstExpr::Kind::op);
  CHECK(loop_expr_to_text(*block->group_threads).find("2048") !=
        std::string::npos);  // a warp up to 2048

  // Rows that take the whole block (4096 f32) and a target without groups: no groups.
  r = check_legal(rows_kernel(4096, DType::f32), opt, {{{"B", 2}}});
  REQUIRE(block_loop(r) != nullptr);
  CHECK(block_loop(r)->group_threads == nullptr);
  opt.gpu_row_groups = false;
  r = check_legal(rows_kernel(768, DType::f16), opt, {{{"B", 3}}});
  REQUIRE(block_loop(r) != nullptr);
  CHECK(block_loop(r)->group_threads == nullptr);

  // A block tile uses the whole block: its loops take no groups.
  ScheduleOptions tiled = untiled();
  tiled.backend_gpu = true;
  r = check_legal(linear_f16(), tiled, {{{"M", 5}, {"N", 7}, {"K", 3}}});
  for (const LoopNode* l : loops(*r.nest.root))
    CHECK(l->group_threads == nullptr);
}

TEST_CASE(
    "schedule: a warpgroup tile's stages come by the TMA where every operand's index allows") {
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};
  opt.gpu_tile.wgmma = true;
  opt.gpu_tile.tma = true;
  const std::vector<Env> sizes = {{{"M", 130}, {"N", 9}, {"K", 70}},
                                  {{"M", 3}, {"N", 5}, {"K", 0}}};
  auto tile_of = [](const ScheduledKernel& r) -> const LoopNode& {
    std::vector<const LoopNode*> found;
    allocs(*r.nest.root, found);
    REQUIRE_FALSE(found.empty());
    REQUIRE(found[0]->mma != nullptr);
    REQUIRE(found[0]->mma->warpgroup);
    return *found[0];
  };
  // a[i, k] · b[k, j]: a K-major box of 64 k × the tile's 128 rows; b MN-major, boxes of 64
  // lanes × 64 k (the instruction's blocks of 64 lanes).
  const ScheduledKernel r = check_legal(matmul(DType::f16), opt, sizes);
  const LoopNode& t = tile_of(r);
  REQUIRE(t.staged.size() == 2);
  CHECK(t.staged[0].tma_box == std::vector<int64_t>{64, 128});
  CHECK(t.staged[0].tma_k_dim == 1);
  CHECK(t.staged[0].tma_x_dim == 0);
  CHECK(t.staged[1].tma_box == std::vector<int64_t>{64, 64});
  CHECK(t.staged[1].tma_k_dim == 0);
  CHECK(t.staged[1].tma_x_dim == 1);
  const std::vector<TensorMapUse> maps = tensor_maps_of(r.nest);
  REQUIRE(maps.size() == 2);
  CHECK(maps[0].buffer == t.staged[0].tma_buffer);
  CHECK(maps[1].box == std::vector<int64_t>{64, 64});
  CHECK(maps[0].buffer != maps[1].buffer);
  // nn.Linear's w[j, k]: K-major, one box of the tile's 256 lanes.
  const ScheduledKernel r_lt = check_legal(linear_f16(), opt, sizes);
  const LoopNode& lt = tile_of(r_lt);
  CHECK(lt.staged[1].tma_box == std::vector<int64_t>{64, 256});
  // aᵀ: a[k, i] held along its rows: boxes of 64 rows × 64 k.
  KernelBuilder at = matmul(DType::f16);
  auto a_t = std::const_pointer_cast<ScalarExpr>(at.plan.kernels[0].statements[1].value->args[0]);
  a_t->index = {it(2), it(0)};
  at.plan.buffers[0].shape = {K, M};
  const ScheduledKernel r_at = check_legal(at, opt, sizes);
  const LoopNode& att = tile_of(r_at);
  CHECK(att.staged[0].tma_box == std::vector<int64_t>{64, 64});
  CHECK(att.staged[0].tma_k_dim == 0);
  // A leading dimension read at 0 folds into the rows (the coalesce pass's view of a batch's
  // rows): a[0, i, k] of a[B, M, K] is a map of rank 2.
  KernelBuilder lead = matmul(DType::f16);
  auto a_0 = std::const_pointer_cast<ScalarExpr>(lead.plan.kernels[0].statements[1].value->args[0]);
  a_0->index = {IntExpr(0), it(0), it(2)};
  lead.plan.buffers[0].shape = {B, M, K};
  std::vector<Env> with_b = sizes;
  for (Env& e : with_b)
    e["B"] = 1;
  const ScheduledKernel r_0 = check_legal(lead, opt, with_b);
  const LoopNode& lt0 = tile_of(r_0);
  CHECK(lt0.staged[0].tma_fold == 1);
  CHECK(lt0.staged[0].tma_box == std::vector<int64_t>{64, 128});
  CHECK(tensor_maps_of(r_0.nest).at(0).fold == 1);
  // An index that moves with k and the rows at once (a[i, k + i]) is no box: neither operand
  // goes by the TMA, the tile copies both with cp.async.
  KernelBuilder skew = matmul(DType::f16);
  auto a_s = std::const_pointer_cast<ScalarExpr>(skew.plan.kernels[0].statements[1].value->args[0]);
  a_s->index = {it(0), it(2) + it(0)};
  skew.plan.buffers[0].shape = {M, K + M};
  const ScheduledKernel r_s = check_legal(skew, opt, sizes);
  const LoopNode& st = tile_of(r_s);
  CHECK(st.staged[0].tma_box.empty());
  CHECK(st.staged[1].tma_box.empty());
  CHECK(tensor_maps_of(r_s.nest).empty());
  // A target without the TMA: none.
  ScheduleOptions off = opt;
  off.gpu_tile.tma = false;
  CHECK(tensor_maps_of(check_legal(matmul(DType::f16), off, sizes).nest).empty());
}

TEST_CASE("schedule cache: a schedule reused for another kernel names its tensor maps' buffers") {
  // Two products of one shape on other buffers (a projection and a later one): the second runs
  // the first's schedule, and its TMA copies must read its own operands, not the first's.
  ScheduleOptions opt = untiled();
  opt.backend_gpu = true;
  opt.tile = true;
  opt.gpu_tile = {};
  opt.gpu_tile.wgmma = true;
  opt.gpu_tile.tma = true;
  KernelBuilder b = matmul(DType::f16);
  KernelPlan& plan = b.plan;
  const int first_buffers = static_cast<int>(plan.buffers.size());
  std::function<ScalarExprPtr(const ScalarExprPtr&)> moved = [&](const ScalarExprPtr& e) {
    auto c = std::make_shared<ScalarExpr>(*e);
    if (c->kind == ScalarExpr::Kind::load) c->buffer += first_buffers;
    for (ScalarExprPtr& a : c->args)
      a = moved(a);
    return ScalarExprPtr(c);
  };
  for (int i = 0; i < first_buffers; ++i)
    plan.buffers.push_back(plan.buffers[i]);
  Kernel second = plan.kernels[0];
  for (Statement& st : second.statements) {
    st.buffer += first_buffers;
    if (st.value) st.value = moved(st.value);
  }
  for (int& buf : second.buffers)
    buf += first_buffers;
  plan.kernels.push_back(second);
  ScheduleCache cache(opt);
  std::vector<ScheduledKernel> s = cache.schedule_all(plan, 1);
  CHECK(cache.hits() == 1);
  REQUIRE(s.size() == 2);
  const std::vector<TensorMapUse> one = tensor_maps_of(s[0].nest), two = tensor_maps_of(s[1].nest);
  REQUIRE(one.size() == 2);
  REQUIRE(two.size() == 2);
  for (size_t m = 0; m < 2; ++m) {
    CHECK(one[m].buffer < first_buffers);
    CHECK(two[m].buffer == one[m].buffer + first_buffers);
  }
  // One at a time through schedule(), the same.
  ScheduleCache single(opt);
  single.schedule(plan, plan.kernels[0]);
  ScheduledKernel again = single.schedule(plan, plan.kernels[1]);
  CHECK(single.hits() == 1);
  CHECK(tensor_maps_of(again.nest).at(0).buffer == one[0].buffer + first_buffers);
}
