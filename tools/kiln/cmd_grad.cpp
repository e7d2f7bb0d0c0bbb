// `kiln grad FILE:COMPOSITE --wrt x,w`: the backward composite of a composite (autodiff/,
// docs/autodiff.md), printed as a spec Kiln loads again; with --check, checked against central
// finite differences on the interpreter at the composite's first test case instead.
#include <cstdio>
#include <fstream>
#include <iostream>

#include "autodiff/grad_check.h"
#include "ir/graph_spec.h"
#include "tools/kiln/commands.h"
#include "tools/kiln/session.h"

namespace kiln::cli {

namespace {

struct GradOptions {
  Selection sel;
  std::vector<std::string> wrt;
  std::string test, output, format = "spec", save = "recompute";
  bool check = false;
  double eps = 1e-6, rtol = 1e-5, atol = 1e-7;
};

/** The test table of the backward composite: the forward's first case and its input ranges. */
std::string test_table(const Loaded& l, const SizeBindings& sizes) {
  std::string s, r;
  for (const auto& [k, v] : sizes)
    s += (s.empty() ? "" : ", ") + k + " = " + std::to_string(v);
  for (const auto& [name, range] : l.comp->test.ranges) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%s = [%.17g, %.17g]", name.c_str(), range.first, range.second);
    r += (r.empty() ? "" : ", ") + std::string(buf);
  }
  return "{ sizes = { " + s + " }" + (r.empty() ? "" : ", range = { " + r + " }") + " }";
}

int check(const Graph& forward, const Backward& backward, const GradOptions& o, Loaded& l,
          const SizeBindings& sizes) {
  std::vector<Tensor> inputs = random_inputs(forward, *l.comp, sizes, 1);
  GradCheckOptions opt{o.eps, o.rtol, o.atol};
  bool ok = true;
  for (const GradCheck& c : check_gradient(forward, backward, o.wrt, sizes, inputs, opt)) {
    std::printf(
        "d%s: %s (largest difference %.3g at element %zu: backward %.10g, finite "
        "difference %.10g)\n",
        c.input.c_str(), c.ok ? "ok" : "MISMATCH", c.max_error, c.worst, c.analytic, c.numeric);
    ok = ok && c.ok;
  }
  return ok ? Exit::ok : Exit::test_failed;
}

int grad(const GradOptions& o) {
  Loaded l;
  load_selection(o.sel, l);
  SizeBindings sizes = bind_sizes(l, o.test);
  Graph forward = lower_checked(l, &sizes, true);
  Backward backward = differentiate(forward, o.wrt, l, parse_grad_save(o.save));
  if (o.check) return check(forward, backward, o, l, sizes);
  if (o.format == "text") {
    if (!backward.saved.empty()) std::cout << graph_to_text(backward.forward) << "\n";
    std::cout << graph_to_text(backward.graph);
    return Exit::ok;
  }
  std::string wrt, saved;
  for (const std::string& w : o.wrt)
    wrt += (wrt.empty() ? "" : ", ") + w;
  for (const std::string& s : backward.saved)
    saved += (saved.empty() ? "" : ", ") + s;
  std::string doc = "Gradient of " + o.sel.target + " with respect to " + wrt + ".";
  std::string text = "# kiln grad " + o.sel.target + "\n";
  if (!backward.saved.empty()) {
    // the forward pass that gives the saved values, then the backward composite that takes them
    std::string fwd_doc = o.sel.target + " with the values its gradient saves (" + saved +
                          ") as outputs after its own.";
    text += graph_to_spec(backward.forward, {fwd_doc, test_table(l, sizes)}) + "\n";
    doc = "Gradient of " + o.sel.target + " with respect to " + wrt + ", taking " + saved +
          " from " + backward.forward.name + ".";
  }
  text += graph_to_spec(backward.graph, {doc, test_table(l, sizes)});
  if (o.output.empty()) {
    std::cout << text;
    return Exit::ok;
  }
  std::ofstream file(o.output, std::ios::binary);
  file << text;
  if (!file.flush()) throw UsageError("cannot write '" + o.output + "'");
  return Exit::ok;
}

}  // namespace

void add_grad_command(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "grad", "Print the backward composite of a composite as a spec (docs/autodiff.md)");
  auto o = std::make_shared<GradOptions>();
  cmd->add_option("target", o->sel.target, "FILE:COMPOSITE")->required();
  cmd->add_option("--wrt", o->wrt, "The float inputs to differentiate with respect to, e.g. x,w")
      ->required()
      ->delimiter(',');
  cmd->add_option("--dtype", o->sel.dtypes, "Type variable choice, e.g. T=f64");
  cmd->add_option("--attr", o->sel.attrs, "Attribute values, e.g. alpha=0.2");
  cmd->add_option("--batch", o->sel.batch, "Batch dimensions, e.g. 3,5");
  cmd->add_option("--test", o->test,
                  "Size bindings of the test table printed (and of --check), e.g. N=7 "
                  "(default: the composite's first test case)");
  cmd->add_flag("--check", o->check,
                "Instead of printing, compare the gradient with central finite differences on "
                "the interpreter (use --dtype T=f64); exit 3 on a mismatch");
  cmd->add_option("--eps", o->eps, "--check: the finite-difference step")->capture_default_str();
  cmd->add_option("--rtol", o->rtol, "--check: relative tolerance")->capture_default_str();
  cmd->add_option("--atol", o->atol, "--check: absolute tolerance")->capture_default_str();
  cmd->add_option("--save", o->save,
                  "What the backward composite takes from the forward pass: recompute (nothing), "
                  "stats (reductions no larger than an input or output, such as row statistics) "
                  "or all (every computed value it reads); with saved values the spec also has "
                  "the forward composite that outputs them (docs/autodiff.md)")
      ->check(CLI::IsMember({"recompute", "stats", "all"}))
      ->capture_default_str();
  cmd->add_option("--format", o->format,
                  "spec: the backward composite as a TOML spec; text: its graph as `kiln show` "
                  "prints one")
      ->check(CLI::IsMember({"spec", "text"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", o->output, "Write the spec to this file");
  cmd->callback([o, &exit_code] { exit_code = grad(*o); });
}

}  // namespace kiln::cli
