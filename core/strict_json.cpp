// Strict JSON parsing: duplicate keys and excessive nesting refused (see strict_json.h).
#include "core/strict_json.h"

#include <set>

namespace mplan {

using nlohmann::json;

namespace {

struct Frame {
  bool object = false;
  std::set<std::string> keys;
  std::string key;  // the key whose value is being parsed (objects)
};

struct TooDeep {};

std::string dotted(const std::vector<Frame>& stack, const std::string& last) {
  std::string p;
  for (size_t i = 0; i + 1 < stack.size(); ++i) {
    if (stack[i].object)
      p += stack[i].key + ".";
    else
      p += "[].";
  }
  if (!stack.empty() && !stack.back().object) p += "[].";
  return p + last;
}

}  // namespace

std::optional<json> parse_json_strict(const std::string& text, const std::string& what, std::vector<std::string>& problems) {
  std::vector<Frame> stack;
  std::string duplicate;
  auto callback = [&](int /*depth*/, json::parse_event_t ev, json& parsed) -> bool {
    switch (ev) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (stack.size() >= size_t(kMaxJsonDepth)) throw TooDeep{};
        stack.push_back(Frame{ev == json::parse_event_t::object_start, {}, {}});
        break;
      case json::parse_event_t::key: {
        Frame& f = stack.back();
        std::string k = parsed.get<std::string>();
        if (!f.keys.insert(k).second && duplicate.empty()) duplicate = dotted(stack, k);
        f.key = std::move(k);
        break;
      }
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        if (!stack.empty()) stack.pop_back();
        break;
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  json j;
  try {
    j = json::parse(text, callback);
  } catch (const json::exception& e) {
    problems.push_back(what + ": malformed JSON (" + std::string(e.what()) + ")");
    return std::nullopt;
  } catch (const TooDeep&) {
    problems.push_back(what + ": nested deeper than " + std::to_string(kMaxJsonDepth) +
                       " levels; this is not an mplan or Hugging Face document");
    return std::nullopt;
  }
  if (!duplicate.empty()) {
    problems.push_back(what + ": key '" + duplicate + "' is given twice in the same object; keep one (which one " +
                       "counts differs between JSON readers)");
    return std::nullopt;
  }
  return j;
}

std::string dump_json(const json& j, int indent) { return j.dump(indent, ' ', false, json::error_handler_t::replace); }

}  // namespace mplan
