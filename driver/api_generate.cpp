// kiln::generate (include/kiln/kiln.h): greedy generation with a step composite, written on the
// public API alone: one run on the prompt, then one run a token, the state double-buffered.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <set>
#include <stdexcept>

#include "kiln/kiln.h"

namespace kiln {

namespace {

/** The roles of a step composite's inputs and outputs that generate() fills itself. */
struct StepPorts {
  std::string ids, position, logits;
  std::vector<std::pair<std::string, std::string>> state;  // {output, input}
};

bool is_state_input(const StepPorts& p, const std::string& name) {
  return std::any_of(p.state.begin(), p.state.end(),
                     [&](const auto& s) { return s.second == name; });
}

bool is_state_output(const StepPorts& p, const std::string& name) {
  return std::any_of(p.state.begin(), p.state.end(),
                     [&](const auto& s) { return s.first == name; });
}

/** Finds the token ids, the position and the logits among what `given` does not hold. */
StepPorts step_ports(const Compiled& step, const std::map<std::string, const void*>& given) {
  StepPorts p;
  p.state = step.state();
  const std::string what = "generate: '" + step.composite() + "'";
  for (const std::string& in : step.inputs()) {
    if (given.count(in) || is_state_input(p, in)) continue;
    const size_t rank = step.symbolic_shape(in).size();
    const bool i32 = step.dtype(in) == "i32";
    if (i32 && rank == 1 && p.ids.empty())
      p.ids = in;
    else if (i32 && rank == 0 && p.position.empty())
      p.position = in;
    else
      throw std::invalid_argument(what + "'s input '" + in + "' (" + step.dtype(in) + ", rank " +
                                  std::to_string(rank) +
                                  ") is not given; a step takes its weights, its state, one "
                                  "i32 vector of token ids and one i32 position");
  }
  for (const std::string& out : step.outputs()) {
    if (is_state_output(p, out)) continue;
    if (!p.logits.empty() || step.symbolic_shape(out).size() != 1 || step.dtype(out)[0] == 'i' ||
        step.dtype(out)[0] == 'u' || step.dtype(out) == "bool")
      throw std::invalid_argument(what + "'s output '" + out +
                                  "' is not a state; a step has one other output, the logits, "
                                  "a float vector");
    p.logits = out;
  }
  if (p.ids.empty() || p.position.empty() || p.logits.empty())
    throw std::invalid_argument(what +
                                " needs an i32 vector of token ids, an i32 position and "
                                "a float vector of logits besides its weights and state");
  return p;
}

/** The logits as doubles, whatever their float dtype. */
double logit(const std::string& dtype, const void* data, size_t k) {
  if (dtype == "f32") return static_cast<const float*>(data)[k];
  if (dtype == "f64") return static_cast<const double*>(data)[k];
  uint16_t bits = static_cast<const uint16_t*>(data)[k];
  uint32_t f;
  if (dtype == "bf16") {
    f = static_cast<uint32_t>(bits) << 16;
  } else {  // f16
    const uint32_t sign = (bits & 0x8000u) << 16, exp = (bits >> 10) & 0x1f, man = bits & 0x3ff;
    if (exp == 0x1f) {
      f = sign | 0x7f800000u | (man << 13);
    } else if (exp == 0) {
      float v = std::ldexp(static_cast<float>(man), -24);
      return sign ? -v : v;
    } else {
      f = sign | ((exp + 112) << 23) | (man << 13);
    }
  }
  float v;
  std::memcpy(&v, &f, sizeof v);
  return v;
}

/** The first maximum (a NaN counts as the maximum, as ops/reduce.toml:argmax). */
int32_t argmax(const std::string& dtype, const void* data, size_t n) {
  size_t best = 0;
  double m = logit(dtype, data, 0);
  for (size_t k = 1; k < n && m == m; ++k) {
    const double v = logit(dtype, data, k);
    if (v > m || v != v) best = k, m = v;
  }
  return static_cast<int32_t>(best);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Generation generate(const Compiled& step, const std::map<std::string, const void*>& inputs,
                    const std::map<std::string, int64_t>& sizes, const std::vector<int32_t>& prompt,
                    int new_tokens, const std::function<void(int32_t)>& on_token,
                    const Compiled* decode_step) {
  const StepPorts ports = step_ports(step, inputs);
  if (decode_step &&
      (decode_step->composite() != step.composite() || decode_step->inputs() != step.inputs() ||
       decode_step->outputs() != step.outputs()))
    throw std::invalid_argument("generate: the decode step '" + decode_step->composite() +
                                "' is not the step '" + step.composite() + "' compiled again");
  if (prompt.empty()) throw std::invalid_argument("generate: the prompt is empty");
  if (new_tokens < 0) throw std::invalid_argument("generate: a negative count of tokens");
  const std::vector<std::string> ids_shape = step.symbolic_shape(ports.ids);
  const std::vector<std::string> vars = step.size_vars();
  if (std::find(vars.begin(), vars.end(), ids_shape[0]) == vars.end())
    throw std::invalid_argument("generate: the token ids '" + ports.ids + "' of '" +
                                step.composite() + "' are " + ids_shape[0] +
                                " long; a step's ids need a size variable of their own");
  std::map<std::string, int64_t> bound = sizes;
  bound[ids_shape[0]] = static_cast<int64_t>(prompt.size());
  const int64_t positions = static_cast<int64_t>(prompt.size()) + new_tokens;
  for (const auto& [out, in] : ports.state)
    for (const std::string& d : step.symbolic_shape(in))
      if (std::find(vars.begin(), vars.end(), d) != vars.end() && !bound.count(d))
        bound[d] = positions;
  // Buffers: inputs then outputs; each state has two, swapped after every call.
  const std::vector<std::string> in_names = step.inputs(), out_names = step.outputs();
  const size_t vocab = static_cast<size_t>(step.shape(ports.logits, bound)[0]);
  for (size_t k = 0; k < prompt.size(); ++k)
    if (prompt[k] < 0 || static_cast<size_t>(prompt[k]) >= vocab)
      throw std::invalid_argument("generate: token id " + std::to_string(prompt[k]) +
                                  " at prompt position " + std::to_string(k) +
                                  " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  std::map<std::string, std::vector<unsigned char>> owned;
  for (const auto& [out, in] : ports.state) {
    owned[in].assign(step.byte_size(in, bound), 0);
    owned[out].assign(step.byte_size(out, bound), 0);
  }
  std::vector<unsigned char>& logits = owned[ports.logits];
  logits.resize(step.byte_size(ports.logits, bound));
  std::vector<int32_t> ids = prompt;
  int32_t position = 0;
  auto buffers = [&]() {
    std::vector<void*> b;
    for (const std::string& n : in_names) {
      if (n == ports.ids)
        b.push_back(ids.data());
      else if (n == ports.position)
        b.push_back(&position);
      else if (owned.count(n))
        b.push_back(owned.at(n).data());
      else
        b.push_back(const_cast<void*>(inputs.at(n)));
    }
    for (const std::string& n : out_names)
      b.push_back(owned.at(n).data());
    return b;
  };
  Generation g;
  const std::string dtype = step.dtype(ports.logits);
  for (int k = 0; k < new_tokens; ++k) {
    const auto t0 = std::chrono::steady_clock::now();
    try {
      (k > 0 && decode_step ? *decode_step : step).run(buffers(), bound);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("generate: a prompt of " + std::to_string(prompt.size()) +
                                  " tokens and " + std::to_string(new_tokens) + " new (" +
                                  std::to_string(positions) + " positions): " + e.what());
    }
    for (const auto& [out, in] : ports.state)
      owned.at(out).swap(owned.at(in));
    const int32_t next = argmax(dtype, logits.data(), vocab);
    (k == 0 ? g.prefill_seconds : g.decode_seconds) += seconds_since(t0);
    g.tokens.push_back(next);
    if (on_token) on_token(next);
    position += static_cast<int32_t>(ids.size());
    ids.assign(1, next);
    bound[ids_shape[0]] = 1;
  }
  return g;
}

}  // namespace kiln
