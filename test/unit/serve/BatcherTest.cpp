//===- BatcherTest.cpp - tfm-serve's batching policy ------------*- C++ -*-===//
//
// The queue of one model (which sentences form a batch, when it is ready)
// and the executor (results in order, failures, cancelled jobs, draining at
// stop), with a fake model that "translates" a sentence into its source.
//
//===----------------------------------------------------------------------===//

#include "tools/serve/Batcher.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <stdexcept>

using namespace tfm_serve;
using namespace std::chrono_literals;

namespace {

tfm_search_options greedy() {
  tfm_search_options o{};
  o.beam_size = o.n_best = 1;
  o.max_length = 16;
  return o;
}

/// A job of sentences whose sources have these lengths (ids: the length).
std::shared_ptr<Job> jobOf(std::vector<size_t> lengths,
                           tfm_search_options search = greedy()) {
  std::vector<Sentence> sentences;
  for (size_t length : lengths)
    sentences.push_back({std::vector<int32_t>(length, int32_t(length)), {}});
  return std::make_shared<Job>(search, std::move(sentences));
}

void echo(const tfm_search_options &, const std::vector<const Sentence *> &in,
          std::vector<Hypotheses> &out) {
  for (size_t i = 0; i < in.size(); ++i)
    out[i] = {{in[i]->source}, {0.0f}};
}

BatchLimits limits(size_t sentences, size_t tokens = 1000,
                   size_t queued = 100) {
  BatchLimits l;
  l.maxSentences = sentences;
  l.maxTokens = tokens;
  l.maxQueued = queued;
  l.wait = 5ms;
  return l;
}

} // namespace

TEST(ServeBatcher, ShortRequestsInterleaveWithALongOne) {
  ModelQueue queue(limits(4), echo);
  auto longJob = jobOf(std::vector<size_t>(10, 3));
  ASSERT_TRUE(queue.push(longJob));
  std::vector<std::shared_ptr<Job>> shorts = {jobOf({2}), jobOf({2}),
                                              jobOf({2})};
  for (auto &job : shorts)
    ASSERT_TRUE(queue.push(job));
  ModelQueue::Batch batch = queue.take();
  ASSERT_EQ(batch.items.size(), 4u);
  size_t fromLong = 0;
  for (auto &item : batch.items)
    fromLong += item.first == longJob;
  EXPECT_EQ(fromLong, 1u); // the three short ones are all in the first batch
  EXPECT_EQ(queue.queued(), 9u);
}

// More waiting requests than a batch holds: the oldest and those closest
// to its length, so that a batch pads little; the others stay first in
// line and form the next batch.
TEST(ServeBatcher, CrowdedQueuesBatchSimilarLengths) {
  ModelQueue queue(limits(4), echo);
  std::map<const Job *, size_t> lengthOf;
  for (size_t length : {5, 40, 41, 6, 39, 5, 42, 7}) {
    std::shared_ptr<Job> job = jobOf({length});
    lengthOf[job.get()] = length;
    ASSERT_TRUE(queue.push(job));
  }
  auto lengths = [&](const ModelQueue::Batch &batch) {
    std::vector<size_t> out;
    for (auto &item : batch.items)
      out.push_back(lengthOf[item.first.get()]);
    return out;
  };
  EXPECT_EQ(lengths(queue.take()), (std::vector<size_t>{5, 5, 6, 7}));
  EXPECT_EQ(lengths(queue.take()), (std::vector<size_t>{39, 40, 41, 42}));
  EXPECT_EQ(queue.queued(), 0u);
}

// A request of unusual length is passed over at most until it is the
// oldest waiting.
TEST(ServeBatcher, AnUnusualLengthWaitsOnlyUntilItIsOldest) {
  ModelQueue queue(limits(2), echo);
  auto odd = jobOf({50});
  ASSERT_TRUE(queue.push(jobOf({5})));
  ASSERT_TRUE(queue.push(odd));
  ASSERT_TRUE(queue.push(jobOf({5})));
  ModelQueue::Batch first = queue.take();
  ASSERT_EQ(first.items.size(), 2u);
  EXPECT_NE(first.items[0].first, odd);
  EXPECT_NE(first.items[1].first, odd);
  for (int i = 0; i < 3; ++i)
    ASSERT_TRUE(queue.push(jobOf({5})));
  ModelQueue::Batch second = queue.take();
  ASSERT_EQ(second.items.size(), 2u);
  EXPECT_TRUE(second.items[0].first == odd || second.items[1].first == odd);
}

TEST(ServeBatcher, BatchesAreSortedByLengthAndKeepTheTokenBudget) {
  ModelQueue queue(limits(8, /*tokens=*/10), echo);
  ASSERT_TRUE(queue.push(jobOf({4, 1, 3})));
  ModelQueue::Batch batch = queue.take();
  // 3 sentences padded to 4 tokens would be 12 > 10: two of them.
  ASSERT_EQ(batch.items.size(), 2u);
  EXPECT_EQ(batch.items[0].second, 1u); // length 1 first
  EXPECT_EQ(batch.items[1].second, 0u);
  EXPECT_EQ(queue.take().items.size(), 1u);
}

TEST(ServeBatcher, OnlySentencesOfTheSameOptionsShareABatch) {
  ModelQueue queue(limits(8), echo);
  tfm_search_options beam = greedy();
  beam.beam_size = 4;
  ASSERT_TRUE(queue.push(jobOf({2, 2})));
  ASSERT_TRUE(queue.push(jobOf({2}, beam)));
  EXPECT_EQ(queue.take().items.size(), 2u);
  ModelQueue::Batch second = queue.take();
  ASSERT_EQ(second.items.size(), 1u);
  EXPECT_EQ(second.search.beam_size, 4);
}

