// Python semantics for Jinja values: str(), repr(), truthiness, comparisons and JSON, shared by the renderer.
#pragma once

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

}  // namespace forja::jinja
