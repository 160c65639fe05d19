//===- OutputRows.h - The output projection's rows for a batch --*- C++ -*-===//
//
// Which rows of the output projection a batch's decode_step computes, and
// how the logits' columns map to tokens. Without a shortlist, every row
// of the vocabulary: column c is token c, the weights file's own panels.
// With one, the rows of the batch's candidate tokens (Shortlist.h): their
// panels copied out of the file's once for all the batch's steps, column
// c is the c-th candidate, and a token outside them has no column.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_RUNTIME_OUTPUTROWS_H
#define TFM_RUNTIME_OUTPUTROWS_H

#include "runtime/src/Buffer.h"
#include "runtime/src/Model.h"
#include "tfm/abi/Panels.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace tfm_runtime {

class OutputRows {
public:
  /// Every row of the vocabulary: the weights file's panels and bias.
  void chooseAll(const tfm_model &model);
  /// The rows of `tokens` (sorted, distinct, in the target vocabulary),
  /// their panels and bias copied out of the weights file's.
  void chooseTokens(const tfm_model &model, std::vector<int32_t> tokens);

  /// The logits' row width: the chosen rows, then the last panel's
  /// padding.
  int64_t columns() const { return columnCount; }
  /// How many of the first columns are tokens.
  int64_t tokens() const { return tokenCount; }
  int32_t tokenOf(int64_t column) const {
    return tokenOfColumn.empty() ? int32_t(column) : tokenOfColumn[column];
  }
  /// The column of `token`, or -1 when it is not among the chosen rows.
  int32_t columnOf(int32_t token) const {
    return columnOfToken.empty() ? token : columnOfToken[token];
  }
  /// The columns of `tokens` (sorted: so are the columns), those not
  /// among the chosen rows left out.
  std::vector<int32_t> columnsOf(const std::vector<int32_t> &tokens) const {
    if (columnOfToken.empty())
      return tokens;
    std::vector<int32_t> out;
    for (int32_t t : tokens)
      if (columnOfToken[t] >= 0)
        out.push_back(columnOfToken[t]);
    return out;
  }

  /// decode_step's output_panels and output_bias (ModelInfo.h); the bias
  /// is null when the model has none.
  const void *panels() const { return panelData; }
  int64_t panelsBytes() const { return panelByteCount; }
  const float *bias() const { return biasData; }

private:
  int64_t columnCount = 0, tokenCount = 0;
  // tokenOfColumn[c], columnOfToken[t] (-1: not chosen); both empty when
  // every row is.
  std::vector<int32_t> tokenOfColumn, columnOfToken;
  Buffer chosenPanels, chosenBias;
  const void *panelData = nullptr;
  int64_t panelByteCount = 0;
  const float *biasData = nullptr;
};

inline void OutputRows::chooseAll(const tfm_model &model) {
  tokenOfColumn.clear();
  columnOfToken.clear();
  tokenCount = model.config.target_vocab_size;
  columnCount = model.outputPanelCount * model.outputPanelWidth;
  panelData = model.outputPanels;
  panelByteCount = model.outputPanelCount * model.outputPanelBytes;
  biasData = model.outputBias.size ? model.outputBias.data : nullptr;
}

inline void OutputRows::chooseTokens(const tfm_model &model,
                                     std::vector<int32_t> tokens) {
  tokenOfColumn = std::move(tokens);
  tokenCount = int64_t(tokenOfColumn.size());
  int64_t width = model.outputPanelWidth;
  int64_t panels = (tokenCount + width - 1) / width;
  columnCount = panels * width;
  columnOfToken.assign(model.config.target_vocab_size, -1);
  for (int64_t c = 0; c < tokenCount; ++c)
    columnOfToken[tokenOfColumn[c]] = int32_t(c);
  panelByteCount = panels * model.outputPanelBytes;
  chosenPanels.resize(size_t(panelByteCount) / sizeof(float));
  selectPanelFeatures(model.outputPanels, model.outputPanelCount,
                      model.config.d_model, width, model.outputElements,
                      tokenOfColumn.data(), tokenCount,
                      reinterpret_cast<uint8_t *>(chosenPanels.data));
  panelData = chosenPanels.data;
  biasData = nullptr;
  if (model.outputBias.size) {
    chosenBias.resize(columnCount);
    for (int64_t c = 0; c < columnCount; ++c)
      chosenBias.data[c] =
          c < tokenCount ? model.outputBias.data[tokenOfColumn[c]] : 0.0f;
    biasData = chosenBias.data;
  }
}

} // namespace tfm_runtime

#endif // TFM_RUNTIME_OUTPUTROWS_H
