// Rows of cells as aligned text: each column padded to its widest cell (by
// display width, so wide and combining characters line up), two spaces
// between columns, the last column not padded, no trailing blanks. Cells
// must already be sanitised.
#ifndef GPUWARDEN_RENDER_TEXT_TABLE_H_
#define GPUWARDEN_RENDER_TEXT_TABLE_H_

#include <string>
#include <vector>

namespace gw::render {

std::string TextTable(const std::vector<std::vector<std::string>>& rows);

}  // namespace gw::render

#endif  // GPUWARDEN_RENDER_TEXT_TABLE_H_
