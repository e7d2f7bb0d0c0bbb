// The candidates of each tunable knob and the space of a graph on a runtime.
#include "driver/tune_space.h"

#include <algorithm>

#include "driver/config.h"

namespace kiln {

namespace {

/** CPU register tiles (MICRO): R rows x V vectors x D deep x B bytes. The 64-byte shapes are
 *  tried only where AVX-512 runs at full width. */
const std::vector<std::string> kMicro32 = {"3x8x256x32", "4x4x256x32", "6x2x256x32",
                                           "4x2x256x32", "6x2x128x32", "8x2x256x32"};
const std::vector<std::string> kMicro64 = {"6x2x256x64", "6x4x256x64", "4x4x256x64", "3x8x256x64",
                                           "8x2x256x64"};

/** Loop-band tiles (TILE), every dimension alike. */
const std::vector<std::string> kTile = {"16", "32", "64", "128"};

/** GPU block tiles (GPU_TILE): R rows x L lanes, r x l a thread (256 threads), depth D. */
const std::vector<std::string> kGpuTile = {"128x128x8x8x8", "64x64x4x4x8",    "128x64x8x4x8",
                                           "64x128x4x8x8",  "128x128x8x8x16", "64x64x4x4x16"};

/** Hopper warpgroup tiles (GPU_WGMMA): R rows x L lanes x S stages. */
const std::vector<std::string> kGpuWgmma = {"128x256x4", "128x256x3", "128x128x3", "128x128x4",
                                            "256x128x3", "128x64x4",  "128x64x8"};

/** Tensor-core warp tiles (GPU_MMA): WR x WL warps, depth D, S stages. */
const std::vector<std::string> kGpuMma = {"64x32x32x3", "64x32x32x2", "64x32x32x4", "32x64x32x3",
                                          "64x64x32x3"};

bool has_reduction(const Graph& g) {
  return std::any_of(g.nodes.begin(), g.nodes.end(),
                     [](const Node& n) { return n.op == Op::reduce; });
}

/** The knob's value in `opt` first, then the candidates not equal to it. */
TuneDimension dimension(const std::string& knob, const CompileOptions& opt,
                        const std::vector<std::string>& candidates) {
  const Knob& k = *find_knob(knob);
  TuneDimension d{knob, {k.show(opt)}};
  for (const std::string& v : candidates) {
    CompileOptions scratch;
    k.parse(v, scratch);
    std::string canonical = k.show(scratch);  // "32" is "32x32x32"
    if (std::find(d.values.begin(), d.values.end(), canonical) == d.values.end())
      d.values.push_back(canonical);
  }
  return d;
}

}  // namespace

std::vector<TuneDimension> tune_space(const Graph& g, const CompileOptions& opt, bool host,
                                      bool wgmma) {
  std::vector<TuneDimension> space;
  bool reduces = has_reduction(g);
  if (host) {
    if (reduces) {
      std::vector<std::string> micro = kMicro32;
      if (opt.schedule.full_width_bytes >= 64)
        micro.insert(micro.end(), kMicro64.begin(), kMicro64.end());
      space.push_back(dimension("MICRO", opt, micro));
    }
    space.push_back(dimension("TILE", opt, kTile));
    return space;
  }
  if (!reduces) return space;
  space.push_back(dimension("GPU_TILE", opt, kGpuTile));
  if (wgmma)
    space.push_back(dimension("GPU_WGMMA", opt, kGpuWgmma));
  else
    space.push_back(dimension("GPU_MMA", opt, kGpuMma));
  return space;
}

const std::vector<std::string>& tunable_knobs() {
  static const std::vector<std::string> names = {"GPU_MMA", "GPU_TILE", "GPU_WGMMA", "MICRO",
                                                 "TILE"};
  return names;
}

size_t space_size(const std::vector<TuneDimension>& space) {
  size_t n = 1;
  for (const TuneDimension& d : space)
    n *= d.values.size();
  return n;
}

std::string space_text(const std::vector<TuneDimension>& space) {
  std::string t;
  for (const TuneDimension& d : space) {
    std::string head = d.knob;
    head.resize(std::max<size_t>(head.size() + 2, 11), ' ');
    t += head;
    for (size_t k = 0; k < d.values.size(); ++k)
      t += (k ? " " : "") + d.values[k] + (k == 0 ? " (default)" : "");
    t += "\n";
  }
  return t;
}

std::string candidate_text(const TuneCandidate& c) {
  std::string t;
  for (const auto& [k, v] : c)
    t += (t.empty() ? "" : " ") + k + "=" + v;
  return t;
}

}  // namespace kiln
