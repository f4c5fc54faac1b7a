// The one CSV reader (core/csv.h): RFC 4180 quoting, line breaks inside fields, BOM, CRLF, empty
// fields, comments, and the error for an unterminated quote.
#include <gtest/gtest.h>

#include "core/csv.h"

using namespace mplan;

namespace {

std::vector<std::vector<std::string>> fields(const std::string& text, const csv::Options& o = {}) {
  auto r = csv::parse(text, "t.csv", o);
  EXPECT_TRUE(r) << (r ? "" : r.error().message());
  std::vector<std::vector<std::string>> out;
  if (r)
    for (const auto& rec : *r) out.push_back(rec.fields);
  return out;
}

using Rows = std::vector<std::vector<std::string>>;

}  // namespace

TEST(Csv, PlainFieldsAndRecords) {
  EXPECT_EQ(fields("a,b,c\n1,2,3\n"), (Rows{{"a", "b", "c"}, {"1", "2", "3"}}));
  EXPECT_EQ(fields("a,b\n1,2"), (Rows{{"a", "b"}, {"1", "2"}}));  // no final line break
}

TEST(Csv, QuotedFieldsHoldCommasAndEscapedQuotes) {
  EXPECT_EQ(fields("name,notes\nx,\"a, b\"\ny,\"say \"\"hi\"\"\"\n"),
            (Rows{{"name", "notes"}, {"x", "a, b"}, {"y", "say \"hi\""}}));
  EXPECT_EQ(fields("\"\"\"\"\n"), (Rows{{"\""}}));  // a field that is one quote
}

TEST(Csv, LineBreaksInsideQuotedFieldsAndLineNumbers) {
  auto r = csv::parse("a,b\n\"two\nlines\",x\n\"crlf\r\ninside\",y\nlast,z\n", "t.csv");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[1].fields[0], "two\nlines");
  EXPECT_EQ((*r)[2].fields[0], "crlf\r\ninside");
  EXPECT_EQ((*r)[1].line, 2);
  EXPECT_EQ((*r)[2].line, 4);
  EXPECT_EQ((*r)[3].line, 6);  // the record after two fields with a line break each
}

TEST(Csv, ByteOrderMarkAndCrlf) {
  EXPECT_EQ(fields("\xEF\xBB\xBFstep,loss\r\n1,2.5\r\n2,2.4\r\n"), (Rows{{"step", "loss"}, {"1", "2.5"}, {"2", "2.4"}}));
  EXPECT_EQ(fields("a\rb\r"), (Rows{{"a"}, {"b"}}));  // old Mac line ends
}

TEST(Csv, EmptyFieldsStayEmptyAndBlankLinesAreSkipped) {
  EXPECT_EQ(fields("a,,c\n,,\n\n  \n\"\",x,\n"), (Rows{{"a", "", "c"}, {"", "", ""}, {"", "x", ""}}));
}

TEST(Csv, CommentLinesOnlyWhenAsked) {
  csv::Options o;
  o.comment = '#';
  EXPECT_EQ(fields("# a comment, with \"a quote\nstep\n  # indented\n1\n", o), (Rows{{"step"}, {"1"}}));
  EXPECT_EQ(fields("#x\n1\n"), (Rows{{"#x"}, {"1"}}));
}

TEST(Csv, QuoteInsideUnquotedFieldIsOrdinaryAndTextAfterClosingQuoteIsKept) {
  EXPECT_EQ(fields("5\" disk,\"ab\"c\n"), (Rows{{"5\" disk", "abc"}}));
}

TEST(Csv, UnterminatedQuoteNamesTheLine) {
  auto r = csv::parse("a,b\n1,2\n3,\"open\nstill open\n", "runs.csv");
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message().find("runs.csv: line 3"), std::string::npos) << r.error().message();
  EXPECT_NE(r.error().message().find("not closed"), std::string::npos);
}
