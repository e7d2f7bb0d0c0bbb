#include "tools/kiln/test_subjects.h"

#include <iostream>
#include <sstream>

#include "driver/compare.h"

namespace kiln::cli {

std::vector<Subject> subjects_of(const std::string& path, const Loaded& l, bool one,
                                 bool only_grad) {
  std::vector<Subject> out;
  for (const auto& c : l.file->composites) {
    if (one && c.get() != l.comp) continue;
    bool batched = false;
    for (const Param& p : c->inputs)
      batched |= p.type.batch;
    std::vector<std::vector<int64_t>> batches = c->test.batches;
    if (batches.empty() || !batched) batches = {{}};
    std::vector<std::string> dtypes = {""};
    if (!c->types.empty()) {
      dtypes.clear();
      for (DType d : c->types[0].allowed)
        dtypes.push_back(c->types[0].name + "=" + std::string(dtype_name(d)));
    }
    for (bool grad : {false, true}) {
      if (grad ? !(only_grad || c->test.grad) : only_grad) continue;
      for (const std::string& d : dtypes)
        for (const auto& b : batches)
          out.push_back({path, c.get(), d, b, grad});
    }
  }
  return out;
}

namespace {
std::string batch_str(const std::vector<int64_t>& b) {
  std::string s;
  for (int64_t d : b)
    s += (s.empty() ? "" : ",") + std::to_string(d);
  return "[" + s + "]";
}
}  // namespace

std::string subject_name(const Subject& s, bool with_path) {
  return (with_path ? s.path + ":" : "") + s.comp->name +
         (s.dtype_choice.empty() ? "" : " " + s.dtype_choice) +
         (s.batch.empty() ? "" : " batch " + batch_str(s.batch)) + (s.grad ? " grad" : "");
}

SubjectResult run_subject(const Subject& s, Runtime& rt, const TestSettings& t,
                          const std::function<void(int)>& before_case) {
  SubjectResult r;
  r.cases = static_cast<int>(s.comp->test.case_count());
  try {
    Selection sel;
    sel.attrs = t.attrs;
    sel.rules = t.rules;
    sel.target = s.path + ":" + s.comp->name;
    if (!s.dtype_choice.empty()) sel.dtypes = {s.dtype_choice};
    Loaded l;
    load_selection(sel, l);
    l.batch = s.batch;
    l.settings.batch_rank = static_cast<int>(s.batch.size());
    l.options = lower_options(*l.comp, l.settings);  // the batch rank of this subject
    auto sizes_of = [&](size_t k) {
      SizeBindings sizes = l.comp->test.case_sizes(k);
      for (size_t d = 0; d < l.batch.size(); ++d)
        sizes["batch" + std::to_string(d)] = l.batch[d];
      return sizes;
    };
    SizeBindings first = sizes_of(0);
    Graph g = lower_checked(l, &first, true);
    if (s.grad) {
      try {
        std::vector<std::string> wrt = float_inputs(g);
        if (wrt.empty()) throw UsageError("no float input");
        g = differentiate(g, wrt, l);
      } catch (const std::exception& e) {  // a SpecError or UsageError of this subject
        r.status = SubjectResult::Status::skipped;
        r.problems = {std::string("no gradient (") + e.what() + ")"};
        return r;
      }
    }
    Executable exe(g, rt, compile_options(t.config, 0, rt, l));
    for (int k = 0; k < r.cases; ++k) {
      before_case(k);
      SizeBindings sizes = sizes_of(static_cast<size_t>(k));
      std::string bad;
      try {
        std::vector<Tensor> inputs = random_inputs(g, *l.comp, sizes, t.seed);
        std::vector<Tensor> want = interpret(g, sizes, inputs);
        std::vector<Tensor> got = exe.run(inputs, sizes);
        for (size_t out = 0; out < got.size() && bad.empty(); ++out) {
          Tolerance tol =
              tolerance_for(want[out].dtype, l.comp->test.rtol, l.comp->test.atol, want[out]);
          Comparison c = compare(got[out], want[out], tol);
          if (!c.ok) {
            std::ostringstream m;
            m << "output " << g.outputs[out].name << " element " << c.first_bad << ": got " << c.got
              << ", interpreter " << c.want;
            bad = m.str();
          }
        }
        if (!bad.empty()) {
          std::string at;
          for (const auto& [v, x] : sizes)
            at += (at.empty() ? "" : ",") + v + "=" + std::to_string(x);
          bad = "[" + at + "] " + bad;
        }
      } catch (const std::exception& e) {
        bad = e.what();
      }
      if (bad.empty())
        ++r.ok;
      else
        r.problems.push_back(bad);
    }
  } catch (const SpecError&) {
    throw;
  } catch (const UsageError& e) {
    if (!s.comp->test.sizes.empty()) throw;
    // No test table: nothing binds its sizes. Not a failure of the code.
    r.status = SubjectResult::Status::skipped;
    r.problems = {std::string("no test table (") + e.what() + ")"};
    return r;
  } catch (const std::exception& e) {
    r.status = SubjectResult::Status::cannot_compile;
    r.problems = {e.what()};
    return r;
  }
  r.status = r.ok == r.cases ? SubjectResult::Status::passed : SubjectResult::Status::failed;
  return r;
}

void progress(bool tty, int done, int total, const std::string& what) {
  if (!tty) return;
  constexpr int kWidth = 30;
  int filled = total > 0 ? done * kWidth / total : kWidth;
  std::cout << "\r[" << std::string(filled, '=') << (filled < kWidth ? ">" : "")
            << std::string(kWidth - std::min(filled + 1, kWidth), ' ') << "] " << done << "/"
            << total << " " << what << "\x1b[K" << std::flush;
}

std::vector<Subject> load_subjects(const std::vector<std::string>& targets, bool only_grad,
                                   std::vector<std::unique_ptr<Loaded>>& files) {
  std::vector<Subject> subjects;
  for (const std::string& target : targets) {
    auto [path, only] = split_target(target);
    Loaded& file = *files.emplace_back(std::make_unique<Loaded>());
    file.file = &file.lib.load(path);
    if (file.file->composites.empty()) throw UsageError(path + " holds no composite");
    const bool one = !only.empty();
    if (one)
      file.comp = usage_error_of([&] { return &find_composite(file.lib, *file.file, only); });
    for (Subject& s : subjects_of(path, file, one, only_grad))
      subjects.push_back(std::move(s));
  }
  return subjects;
}

}  // namespace kiln::cli
