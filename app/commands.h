// The nnxr subcommands. Each parses its own Args, prints to stdout (results) and stderr
// (warnings, progress, errors) and returns the process exit code; errors it cannot handle
// propagate as exceptions to main(), which prints them as one line.
#pragma once

#include <optional>
#include <string>

#include "app/args.h"
#include "model/load.h"

namespace nnxr::app {

int inspect_command(Args& args);
int run_command(Args& args);  // needs the runtime (NNXR_RUNTIME)
int render_command(Args& args);  // needs the engine (NNXR_HAVE_ENGINE)
int view_command(Args& args);    // needs the engine (NNXR_HAVE_ENGINE)

// Loads MODEL (a path) or, when absent, the embedded default model. Warnings go to stderr
// unless `quiet`.
model::Graph load_model_arg(const std::optional<std::string>& path, const model::LoadOptions& options, bool quiet);

// Prints the loader's warnings to stderr, one line each.
void print_warnings(const model::Graph& graph);

// Parses repeated `--dim NAME=VALUE` options into LoadOptions::dims.
void parse_dims(Args& args, model::LoadOptions& options);

}  // namespace nnxr::app
