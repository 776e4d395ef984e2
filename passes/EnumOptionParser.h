//===- EnumOptionParser.h - Enum options that name their values -*- C++ -*-===//
//
// llvm::cl's parser of an enum option (one declared with cl::values), whose
// error for an unknown value lists the valid ones. llvm::cl's own parser
// says only "Cannot find option named 'x'!", and a tool cannot list the
// values itself: cl::Option keeps them in its typed parser. Pass options
// (Passes.td) use it through KILN_ENUM_OPTION_PARSER next to their enum, so
// that kiln-opt, kilnc and every pipeline string report the same line.
//
//===----------------------------------------------------------------------===//

#ifndef KILN_PASSES_ENUMOPTIONPARSER_H
#define KILN_PASSES_ENUMOPTIONPARSER_H

#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/CommandLine.h"

#include <string>

namespace kiln {

/// The parser llvm::cl::parser<T> is for an enum T, except for the message
/// of an unknown value: "'x' is not a valid value (expected a, b or c)",
/// which llvm::cl prefixes with the tool and the option.
template <typename T>
class EnumOptionParser : public llvm::cl::generic_parser_base {
protected:
  class OptionInfo : public GenericOptionInfo {
  public:
    OptionInfo(llvm::StringRef name, T value, llvm::StringRef helpStr)
        : GenericOptionInfo(name, helpStr), V(value) {}
    llvm::cl::OptionValue<T> V;
  };
  llvm::SmallVector<OptionInfo, 8> Values;

public:
  EnumOptionParser(llvm::cl::Option &option) : generic_parser_base(option) {}

  using parser_data_type = T;

  unsigned getNumOptions() const override { return unsigned(Values.size()); }
  llvm::StringRef getOption(unsigned n) const override {
    return Values[n].Name;
  }
  llvm::StringRef getDescription(unsigned n) const override {
    return Values[n].HelpStr;
  }
  const llvm::cl::GenericOptionValue &
  getOptionValue(unsigned n) const override {
    return Values[n].V;
  }

  /// Returns true on error, as llvm::cl's parsers do.
  bool parse(llvm::cl::Option &option, llvm::StringRef argName,
             llvm::StringRef arg, T &value) {
    llvm::StringRef name = Owner.hasArgStr() ? arg : argName;
    for (const OptionInfo &info : Values)
      if (info.Name == name) {
        value = info.V.getValue();
        return false;
      }
    return option.error("'" + name + "' is not a valid value (expected " +
                        listValues() + ")");
  }

  /// "a, b or c".
  std::string listValues() const {
    std::string list;
    for (size_t i = 0, e = Values.size(); i < e; ++i) {
      if (i > 0)
        list += i + 1 == e ? " or " : ", ";
      list += Values[i].Name.str();
    }
    return list;
  }

  template <typename DT>
  void addLiteralOption(llvm::StringRef name, const DT &value,
                        llvm::StringRef helpStr) {
    Values.push_back(OptionInfo(name, static_cast<T>(value), helpStr));
    llvm::cl::AddLiteralOption(Owner, name);
  }

  void removeLiteralOption(llvm::StringRef name) {
    unsigned n = findOption(name);
    assert(n != Values.size() && "no such value");
    Values.erase(Values.begin() + n);
  }
};

} // namespace kiln

/// Makes EnumOptionParser the parser of every cl option of enum type `T`
/// (ODS pass options name only the type). Use it in the header declaring
/// the type, at global scope, so that no option of T is ever instantiated
/// without it.
#define KILN_ENUM_OPTION_PARSER(T)                                             \
  template <> class llvm::cl::parser<T> : public ::kiln::EnumOptionParser<T> { \
  public:                                                                      \
    parser(::llvm::cl::Option &option)                                         \
        : ::kiln::EnumOptionParser<T>(option) {}                               \
  };

#endif // KILN_PASSES_ENUMOPTIONPARSER_H
