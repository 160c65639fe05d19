//===- ShapeVerifierTest.cpp - Broadcast shape inference --------*- C++ -*-===//

#include "dialects/Tfm/IR/TfmOps.h"

#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;

static constexpr int64_t kDyn = ShapedType::kDynamic;

class Broadcast : public ::testing::Test {
protected:
  RankedTensorType t(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, Float32Type::get(&context));
  }
  MLIRContext context;
};

TEST_F(Broadcast, AlignsOnTheLastDimension) {
  EXPECT_EQ(tfm::inferBroadcastType(t({kDyn, kDyn, 64}), t({64})),
            t({kDyn, kDyn, 64}));
  EXPECT_EQ(tfm::inferBroadcastType(t({kDyn, kDyn, 64}), t({kDyn, kDyn, 1})),
            t({kDyn, kDyn, 64}));
  EXPECT_EQ(tfm::inferBroadcastType(t({kDyn, 1, 1000}), t({1, 1000})),
            t({kDyn, 1, 1000}));
  EXPECT_EQ(tfm::inferBroadcastType(t({kDyn, 1}), t({})), t({kDyn, 1}));
}

TEST_F(Broadcast, DynamicMeetsStatic) {
  // ? against 1 stays ?; ? against 8 must be 8.
  EXPECT_EQ(tfm::inferBroadcastType(t({kDyn}), t({1})), t({kDyn}));
  EXPECT_EQ(tfm::inferBroadcastType(t({kDyn}), t({8})), t({8}));
}

TEST_F(Broadcast, RejectsMismatch) {
  EXPECT_FALSE(tfm::inferBroadcastType(t({kDyn, 64}), t({32})));
  EXPECT_FALSE(tfm::inferBroadcastType(t({2, 3}), t({3, 3})));
}

TEST(FormatShape, WritesDynamicAsQuestionMark) {
  EXPECT_EQ(tfm::formatShape({kDyn, 8, kDyn, 64}), "[?, 8, ?, 64]");
  EXPECT_EQ(tfm::formatShape({}), "[]");
}
