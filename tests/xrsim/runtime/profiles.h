// The interaction profiles the simulated runtime knows, and how a binding path of one of them reads
// the scripted inputs. Pure functions over constant tables.
#pragma once

#include "tests/xrsim/runtime/script.h"

#include <string>

namespace xrsim {

// Kinds of value an action can read from a binding.
enum class ValueKind { kBoolean, kFloat, kVector2, kPose, kHaptic };

// True when `profile` is one of the supported interaction profile paths.
bool known_profile(const std::string& profile);

// True when `binding` (e.g. /user/hand/right/input/squeeze/value or …/input/squeeze) names an input
// identifier (and component, if given) or the haptic output of `profile`.
bool profile_accepts(const std::string& profile, const std::string& binding);

// The hand of a binding path: 0 left, 1 right, -1 neither.
int binding_hand(const std::string& binding);

// Whether a binding can feed an action of `kind` at all (a pose action needs a pose source, a
// haptic action an output, the others an input that is not a pose).
bool binding_fits(const std::string& profile, const std::string& binding, ValueKind kind);

// Reads a binding for an action of a value kind. `out` gets 1 value (boolean as 0/1, float) or 2
// (vector2). Returns false when the binding has nothing of that kind.
bool read_binding(const std::string& profile, const std::string& binding, ValueKind kind, const ScriptState& s,
                  float out[2]);

}  // namespace xrsim
