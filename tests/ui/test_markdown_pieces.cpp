// The chat view's piecewise Markdown insertion (markdown_pieces.h) against inserting the whole answer at
// once: the same document, whatever the cut, for headings, lists that would be split, code, tables, quotes,
// and a paragraph long enough to be cut inside.
#include <QTextCursor>
#include <QTextDocument>
#include <QtTest>

#include "markdown_pieces.h"

namespace {

constexpr auto kMarkdown =
    QTextDocument::MarkdownFeatures(QTextDocument::MarkdownDialectGitHub) | QTextDocument::MarkdownNoHTML;

// A chat view's document up to an answer: a header line, then the empty block the answer starts in.
void conversation_head(QTextDocument& doc) {
  QTextCursor c(&doc);
  QTextCharFormat bold;
  bold.setFontWeight(QFont::Bold);
  c.insertText(QStringLiteral("Assistant"), bold);
  QTextBlockFormat body;
  body.setRightMargin(48);
  c.insertBlock(body, QTextCharFormat());
}

QString whole(const QString& markdown) {
  QTextDocument answer, view;
  answer.setMarkdown(markdown, kMarkdown);
  conversation_head(view);
  QTextCursor c(&view);
  c.movePosition(QTextCursor::End);
  c.insertFragment(QTextDocumentFragment(&answer));
  return view.toHtml();
}

QString in_pieces(const QString& markdown, int chars, qsizetype* count) {
  QTextDocument answer, view;
  answer.setMarkdown(markdown, kMarkdown);
  const QList<QTextDocumentFragment> pieces = forja::ui::markdown_pieces(answer, chars);
  *count = pieces.size();
  conversation_head(view);
  for (qsizetype i = 0; i < pieces.size(); ++i) {
    QTextCursor c(&view);  // a fresh cursor each time, as each piece comes in an event-loop turn of its own
    c.movePosition(QTextCursor::End);
    forja::ui::insert_markdown_piece(c, pieces, i);
  }
  return view.toHtml();
}

}  // namespace

class TestMarkdownPieces : public QObject {
  Q_OBJECT

 private Q_SLOTS:
  void piecesGiveTheWholeAnswer_data() {
    QTest::addColumn<QString>("markdown");
    QTest::addColumn<int>("min_pieces");  // at a cut after every block
    QTest::newRow("paragraphs") << QStringLiteral(
                                       "First paragraph, *emphasis*.\n\nSecond, **bold**.\n\nThird.")
                                << 3;
    QTest::newRow("heading first") << QStringLiteral("# Title\n\nText under it.\n\n## Part\n\nMore text.")
                                   << 4;
    QTest::newRow("code first") << QStringLiteral(
                                       "```cpp\nint main() {\n  return 0;\n}\n```\n\nAfter the code.")
                                << 2;
    QTest::newRow("ordered list kept whole")
        << QStringLiteral("Steps:\n\n1. one\n2. two\n3. three\n4. four\n\nDone.") << 3;
    QTest::newRow("nested lists and quotes")
        << QStringLiteral("- a\n  - a.1\n  - a.2\n- b\n\n> quoted\n> lines\n\n> another quote\n\nend") << 3;
    QTest::newRow("table") << QStringLiteral(
                                  "Before.\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n| 3 | 4 |\n\nAfter.")
                           << 2;
    QTest::newRow("mixed scripts")
        << QStringLiteral("Olá, você está bem?\n\n日本語の文。\n\n`code` and text\n\n---\n\nالنص العربي")
        << 4;
    QString paragraph;
    for (int i = 0; i < 200; ++i)
      paragraph += QStringLiteral("palavra *ênfase* `código` 日本 😀 **forte** %1 ").arg(i);
    QTest::newRow("one long paragraph") << paragraph + QStringLiteral("\n\n1. a\n2. b") << 100;
    QString long_answer;
    for (int i = 0; i < 60; ++i)
      long_answer +=
          QStringLiteral("Paragraph %1 with `inline code`, a [link](https://example.org) and text.\n\n")
              .arg(i);
    long_answer += QStringLiteral("1. last\n2. list\n");
    QTest::newRow("long answer") << long_answer << 60;
  }
  void piecesGiveTheWholeAnswer() {
    QFETCH(QString, markdown);
    QFETCH(int, min_pieces);
    const QString expected = whole(markdown);
    for (int chars : {1, 40, 1500, 1 << 30}) {
      qsizetype count = 0;
      QCOMPARE(in_pieces(markdown, chars, &count), expected);
      if (chars == 1) QVERIFY2(count >= min_pieces, qPrintable(QString::number(count)));
      if (chars == (1 << 30)) QCOMPARE(count, qsizetype{1});
    }
  }
};

QTEST_MAIN(TestMarkdownPieces)
#include "test_markdown_pieces.moc"
