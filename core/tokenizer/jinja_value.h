// Python semantics for Jinja values: str(), repr(), truthiness, comparisons and JSON, shared by the renderer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "jinja.h"

namespace forja::jinja {

std::string to_str(const Value& v);                    // Python str(); undefined is ""
std::string to_json(const Value& v, int indent = -1);  // json.dumps(ensure_ascii=False); indent < 0: one line
std::string python_float(double f, bool json);
bool truthy(const Value& v);
bool is_number(const Value& v);  // int, float or bool
double as_double(const Value& v);
bool equal(const Value& a, const Value& b);
int compare(const Value& a, const Value& b);  // throws forja::Error for types Python cannot order
std::string type_name(const Value& v);
// Byte offset of every code point of s, plus s.size() at the end (Python indexes strings by code point).
std::vector<size_t> char_offsets(const std::string& s);
// Budgets of one render, so that a hostile template ends quickly with an error instead of running for hours
// or filling memory. Real chat templates stay far below them: a long conversation renders in some thousands
// of steps to some hundred kilobytes.
inline constexpr uint64_t kMaxRenderSteps = 10'000'000;     // statements, expressions, items and 64-byte runs
inline constexpr size_t kMaxValueBytes = size_t(16) << 20;  // one string (and the output)

// The work of the render running on this thread, in steps; the functions above add what they cost.
uint64_t& render_work();
// Adds n steps; throws forja::Error naming the step budget once the total is over it.
void add_work(uint64_t n);

}  // namespace forja::jinja
