#include "scheduler/transforms.h"

namespace kiln {

std::string transforms_to_text(const std::vector<Transform>& list) {
  std::string out;
  for (const Transform& t : list) {
    out += out.empty() ? "" : ", ";
    switch (t.kind) {
      case Transform::Kind::tile: {
        out += "tile ";
        for (size_t k = 0; k < t.tile.sizes.size(); ++k)
          out += (k ? "x" : "") + std::to_string(t.tile.sizes[k]);
        out += " (bands of " + std::to_string(t.tile.min_depth) + "+ members)";
        break;
      }
      case Transform::Kind::sink:
        out += "sink parallel loops below reductions";
        break;
      case Transform::Kind::register_tile:
        out += "register tile " + std::to_string(t.micro.rows) + " rows x " +
               std::to_string(t.micro.vectors) + " vectors of " +
               std::to_string(t.micro.vector_bytes) + " bytes" +
               (t.micro.amx_bf16 || t.micro.amx_int8
                    ? std::string(", ") + (t.micro.amx_bf16 ? "bf16" : "") +
                          (t.micro.amx_bf16 && t.micro.amx_int8 ? " and " : "") +
                          (t.micro.amx_int8 ? "int8" : "") + " products in 32x32 AMX tiles"
                    : "") +
               (t.micro.dot_bytes > 0 && !t.micro.amx_int8
                    ? ", int8 products in " + std::to_string(t.micro.dot_rows) + " rows x " +
                          std::to_string(t.micro.dot_vectors) + " vectors of " +
                          std::to_string(t.micro.dot_bytes) + " bytes (VNNI)"
                    : "") +
               (t.micro.bf16_dot_bytes > 0 && !t.micro.amx_bf16
                    ? ", bf16 products in " + std::to_string(t.micro.dot_rows) + " rows x " +
                          std::to_string(kBf16DotVectors) + " vectors of " +
                          std::to_string(t.micro.bf16_dot_bytes) + " bytes (vdpbf16ps)"
                    : "");
        break;
      case Transform::Kind::distribute_reductions:
        out += "distribute reductions";
        break;
      case Transform::Kind::promote_accumulators:
        out += t.half ? "promote accumulators (f16 and bf16 too)" : "promote accumulators";
        if (t.sum_block > 0) out += " (long sums in blocks of " + std::to_string(t.sum_block) + ")";
        break;
      case Transform::Kind::carry_scans:
        out += t.split ? "carry scans (split across threads)" : "carry scans";
        break;
      case Transform::Kind::gpu_tile:
        out += "gpu block tile " + std::to_string(t.gpu.rows) + "x" + std::to_string(t.gpu.lanes) +
               ", " + std::to_string(t.gpu.thread_rows) + "x" + std::to_string(t.gpu.thread_lanes) +
               " per thread, reduction blocks of " + std::to_string(t.gpu.depth);
        break;
      case Transform::Kind::map_parallel:
        out += "map parallel (collapse " + std::to_string(t.max_collapse) + ")";
        break;
      case Transform::Kind::map_simd:
        out += "map simd";
        if (t.vector_bytes > 0) out += " (" + std::to_string(t.vector_bytes) + "-byte vectors)";
        break;
      case Transform::Kind::map_gpu:
        out += "map gpu blocks and threads";
        break;
      case Transform::Kind::group_rows:
        out += "group short rows";
        break;
      case Transform::Kind::stream_stores:
        out += "stream stores from " + std::to_string(t.stream_bytes) + " bytes";
        break;
      case Transform::Kind::prefetch_rows:
        out += "prefetch next rows";
        break;
      case Transform::Kind::online_softmax:
        out += "online softmax " + std::to_string(t.softmax.rows) + " rows x " +
               std::to_string(t.softmax.lanes) + " lanes per block, keys in blocks of " +
               std::to_string(t.softmax.keys);
        break;
    }
  }
  return out;
}

}  // namespace kiln
