//===- json.cpp - Kiln's one JSON reader and string escaper ---------------===//

#include "kiln/base/json.h"

#include <cstdio>

namespace kiln::json {

const Value *Value::member(std::string_view key) const {
  for (const auto &[name, value] : members)
    if (name == key)
      return &value;
  return nullptr;
}

bool Value::asUnsigned(uint64_t &out) const {
  if (kind != Kind::Number || text.empty())
    return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    auto digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10)
      return false;
    v = v * 10 + digit;
  }
  out = v;
  return true;
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
public:
  explicit Parser(std::string_view text) : text(text) {}

  bool parseDocument(Value &value, std::string &error) {
    skipSpace();
    if (!parseValue(value, 0))
      return fail(error);
    skipSpace();
    if (pos != text.size()) {
      message = "unexpected characters after the JSON value";
      return fail(error);
    }
    return true;
  }

private:
  std::string_view text;
  size_t pos = 0;
  std::string message;

  bool fail(std::string &error) {
    error = message + " at byte " + std::to_string(pos) + " of the header";
    return false;
  }
  bool setError(std::string m) {
    if (message.empty())
      message = std::move(m);
    return false;
  }
  bool atEnd() const { return pos >= text.size(); }
  void skipSpace() {
    while (!atEnd() && (text[pos] == ' ' || text[pos] == '\t' ||
                        text[pos] == '\n' || text[pos] == '\r'))
      ++pos;
  }
  bool consume(char c) {
    if (atEnd() || text[pos] != c)
      return false;
    ++pos;
    return true;
  }
  bool literal(std::string_view word) {
    if (text.substr(pos, word.size()) != word)
      return setError("invalid literal");
    pos += word.size();
    return true;
  }

  bool parseValue(Value &value, int depth) {
    if (depth > kMaxDepth)
      return setError("JSON nested too deeply");
    if (atEnd())
      return setError("unexpected end of the header");
    switch (text[pos]) {
    case '{':
      return parseObject(value, depth);
    case '[':
      return parseArray(value, depth);
    case '"':
      value.kind = Value::Kind::String;
      return parseString(value.text);
    case 't':
      value.kind = Value::Kind::Bool;
      value.boolean = true;
      return literal("true");
    case 'f':
      value.kind = Value::Kind::Bool;
      value.boolean = false;
      return literal("false");
    case 'n':
      value.kind = Value::Kind::Null;
      return literal("null");
    default:
      return parseNumber(value);
    }
  }

  bool parseObject(Value &value, int depth) {
    value.kind = Value::Kind::Object;
    ++pos; // '{'
    skipSpace();
    if (consume('}'))
      return true;
    while (true) {
      skipSpace();
      if (atEnd() || text[pos] != '"')
        return setError("expected a string key");
      std::string key;
      if (!parseString(key))
        return false;
      if (value.member(key))
        return setError("duplicate key " + quote(key));
      skipSpace();
      if (!consume(':'))
        return setError("expected ':'");
      skipSpace();
      Value member;
      if (!parseValue(member, depth + 1))
        return false;
      value.members.emplace_back(std::move(key), std::move(member));
      skipSpace();
      if (consume('}'))
        return true;
      if (!consume(','))
        return setError("expected ',' or '}'");
    }
  }

  bool parseArray(Value &value, int depth) {
    value.kind = Value::Kind::Array;
    ++pos; // '['
    skipSpace();
    if (consume(']'))
      return true;
    while (true) {
      skipSpace();
      Value element;
      if (!parseValue(element, depth + 1))
        return false;
      value.elements.push_back(std::move(element));
      skipSpace();
      if (consume(']'))
        return true;
      if (!consume(','))
        return setError("expected ',' or ']'");
    }
  }

  bool parseHex4(uint32_t &out) {
    if (text.size() - pos < 4)
      return setError("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text[pos++];
      out <<= 4;
      if (c >= '0' && c <= '9')
        out |= static_cast<uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f')
        out |= static_cast<uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F')
        out |= static_cast<uint32_t>(c - 'A' + 10);
      else
        return setError("invalid \\u escape");
    }
    return true;
  }

  static void appendUtf8(std::string &out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parseString(std::string &out) {
    ++pos; // '"'
    while (true) {
      if (atEnd())
        return setError("unterminated string");
      char c = text[pos++];
      if (c == '"')
        return true;
      if (static_cast<unsigned char>(c) < 0x20)
        return setError("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (atEnd())
        return setError("unterminated string");
      char e = text[pos++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        uint32_t cp;
        if (!parseHex4(cp))
          return false;
        if (cp >= 0xD800 && cp < 0xDC00) {
          // A high surrogate must be followed by a low one.
          uint32_t low;
          if (!consume('\\') || !consume('u') || !parseHex4(low) ||
              low < 0xDC00 || low >= 0xE000)
            return setError("unpaired surrogate in a \\u escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          return setError("unpaired surrogate in a \\u escape");
        }
        appendUtf8(out, cp);
        break;
      }
      default:
        return setError("invalid escape in a string");
      }
    }
  }

  bool parseNumber(Value &value) {
    // JSON grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    size_t start = pos;
    consume('-');
    auto digits = [&] {
      size_t first = pos;
      while (!atEnd() && text[pos] >= '0' && text[pos] <= '9')
        ++pos;
      return pos > first;
    };
    if (atEnd())
      return setError("unexpected end of the header");
    if (text[pos] == '0')
      ++pos;
    else if (!digits())
      return setError("invalid value");
    if (consume('.') && !digits())
      return setError("invalid number");
    if (!atEnd() && (text[pos] == 'e' || text[pos] == 'E')) {
      ++pos;
      if (!consume('+'))
        consume('-');
      if (!digits())
        return setError("invalid number");
    }
    value.kind = Value::Kind::Number;
    value.text = std::string(text.substr(start, pos - start));
    return true;
  }
};

} // namespace

Status parse(std::string_view text, Value &value) {
  value = Value();
  std::string error;
  if (!Parser(text).parseDocument(value, error))
    return invalidArgumentError(error);
  return Status::ok();
}

std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  out += '"';
  return out;
}

} // namespace kiln::json
