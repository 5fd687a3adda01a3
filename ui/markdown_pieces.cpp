#include "markdown_pieces.h"

#include <QTextBlock>
#include <QTextCursor>
#include <QTextDocument>
#include <QTextFrame>
#include <QTextList>
#include <algorithm>

namespace forja::ui {

namespace {

bool in_root_frame(const QTextBlock& b, const QTextFrame* root) {
  return QTextCursor(b).currentFrame() == root;
}

}  // namespace

QList<QTextDocumentFragment> markdown_pieces(const QTextDocument& doc, int chars) {
  QList<QTextDocumentFragment> pieces;
  const QTextFrame* root = doc.rootFrame();
  int size = 0;
  int lists_end = -1;  // the position of the last item of every list begun so far
  int from = 0;        // where the next piece begins (a block's start, or inside a long block)
  auto cut_at = [&](int to) {
    QTextCursor piece(doc.begin());
    piece.setPosition(from);
    piece.setPosition(to, QTextCursor::KeepAnchor);
    pieces.push_back(QTextDocumentFragment(piece));
  };
  auto cut = [&](const QTextBlock& last) { cut_at(last.position() + last.length() - 1); };
  for (QTextBlock b = doc.begin(); b.isValid(); b = b.next()) {
    // A paragraph longer than a piece goes in several, each ending after a space (never inside a
    // character), the rest of it with the blocks that follow.
    if (b.length() / 2 > chars && b.textList() == nullptr && b.position() >= lists_end &&
        in_root_frame(b, root)) {
      const QString text = b.text();
      for (qsizetype at = chars; at + chars < text.size(); at += chars) {
        qsizetype space = at;
        while (space < text.size() && !text[space].isSpace()) ++space;
        if (space + chars >= text.size()) break;
        cut_at(b.position() + static_cast<int>(space) + 1);
        from = b.position() + static_cast<int>(space) + 1;
        at = space + 1;
      }
    }
    size += b.length();
    if (const QTextList* list = b.textList())
      lists_end = std::max(lists_end, list->item(list->count() - 1).position());
    const QTextBlock next = b.next();
    if (!next.isValid()) {
      cut(b);
      break;
    }
    // A list may run on past blocks of other lists (nested ones) but never across a cut.
    if (size >= chars && b.position() >= lists_end && in_root_frame(b, root) && in_root_frame(next, root)) {
      cut(b);
      // The next piece begins with the separator before its first block, so that inserted after this one it
      // starts that block with all of its format (a list item's list included), as inserting the whole would.
      from = next.position() - 1;
      size = 0;
    }
  }
  return pieces;
}

void insert_markdown_piece(QTextCursor& c, const QList<QTextDocumentFragment>& pieces, qsizetype index) {
  c.insertFragment(pieces[index]);
}

}  // namespace forja::ui
