// A long answer rendered as Markdown goes into the chat view in pieces, one event-loop turn each: laying out
// thousands of characters at once holds the GUI thread for tens of milliseconds on a slow CPU.
#pragma once

#include <QList>
#include <QTextDocumentFragment>

class QTextCursor;
class QTextDocument;

namespace forja::ui {

// `doc` (Markdown already parsed) cut into pieces of about `chars` characters: between blocks of the top
// frame (never inside a table) where no list goes on across the cut (its numbering would restart), and
// inside a paragraph longer than two pieces, after a space.
QList<QTextDocumentFragment> markdown_pieces(const QTextDocument& doc, int chars);

// Inserts piece `index` at the cursor. Inserted in order at the same place, the pieces give what inserting
// the whole document's fragment gives.
void insert_markdown_piece(QTextCursor& c, const QList<QTextDocumentFragment>& pieces, qsizetype index);

}  // namespace forja::ui