TEST(ServeBatcher, AFullQueueRefusesARequest) {
  ModelQueue queue(limits(8, 1000, /*queued=*/3), echo);
  EXPECT_TRUE(queue.push(jobOf({2, 2})));
  EXPECT_FALSE(queue.push(jobOf({2, 2})));
  EXPECT_TRUE(queue.push(jobOf({2})));
}

TEST(ServeBatcher, AnIdleModelRunsAtOnceAndABusyOneWaitsBriefly) {
  ModelQueue queue(limits(4), echo);
  Clock::time_point now = Clock::now(), wakeAt = Clock::time_point::max();
  ASSERT_TRUE(queue.push(jobOf({2})));
  EXPECT_TRUE(queue.ready(now, wakeAt)); // idle: at once
  queue.take();
  queue.ran(3, now); // a batch of 3 just ended
  ASSERT_TRUE(queue.push(jobOf({2})));
  EXPECT_FALSE(queue.ready(now + 1ms, wakeAt)); // waits for more
  EXPECT_EQ(wakeAt, now + 5ms);
  EXPECT_TRUE(queue.ready(now + 5ms, wakeAt)); // the window closed
  ASSERT_TRUE(queue.push(jobOf({2, 2})));
  EXPECT_TRUE(queue.ready(now + 1ms, wakeAt)); // as many as the last batch
}

// A batch of 2 left 2 waiting: a full batch waits, yet the queue gives the
// 2 answered clients the window to send again, so that 4 are chosen from.
TEST(ServeBatcher, ACrowdedQueueWaitsForTheAnsweredClients) {
  ModelQueue queue(limits(2), echo);
  Clock::time_point now = Clock::now(), wakeAt = Clock::time_point::max();
  for (size_t length : {3, 9, 8, 4})
    ASSERT_TRUE(queue.push(jobOf({length})));
  queue.take();
  queue.ran(2, now);
  EXPECT_EQ(queue.queued(), 2u);
  EXPECT_FALSE(queue.ready(now + 1ms, wakeAt)); // a full batch, no choice
  EXPECT_EQ(wakeAt, now + 5ms);
  ASSERT_TRUE(queue.push(jobOf({2})));
  EXPECT_FALSE(queue.ready(now + 1ms, wakeAt));
  ASSERT_TRUE(queue.push(jobOf({7})));
  EXPECT_TRUE(queue.ready(now + 1ms, wakeAt)); // both clients came back
}

TEST(ServeBatcher, TheExecutorAnswersEachJobInOrder) {
  Executor executor(nullptr, nullptr);
  size_t model = executor.addModel(limits(3), echo);
  executor.start();
  std::vector<std::shared_ptr<Job>> jobs;
  for (size_t i = 1; i <= 5; ++i) {
    jobs.push_back(jobOf({i, i + 1, i + 2}));
    ASSERT_TRUE(executor.submit(model, jobs.back()));
  }
  for (size_t i = 1; i <= 5; ++i) {
    auto &job = jobs[i - 1];
    ASSERT_EQ(job->wait(Clock::now() + 10s), Job::State::Done);
    for (size_t k = 0; k < 3; ++k)
      EXPECT_EQ(job->results()[k].tokens[0].size(), i + k);
  }
  executor.stop();
}

TEST(ServeBatcher, AFailedBatchFailsItsJobsAndServingGoesOn) {
  std::atomic<int> calls{0};
  BatchRunner flaky = [&](const tfm_search_options &s,
                          const std::vector<const Sentence *> &in,
                          std::vector<Hypotheses> &out) {
    if (calls++ == 0)
      throw std::runtime_error("the logits are not finite");
    echo(s, in, out);
  };
  std::vector<BatchReport> reports;
  Executor executor(nullptr,
                    [&](const BatchReport &r) { reports.push_back(r); });
  size_t model = executor.addModel(limits(1), flaky);
  auto first = jobOf({2, 2}), second = jobOf({3});
  ASSERT_TRUE(executor.submit(model, first));
  ASSERT_TRUE(executor.submit(model, second));
  executor.start();
  EXPECT_EQ(first->wait(Clock::now() + 10s), Job::State::Failed);
  EXPECT_EQ(first->error(), "the logits are not finite");
  EXPECT_EQ(second->wait(Clock::now() + 10s), Job::State::Done);
  executor.stop();
  EXPECT_EQ(executor.queued(model), 0u); // the failed job's rest dropped
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_TRUE(reports[0].failed);
}

TEST(ServeBatcher, ACancelledJobLeavesTheQueueAndStopDrainsTheRest) {
  Executor executor(nullptr, nullptr);
  size_t model = executor.addModel(limits(2), echo);
  auto cancelled = jobOf({2, 2, 2}), kept = jobOf({2, 2, 2});
  ASSERT_TRUE(executor.submit(model, cancelled));
  ASSERT_TRUE(executor.submit(model, kept));
  executor.cancel(model, cancelled);
  EXPECT_EQ(executor.queued(model), 3u);
  executor.start();
  executor.stop(); // answers what was queued before it returns
  EXPECT_EQ(kept->wait(Clock::now()), Job::State::Done);
  EXPECT_EQ(cancelled->wait(Clock::now()), Job::State::Cancelled);
}
